"""What every request-trace reader shares: reading a file's bytes with a message that names it,
and numbering object ids 0..k-1 in order of first request (so one trace in two formats gives
the same requests)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..errors import ScenarioError
from ..io import open_regular
from .signatures import BOM as BOM  # read from here by the readers


def read_bytes(path: Path, limit: int = -1) -> bytes:
    """The file's bytes (its first `limit`), or a ScenarioError naming it. A trace must be a
    regular file within kvviz.limits.MAX_TRACE_BYTES: a FIFO or a device is refused at once."""
    with open_regular(path, "trace") as f:
        try:
            return f.read(limit)
        except OSError as e:
            raise ScenarioError(f"cannot read the trace: {e.strerror or e}", str(path)) from None


def first_request_ids(values: np.ndarray) -> np.ndarray:
    """Object ids 0..k-1 numbered in order of first request, from any integer ids: every reader
    numbers objects this way, so one trace in two formats gives the same requests."""
    values = np.asarray(values)
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    _, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.reshape(-1)]


class DenseIds:
    """Object ids as 0..objects-1, chunk by chunk. Integer ids (the usual case) go through numpy,
    twice as fast as a dict of byte strings; digits only and no leading zero, so two different
    strings are never one number ("07", "7"). Any other id, by first request, through a dict."""

    def __init__(self) -> None:
        self.ints: list[np.ndarray] | None = []
        self.index: dict[bytes, int] = {}
        self.dense_chunks: list[np.ndarray] = []

    def add(self, col: list[bytes]) -> None:
        if self.ints is not None:
            joined = b"\n".join(col)
            if joined.replace(b"\n", b"").isdigit() and not re.search(rb"(?:^|\n)0[0-9]", joined) \
                    and max(map(len, col)) < 19:  # fits int64
                self.ints.append(np.fromiter(map(int, col), np.int64, len(col)))
                return
            earlier, self.ints = self.ints, None  # from here on, by dict: earlier ints as their strings
            for arr in earlier:
                self._by_dict([b"%d" % v for v in arr.tolist()])
        self._by_dict(col)

    def _by_dict(self, col: list[bytes]) -> None:
        index = self.index
        index.update(zip(dict.fromkeys(k for k in col if k not in index), range(len(index), len(index) + len(col))))
        self.dense_chunks.append(np.fromiter(map(index.__getitem__, col), np.int64, len(col)))

    def dense(self) -> np.ndarray:
        if self.ints is not None:
            return first_request_ids(np.concatenate(self.ints))
        return np.concatenate(self.dense_chunks)
