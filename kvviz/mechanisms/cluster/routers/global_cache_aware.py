"""Mooncake's global cache-aware scheduling (FAST'25 Algorithm 1, our reading): the longest
prefix any instance holds (best_len at best_instance) is found first; then for each instance
with its own match len_i, if best_len / len_i exceeds `routing.balancing_threshold` (the paper's
kvcache_balancing_threshold; len_i = 0 with best_len > 0 counts as exceeding), the instance is
costed as if it fetched the prefix from best_instance: TTFT = transfer of the missing blocks
(over both instances' links, view.fetch_ns) + queue + prefill after best_len; otherwise as
prefix_affinity (queue + prefill after len_i). The smallest wins; if it is costed with a fetch,
the cluster fetches (the hot prefix is replicated: the blocks enter its tiers as any loaded
block does). The paper leaves the threshold's value open: ASSUMPTION, a setting."""
from __future__ import annotations

from .base import Decision, Router, register


@register("global_cache_aware")
class GlobalCacheAware(Router):
    description = ("as prefix_affinity, but an instance may fetch the longest cached prefix from a peer when "
                   "best/own match exceeds routing.balancing_threshold (Mooncake Algorithm 1)")

    def route(self, j: int) -> Decision:
        v = self.view
        n = v.instances
        held = [v.match(k, j) for k in range(n)]
        best = max(range(n), key=lambda k: (held[k], -k))  # the longest, the lowest index on ties
        best_len = held[best]
        thr = self.settings.balancing_threshold
        pick, pick_t = None, 0.0
        for k in range(n):
            fetch = best_len > 0 and k != best and (held[k] == 0 or best_len / held[k] > thr)
            if fetch:
                d = Decision(k, best, best_len, held[k])
                t = v.fetch_ns(j, best, k, held[k], best_len) + v.queue_ns(k) + v.prefill_ns(j, best_len)
            else:
                d = Decision(k, local_blocks=held[k])
                t = v.queue_ns(k) + v.prefill_ns(j, held[k])
            if pick is None or t < pick_t:
                pick, pick_t = d, t
        return pick
