"""The interface every placement policy implements, and the registry.

A policy sees the store's state read-only (`store.where`, `store.key`, `store.running`, ...) and
answers two questions: which session to evict from a tier, and whether to prefetch from the job
list. The store does all the moving, timing and accounting, so policies stay a few lines long.
"""
from __future__ import annotations

import heapq
from collections import OrderedDict

PLACEMENTS: dict[str, type] = {}

NONE, DRAM, SSD, PREFETCHING = 0, 1, 2, 3  # where a session's KV lives (PREFETCHING: SSD→DRAM in flight)


def register(name: str):
    def deco(cls):
        cls.name = name
        PLACEMENTS[name] = cls
        return cls
    return deco


class Placement:
    name = "?"
    stores = True       # False: nothing is kept between turns (the recompute baseline)
    prefetches = False  # True: the run asks `may_evict_for` and prefetches from the job queue

    def __init__(self, store):
        self.store = store

    # Bookkeeping hooks: a session entered or left a tier, was hit in DRAM, was re-saved after
    # its turn (it is then in DRAM, and its next arrival is known), or its SSD copy was read or
    # extended (inclusive copies only: the copy stays in the tier), or the position of its next
    # job in the look-ahead list changed (`store.key[c]`), or its job ended (`store.running[c]` false).
    def on_insert(self, tier: int, c: int) -> None: ...
    def on_remove(self, tier: int, c: int) -> None: ...
    def on_hit(self, c: int) -> None: ...
    def on_resave(self, c: int) -> None: ...
    def on_access(self, tier: int, c: int) -> None: ...
    def on_key(self, c: int) -> None: ...
    def on_done(self, c: int) -> None: ...  # c's job ended: it may be chosen again

    def victim(self, tier: int, before: int = -1) -> int:
        """A session to evict from `tier`, or -1. With `before` >= 0 (making room to prefetch
        session `before`), only a session needed later than `before` may be chosen."""
        raise NotImplementedError


def furthest(heap: list, stale, floor: float, running: list, parked: dict) -> int:
    """The session on top of a max-heap of (-key, ..., session) entries: its key above `floor`
    and the session not running, or -1. Stale entries (`stale(entry)`) are dropped on the way;
    running ones are parked (`parked[session]`) until `unpark` puts them back when the session's
    job ends. The answer depends only on the set of valid entries, so parking changes no answer;
    it saves popping and pushing back every running session at every call (a running session's
    next job is far ahead: it sits on top)."""
    while heap:
        e = heap[0]
        if stale(e):
            heapq.heappop(heap)
            continue
        if -e[0] <= floor:
            return -1
        c = e[-1]
        if running[c]:
            heapq.heappop(heap)
            if c in parked:
                parked[c].append(e)
            else:
                parked[c] = [e]
            continue
        return c
    return -1


def unpark(heap: list, parked: dict, c: int) -> None:
    """Session c's job ended: its parked entries go back on the heap."""
    if c in parked:
        for e in parked.pop(c):
            heapq.heappush(heap, e)


class OrderedPlacement(Placement):
    """Keeps each tier's sessions in an order (insertion, or recency if `recency`)."""

    recency = False

    def __init__(self, store):
        super().__init__(store)
        self.order: dict[int, OrderedDict[int, None]] = {DRAM: OrderedDict(), SSD: OrderedDict()}

    def on_insert(self, tier, c):
        self.order[tier][c] = None

    def on_remove(self, tier, c):
        del self.order[tier][c]

    def on_hit(self, c):
        if self.recency and c in self.order[DRAM]:
            self.order[DRAM].move_to_end(c)

    def on_resave(self, c):
        self.on_hit(c)

    def on_access(self, tier, c):
        if self.recency and c in self.order[tier]:
            self.order[tier].move_to_end(c)

    def victim(self, tier, before=-1):
        running = self.store.running
        for c in self.order[tier]:  # oldest first
            if not running[c]:
                return c
        return -1
