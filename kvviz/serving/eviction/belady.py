"""Belady's MIN: the victim is the key whose next use lies furthest in the future (never
again = furthest; ties: the smallest key), read from the caller's `next_use` (offline: the
trace says). It ignores pins (`ignores_pins`): it is the clairvoyant reference every policy is
compared with. Where it runs, the entering key is a candidate too (the caller leaves it out
when its own next use is the farthest: MIN with bypass), except where a caller's documented
semantics force insertion (kvviz.replay's object replay, held to libCacheSim's Belady).

In the block prefix cache (kvviz.mechanisms.prefix_cache.engine) a block's next use always
follows its parent's, so children go before their parents; and with chained hashes the blocks
a request has reached are the entering block's ancestors, used again before it, so belady
never picks a pinned block there: a pinned variant would give the same counts on every
hash-chained trace (the conversation trace: equal at 100 to 20,000 blocks), so there is none.

AttentionStore's placement (kvviz.mechanisms.attention_store.placement.belady) runs it per tier
over sessions, with running sessions as pins (the store never evicts a session its job is
reading), `victim_after` to make room for a prefetch, and its own order among equal next uses
(the setting `ties="calls"`: see `Belady.__init__`).
"""
from __future__ import annotations

from collections.abc import Container, Hashable
from heapq import heappush
from math import inf
from typing import Any

from .base import HeapPolicy, register


@register("belady")
class Belady(HeapPolicy[Hashable]):
    description = ("evicts the block whose next use is farthest, the entering one included (offline, clairvoyant; "
                   "ignores pins: the reference)")
    object_description = ("evicts the object whose next request is furthest away (offline, clairvoyant; the "
                          "object requested is always inserted, as in libCacheSim)")
    needs = frozenset({"next_use"})
    settings = frozenset({"ties"})
    ignores_pins = True

    def __init__(self, next_use: dict[Any, float], ties: str = "key", **facts: Any) -> None:
        """`ties`: the order among keys with the same next use. "key": the smallest key first.
        "calls": first the key this tier was told of fewest times (inserted, re-keyed by `touch`,
        removed: each call counts), then the smallest key. "calls" is the order AttentionStore's
        placement has always had (its compiled twin, native/placement.pxi, keeps it too, and the
        recorded results rest on it): there sessions with no further turn tie at "never again",
        and ordering them by key instead changes its results."""
        super().__init__()
        self.next_use = next_use  # key -> its next use (shared, kept by the caller)
        if ties == "calls":
            self.calls: dict[Hashable, int] = {}  # key -> calls about it here (its newest entry's)
            # per instance, so the default order's calls stay as short as they are
            self.insert = self._insert_calls  # type: ignore[method-assign]  # per instance: the "calls" order
            self.touch = self._touch_calls  # type: ignore[method-assign]  # as insert
            self.remove = self._remove_calls  # type: ignore[method-assign]  # as insert
            self.stale = self._stale_calls  # type: ignore[method-assign]  # as insert
        elif ties != "key":
            raise ValueError(f"belady's ties is 'key' or 'calls', not {ties!r}")
        self.ties = ties

    def insert(self, b: Hashable) -> None:
        self.resident.add(b)
        heappush(self.heap, (-self.next_use[b], b))

    def touch(self, b: Hashable) -> None:
        heappush(self.heap, (-self.next_use[b], b))

    def victim_after(self, pinned: Container[Hashable], after: float) -> Hashable | None:
        # the heap's order is -next use (with "calls": (-next use, calls))
        return self.victim(pinned, -after if self.ties == "key" else (-after, -inf))

    def stale(self, key: Any, b: Hashable) -> bool:
        """An entry is stale once its key left or its next use moved."""
        return b not in self.resident or -key != self.next_use[b]

    # --- ties="calls": entries ((-next use, calls), key); an entry is stale once a newer call came
    def _call(self, b: Hashable) -> int:
        self.calls[b] = n = self.calls.get(b, 0) + 1
        return n

    def _insert_calls(self, b: Hashable) -> None:
        self.resident.add(b)
        heappush(self.heap, ((-self.next_use[b], self._call(b)), b))

    def _touch_calls(self, b: Hashable) -> None:
        heappush(self.heap, ((-self.next_use[b], self._call(b)), b))

    def _remove_calls(self, b: Hashable) -> None:
        self.resident.discard(b)
        self._call(b)

    def _stale_calls(self, key: tuple[float, int], b: Hashable) -> bool:
        return key[1] != self.calls[b]
