"""Least recently used among the keys with no child resident in this tier (a child: the block
after it in the request that first asked for it), as a radix tree evicts leaves; a key whose
only leaves are pinned cannot go."""
from __future__ import annotations

from collections.abc import Hashable
from heapq import heappush
from typing import Any

from .base import HeapPolicy, register


@register("leaf_lru")
class LeafLru(HeapPolicy[Hashable]):
    description = "evicts the least recently used block with no child block resident (a radix tree's leaves)"
    needs = frozenset({"parent"})

    def __init__(self, parent: dict[Any, Any], **facts: Any) -> None:
        super().__init__()
        self.parent = parent
        self.last: dict[Hashable, int] = {}  # key -> its last use here (a clock)
        self.kids: dict[Hashable, int] = {}  # key -> its children resident here
        self.clock = 0

    def insert(self, b: Hashable) -> None:
        self.resident.add(b)
        par = self.parent.get(b)
        if par is not None:
            self.kids[par] = self.kids.get(par, 0) + 1
        self.touch(b)

    def touch(self, b: Hashable) -> None:  # a use
        self.clock = c = self.clock + 1
        self.last[b] = c
        if not self.kids.get(b):
            heappush(self.heap, (c, b))

    def remove(self, b: Hashable) -> None:
        self.resident.discard(b)
        del self.last[b]
        par = self.parent.get(b)
        if par is not None:
            left = self.kids[par] - 1
            self.kids[par] = left
            if not left and par in self.resident:  # a leaf again
                heappush(self.heap, (self.last[par], par))

    def stale(self, key: float, b: Hashable) -> bool:
        """The victim is the least recently used leaf: an entry is stale once its key left, was
        used since, or is a parent again."""
        return b not in self.resident or self.last.get(b) != key or bool(self.kids.get(b))
