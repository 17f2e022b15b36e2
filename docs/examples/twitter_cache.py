"""Twitter's production cache traces (twitter/cache-trace): one request per line,
`timestamp,key,key size,value size,client id,operation,TTL`, no header. As object requests: an
object is a key, of its key's and value's bytes, at the line's time in seconds."""
from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import ScenarioError
from .base import ReadOptions, TraceFormat, register

if TYPE_CHECKING:
    from ..objects import Requests

OPERATIONS = {b"get", b"gets", b"set", b"add", b"replace", b"cas", b"append", b"prepend", b"delete",
              b"incr", b"decr"}


def claims(path: Path) -> bool:
    """Seven comma-separated fields on the first line, the sixth an operation."""
    from ..common import read_bytes
    first = read_bytes(path, 4096).split(b"\n", 1)[0].strip().split(b",")
    return len(first) == 7 and first[5] in OPERATIONS


def read(path: Path, options: ReadOptions) -> Requests:
    import numpy as np  # here, not at the top: `kvviz --help` lists the formats without numpy

    from ..common import DenseIds, read_bytes
    from ..objects import Requests
    keys: list[bytes] = []
    sizes: list[int] = []
    times: list[float] = []
    for n, line in enumerate(read_bytes(path).splitlines(), 1):
        fields = line.strip().split(b",")
        if len(fields) != 7:
            raise ScenarioError(f"expected 7 comma-separated fields, got {len(fields)}", str(path), f"line {n}")
        try:
            t, size = float(fields[0]), int(fields[2]) + int(fields[3])
        except ValueError:
            raise ScenarioError("timestamp, key size and value size must be numbers", str(path),
                                f"line {n}") from None
        if not math.isfinite(t) or t < 0 or size < 1:
            raise ScenarioError("a time of at least 0 s and a size of at least 1 byte", str(path), f"line {n}")
        keys.append(fields[1])
        sizes.append(size)
        times.append(t)
    if not keys:
        raise ScenarioError("the trace has no requests", str(path), "line 1")
    ids = DenseIds()  # keys numbered 0, 1, ... by first request, as every reader numbers them
    ids.add(keys)
    return Requests(ids.dense(), np.array(sizes, dtype=np.int64), np.array(times, dtype=np.float64), str(path))


register(TraceFormat("twitter", objects=read, claims=claims))
