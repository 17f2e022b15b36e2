"""Clairvoyant eviction (Belady's MIN at session granularity): evict the session whose next
turn arrives furthest in the future; sessions with no further turn go first. It knows each
stored session's next arrival exactly (the simulation drew the think times), which no real
system does: an upper bound on what eviction can achieve, not shown in the paper. It uses the
same job-queue prefetch as scheduler_aware. With sessions of unequal size MIN is a strong
heuristic, not a proven optimum.
"""
from __future__ import annotations

import heapq

from .base import Placement, StoreView, furthest, register, unpark


@register("belady")
class Belady(Placement):
    prefetches = True

    def __init__(self, store: StoreView) -> None:
        super().__init__(store)
        self.heaps: dict[int, list[tuple[int, int, int]]] = {1: [], 2: []}  # tier -> [(-next arrival, version, session)], lazily invalidated
        # Per tier: with inclusive SSD copies a session can be in both tiers at once.
        self.version = {1: [0] * len(store.where), 2: [0] * len(store.where)}
        self.member = {1: [False] * len(store.where), 2: [False] * len(store.where)}
        self.parked: dict[int, dict[int, list[tuple[int, int, int]]]] = {1: {}, 2: {}}  # tier -> running session -> its entries

    def on_done(self, c: int) -> None:
        for tier in (1, 2):
            unpark(self.heaps[tier], self.parked[tier], c)

    def on_insert(self, tier: int, c: int) -> None:
        self.member[tier][c] = True
        self.version[tier][c] += 1
        heapq.heappush(self.heaps[tier], (-self.store.next_time[c], self.version[tier][c], c))

    def on_resave(self, c: int) -> None:
        # Its next arrival is new: re-key it in every tier that holds it.
        for tier in (1, 2):
            if self.member[tier][c]:
                self.on_insert(tier, c)

    def on_remove(self, tier: int, c: int) -> None:
        self.member[tier][c] = False
        self.version[tier][c] += 1

    def victim(self, tier: int, before: int = -1) -> int:
        store, version = self.store, self.version[tier]
        # Everything at or below the limit is needed no later than the session being prefetched.
        limit = store.next_time[before] if before >= 0 else -1
        return furthest(self.heaps[tier], lambda e: e[1] != version[e[2]], limit, store.running, self.parked[tier])
