"""llm-d's approximate prefix-cache routing: the router keeps its own LRU index per instance of
the blocks it sent there (`routing.approx_index_blocks` blocks each), not what the instances
hold; the prefix share is the leading blocks of the request found in that index, then the same
weighted scorers as precise_prefix. The instance's true match is only read for the metrics. The
index's order is kvviz/serving/eviction/lru.py's (the one LRU), unpinned."""
from __future__ import annotations

from ....serving.eviction import NO_PINS, make
from .base import Decision, Router, Routing, View, register
from .precise_prefix import weighted_pick


@register("approximate_prefix")
class ApproximatePrefix(Router):
    description = "llm-d: as precise_prefix, but the prefix match from a router-side LRU of what it sent where"

    def __init__(self, view: View, settings: Routing) -> None:
        super().__init__(view, settings)
        self.index: list[set[int]] = [set() for _ in range(view.instances)]  # the blocks in each index
        self.order = [make("lru", "the approximate router's index") for _ in range(view.instances)]

    def guess(self, k: int, j: int) -> int:
        """Leading blocks of j in the router's index of instance k."""
        idx, n = self.index[k], 0
        for b in self.view.block_ids(j):
            if b not in idx:
                break
            n += 1
        return n

    def route(self, j: int) -> Decision:
        v = self.view
        n_blocks = v.blocks_of(j)
        guessed = [self.guess(k, j) / n_blocks if n_blocks else 0.0 for k in range(v.instances)]
        i = weighted_pick(v, self.settings, guessed)
        return Decision(i, local_blocks=v.match(i, j))

    def routed(self, j: int, d: Decision) -> None:
        idx, lru, cap = self.index[d.instance], self.order[d.instance], self.settings.approx_index_blocks
        for b in self.view.block_ids(j):
            if b in idx:
                lru.touch(b)
            else:
                idx.add(b)
                lru.insert(b)
        while len(idx) > cap:
            v = lru.victim(NO_PINS)
            lru.remove(v)
            idx.discard(v)
