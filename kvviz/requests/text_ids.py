"""libCacheSim's plain-text traces: one object id per line, each request 1 byte at the time of
its index, as libCacheSim reads them, so capacities count objects."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ScenarioError
from .common import BOM, DenseIds, read_bytes
from .objects import Requests


def read_txt(path: str | Path) -> Requests:
    """libCacheSim's plain-text trace: one object id per line (surrounding spaces ignored), each
    request 1 byte at the time of its index, as libCacheSim reads it: capacities count objects."""
    path = Path(path)
    data = read_bytes(path).removeprefix(BOM).replace(b"\r\n", b"\n")
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    if not lines:
        raise ScenarioError("empty trace", str(path), "line 1")
    col = [ln.strip() for ln in lines]
    blank = next((n for n, k in enumerate(col, 1) if not k), None)
    if blank:
        raise ScenarioError("an empty line: every line names one object", str(path), f"line {blank}")
    ids = DenseIds()
    for a in range(0, len(col), 1 << 20):
        ids.add(col[a:a + (1 << 20)])
    n = len(col)
    return Requests(ids.dense(), np.ones(n, dtype=np.int64), np.arange(n, dtype=np.float64), str(path))
