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
"""
from __future__ import annotations

from collections.abc import Hashable
from heapq import heappush
from typing import Any

from .base import HeapPolicy, register


@register("belady")
class Belady(HeapPolicy[Hashable]):
    description = ("evicts the block whose next use is farthest, the entering one included (offline, clairvoyant; "
                   "ignores pins: the reference)")
    object_description = ("evicts the object whose next request is furthest away (offline, clairvoyant; the "
                          "object requested is always inserted, as in libCacheSim)")
    needs = frozenset({"next_use"})
    ignores_pins = True

    def __init__(self, next_use: dict[Any, float], **facts: Any) -> None:
        super().__init__()
        self.next_use = next_use  # key -> its next use (shared, kept by the caller)

    def insert(self, b: Hashable) -> None:
        self.resident.add(b)
        heappush(self.heap, (-self.next_use[b], b))

    def touch(self, b: Hashable) -> None:
        heappush(self.heap, (-self.next_use[b], b))

    def stale(self, key: float, b: Hashable) -> bool:
        """An entry is stale once its key left or its next use moved."""
        return b not in self.resident or -key != self.next_use[b]
