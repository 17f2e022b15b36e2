"""One tier's eviction order. Each keeps the blocks resident in its tier and names a victim on
request, skipping pinned blocks (those the request being served holds in HBM; `unpin` when it
ends); the engine then removes it.

- lru: least recently used first (a use: a hit served here, an insert, a write that finds the
  block here).
- fifo: the oldest insert first; uses do not reorder.
- leaf_lru: least recently used among blocks with no child block resident in this tier (a child:
  the block after it in the request that first asked for it), as a radix tree evicts leaves; a
  block whose only leaves are pinned cannot go.
- belady: the block whose next request lies furthest in the future (offline: the engine knows
  every block's next use from the trace). A block's next use always follows its parent's, so
  children go before their parents.
"""
from __future__ import annotations

import heapq
from collections import OrderedDict


class Lru:
    reindex = False  # whether a new next use must be told even where the block is not used

    def __init__(self):
        self.order: OrderedDict = OrderedDict()

    def insert(self, b):
        self.order[b] = None

    def touch(self, b):
        self.order.move_to_end(b)

    def remove(self, b):
        del self.order[b]

    def unpin(self):
        pass

    def victim(self, pinned):
        for b in self.order:  # pinned blocks are the most recent: rarely more than one step
            if b not in pinned:
                return b
        return None


class Fifo(Lru):
    def touch(self, b):
        pass


class _Heap:
    """A lazy heap: stale entries are dropped when they reach the top."""

    def __init__(self):
        self.heap: list = []
        self.resident: set = set()
        self.held: list = []  # entries of pinned blocks, back on the heap when the pins go

    def remove(self, b):
        self.resident.discard(b)

    def _valid(self, key, b) -> bool:
        raise NotImplementedError

    def victim(self, pinned):
        heap = self.heap
        while heap:
            key, b = heap[0]
            if b not in self.resident or not self._valid(key, b):
                heapq.heappop(heap)
            elif b in pinned:  # set aside until the request ends: pins only grow within one
                self.held.append(heapq.heappop(heap))
            else:
                return b
        return None

    def unpin(self):
        for e in self.held:
            heapq.heappush(self.heap, e)
        self.held.clear()


class LeafLru(_Heap):
    reindex = False

    def __init__(self, parent: dict):
        super().__init__()
        self.parent = parent
        self.last: dict = {}   # block -> its last use here (a clock)
        self.kids: dict = {}   # block -> its children resident here
        self.clock = 0

    def _use(self, b):
        self.clock += 1
        self.last[b] = self.clock
        if not self.kids.get(b):
            heapq.heappush(self.heap, (self.clock, b))

    def insert(self, b):
        self.resident.add(b)
        par = self.parent.get(b)
        if par is not None:
            self.kids[par] = self.kids.get(par, 0) + 1
        self._use(b)

    def touch(self, b):
        self._use(b)

    def remove(self, b):
        self.resident.discard(b)
        del self.last[b]
        par = self.parent.get(b)
        if par is not None:
            left = self.kids[par] - 1
            self.kids[par] = left
            if not left and par in self.resident:  # a leaf again
                heapq.heappush(self.heap, (self.last[par], par))

    def _valid(self, key, b):
        return self.last.get(b) == key and not self.kids.get(b)


class Belady(_Heap):
    reindex = True

    def __init__(self, next_use: dict):
        super().__init__()
        self.next_use = next_use  # block -> its next position (shared, kept by the engine)

    def insert(self, b):
        self.resident.add(b)
        heapq.heappush(self.heap, (-self.next_use[b], b))

    def touch(self, b):
        heapq.heappush(self.heap, (-self.next_use[b], b))

    def _valid(self, key, b):
        return -key == self.next_use[b]


def make(policy: str, parent: dict, next_use: dict):
    if policy == "lru":
        return Lru()
    if policy == "fifo":
        return Fifo()
    if policy == "leaf_lru":
        return LeafLru(parent)
    return Belady(next_use)
