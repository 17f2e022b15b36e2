"""The interface every placement policy implements, and the registry.

A policy sees the store's state read-only (`store.where`, `store.key`, `store.running`, ...) and
answers two questions: which session to evict from a tier, and whether to prefetch from the job
list. The store does all the moving, timing and accounting, so policies stay a few lines long.
"""
from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from ....serving.eviction import Policy, make

PLACEMENTS: dict[str, type[Placement]] = {}
# a heap entry: (-key, ..., session), the last item the session
E = TypeVar("E", bound=tuple[int, ...])
P = TypeVar("P", bound="type[Placement]")

NONE, DRAM, SSD, PREFETCHING = 0, 1, 2, 3  # where a session's KV lives (PREFETCHING: SSD→DRAM in flight)


def register(name: str) -> Callable[[P], P]:
    def deco(cls: P) -> P:
        cls.name = name
        PLACEMENTS[name] = cls
        return cls
    return deco


class StoreView(Protocol):
    """What a policy reads of the store (store.Store), per session c: `where[c]` its tier, `running[c]`,
    `key[c]` its next job's position in the look-ahead list and `next_time[c]` its next arrival
    (INF: none), and the look-ahead window [lo, lo + L_ew)."""
    @property
    def where(self) -> list[int]: ...
    @property
    def running(self) -> list[bool]: ...
    @property
    def key(self) -> list[int]: ...
    @property
    def next_time(self) -> list[int]: ...
    @property
    def lo(self) -> int: ...
    @property
    def L_ew(self) -> int: ...


class Placement:
    name = "?"
    stores = True       # False: nothing is kept between turns (the recompute baseline)
    prefetches = False  # True: the run asks `may_evict_for` and prefetches from the job queue

    def __init__(self, store: StoreView) -> None:
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


def furthest(heap: list[E], stale: Callable[[E], bool], floor: float, running: Sequence[bool],
             parked: dict[int, list[E]]) -> int:
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


def unpark(heap: list[E], parked: dict[int, list[E]], c: int) -> None:
    """Session c's job ended: its parked entries go back on the heap."""
    if c in parked:
        for e in parked.pop(c):
            heapq.heappush(heap, e)


class Running:
    """The running sessions as a set of pins (`c in`), for the eviction policies' `victim`."""
    __slots__ = ("running",)

    def __init__(self, running: Sequence[bool]) -> None:
        self.running = running

    def __contains__(self, c: object) -> bool:
        return isinstance(c, int) and self.running[c]  # sessions are ints (`in` takes any object)


class EvictionPlacement(Placement):
    """A registered eviction policy (kvviz.serving.eviction: written once, one file each) per
    tier, over sessions: entering and leaving a tier are its insert and remove; a hit or a
    re-save a use in DRAM, an SSD read or extension a use there; running sessions are its pins
    (released at `on_done`). A clairvoyant policy (belady) reads each session's next arrival
    (`store.next_time`) as its next use: it is told where a session is resident when that
    changes (at the re-save that follows a turn), not of uses. Sessions on SSD are read on demand
    unless the policy `prefetches`; then a victim made for a prefetch is one needed later than
    the session prefetched (`victim_after`)."""

    policy = "?"  # its name in the registry
    settings: dict[str, Any] = {}  # the policy's settings here (kvviz.serving.eviction.make)

    def __init__(self, store: StoreView) -> None:
        super().__init__(store)
        n = len(store.where)
        where = "AttentionStore's placement"
        self.tiers: dict[int, Policy[int]] = {
            tier: make(self.policy, where, self.settings, next_use=store.next_time) for tier in (DRAM, SSD)}
        self.member = {DRAM: [False] * n, SSD: [False] * n}
        self.pins = Running(store.running)
        self.uses = not self.tiers[DRAM].clairvoyant  # whether uses reorder (not next-use ordered)

    def on_insert(self, tier: int, c: int) -> None:
        if not self.member[tier][c]:
            self.member[tier][c] = True
            self.tiers[tier].insert(c)

    def on_remove(self, tier: int, c: int) -> None:
        self.member[tier][c] = False
        self.tiers[tier].remove(c)

    def on_hit(self, c: int) -> None:
        self.on_access(DRAM, c)

    def on_resave(self, c: int) -> None:
        if self.uses:
            self.on_access(DRAM, c)
            return
        for tier, p in self.tiers.items():  # its next arrival is new: told wherever it is
            if self.member[tier][c]:
                p.touch(c)

    def on_access(self, tier: int, c: int) -> None:
        if self.uses and self.member[tier][c]:
            self.tiers[tier].touch(c)

    def on_done(self, c: int) -> None:
        for p in self.tiers.values():
            p.unpin()

    def victim(self, tier: int, before: int = -1) -> int:
        p = self.tiers[tier]
        # `before` limits only a policy that knows when sessions are needed (the others do not prefetch)
        v = p.victim(self.pins) if before < 0 or self.uses else p.victim_after(self.pins, self.store.next_time[before])
        return -1 if v is None else v
