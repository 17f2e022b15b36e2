"""CachedAttention's scheduler-aware placement (§3.3), driven by the look-ahead job list.

- Fetching: the store prefetches SSD→DRAM the sessions of the next L_pw listed jobs.
- Eviction: sessions whose next job is among the next L_ew listed jobs are protected. Victims
  are first the unprotected sessions, least recently used first (ASSUMPTION: the paper does
  not say how it orders sessions the job list says nothing about); only when every candidate
  is protected, the one whose next job is furthest back in the list (the paper's "tail").

Per tier: unprotected sessions in an LRU-ordered dict; protected ones in a max-heap by list
position; unprotected ones with a known position in a min-heap, moved over as the window's
end (lo + L_ew) passes them. Heap entries are checked against `store.key` when popped, so a
victim costs O(1) amortised plus a log factor, not a walk over the tier.
"""
from __future__ import annotations

import heapq
from collections import OrderedDict

from .base import DRAM, SSD, Placement, StoreView, furthest, register, unpark


@register("scheduler_aware")
class SchedulerAware(Placement):
    prefetches = True

    def __init__(self, store: StoreView) -> None:
        super().__init__(store)
        n = len(store.where)
        self.member = {DRAM: [False] * n, SSD: [False] * n}
        self.unprot: dict[int, OrderedDict[int, None]] = {DRAM: OrderedDict(), SSD: OrderedDict()}  # LRU first
        self.prot: dict[int, list[tuple[int, int]]] = {DRAM: [], SSD: []}      # (-key, c): furthest first
        self.pending: dict[int, list[tuple[int, int]]] = {DRAM: [], SSD: []}   # (key, c) of unprotected sessions with a listed next job
        self.parked: dict[int, dict[int, list[tuple[int, int]]]] = {DRAM: {}, SSD: {}}  # running session -> its prot entries

    def _place(self, tier: int, c: int) -> None:
        k = self.store.key[c]
        if k < self.store.lo + self.store.L_ew:
            self.unprot[tier].pop(c, None)
            heapq.heappush(self.prot[tier], (-k, c))
        else:
            if c not in self.unprot[tier]:
                self.unprot[tier][c] = None
            if k < (1 << 62):
                heapq.heappush(self.pending[tier], (k, c))

    def on_insert(self, tier: int, c: int) -> None:
        self.member[tier][c] = True
        self.unprot[tier].pop(c, None)
        self._place(tier, c)
        if c in self.unprot[tier]:
            self.unprot[tier].move_to_end(c)

    def on_remove(self, tier: int, c: int) -> None:
        self.member[tier][c] = False
        self.unprot[tier].pop(c, None)

    def on_key(self, c: int) -> None:
        for tier in (DRAM, SSD):
            if self.member[tier][c]:
                self._place(tier, c)

    def on_done(self, c: int) -> None:
        for tier in (DRAM, SSD):
            unpark(self.prot[tier], self.parked[tier], c)

    def on_access(self, tier: int, c: int) -> None:
        if c in self.unprot[tier]:
            self.unprot[tier].move_to_end(c)

    def on_hit(self, c: int) -> None:
        self.on_access(DRAM, c)

    def on_resave(self, c: int) -> None:
        self.on_access(DRAM, c)

    def victim(self, tier: int, before: int = -1) -> int:
        store = self.store
        key, running, member = store.key, store.running, self.member[tier]
        limit = store.lo + store.L_ew
        unprot, pending, prot = self.unprot[tier], self.pending[tier], self.prot[tier]
        while pending and pending[0][0] < limit:  # the window's end moved past them
            k, c = heapq.heappop(pending)
            if c in unprot and key[c] == k:
                del unprot[c]
                heapq.heappush(prot, (-k, c))
        for c in unprot:  # unprotected, least recently used first
            if not running[c]:
                return c
        # All protected: the furthest-future one, and for a prefetch only one listed behind it.
        return furthest(prot, lambda e: not member[e[1]] or key[e[1]] != -e[0] or e[1] in unprot,
                        key[before] if before >= 0 else -1, running, self.parked[tier])
