"""A workload's lists as every cluster run over it reads them, made once (as the prefix cache's
`engine.prepare`): runs over the same workload (a sweep's routers, a benchmark's repeats) share
them instead of converting the arrays again. Nothing here depends on a scenario's settings; the
compiled caches' arrays (dense block ids) are filled by the first run that builds one."""
from __future__ import annotations

from typing import Any

import numpy as np

from .workload import Work


def parents(work: Work) -> dict[int, int | None]:
    """Each block's parent (leaf_lru reads it): the block before it where it first appears, None
    for the first block of a request."""
    out: dict[int, int | None] = {}
    ids, off = work.ids.tolist(), work.offsets.tolist()
    for r in range(len(off) - 1):
        prev = None
        for b in ids[off[r]:off[r + 1]]:
            if b not in out:
                out[b] = prev
            prev = b
    return out


class Prepared:
    def __init__(self, work: Work) -> None:
        self.work = work
        self.ids: list[int] = work.ids.tolist()
        self.off: list[int] = work.offsets.tolist()
        self.tok: list[int] = work.tokens.tolist()
        self.cum_tokens: list[int] = np.r_[0, np.cumsum(work.tokens)].tolist()  # tokens before each position
        self.inn0: list[int] = work.input_tokens.tolist()
        self.out: list[int] = work.output_tokens.tolist()
        self.times: list[int] = np.rint(work.times_s * 1e9).astype(np.int64).tolist()
        self.distinct_blocks = len(set(self.ids))  # a set of the list: ~10x np.unique's time here
        self.cache_arrays: dict[str, Any] = {}  # the stream's arrays for the compiled caches, made once
        self._parent: dict[int, int | None] | None = None

    def parent(self) -> dict[int, int | None]:
        if self._parent is None:
            self._parent = parents(self.work)
        return self._parent


def prepare(work: Work) -> Prepared:
    return Prepared(work)
