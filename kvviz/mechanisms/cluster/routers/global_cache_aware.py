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

import math

from .base import Decision, Router, register


@register("global_cache_aware")
class GlobalCacheAware(Router):
    description = ("as prefix_affinity, but an instance may fetch the longest cached prefix from a peer when "
                   "best/own match exceeds routing.balancing_threshold (Mooncake Algorithm 1)")

    def route(self, j: int) -> Decision:
        v = self.view
        held = v.matches(j)
        queue = v.queues_ns()
        best_len = max(held)
        if best_len == 0:  # no instance holds a block: each costs its queue + the whole prefill, no fetch
            p0 = v.prefill_ns(j, 0)
            ts = [q + p0 for q in queue]
            return Decision(ts.index(min(ts)), local_blocks=0)  # the smallest, the lowest index on ties
        best = held.index(best_len)  # the longest, the lowest index on ties
        thr = self.settings.balancing_threshold
        prefill: dict[int, float] = {}  # prefill after h blocks, once per distinct h (most instances hold the same)
        pick, pick_t, pick_fetch = 0, math.inf, False
        k = -1
        for h in held:
            k += 1
            fetch = h < best_len and (h == 0 or best_len / h > thr)  # h < best_len: k is not best
            at = best_len if fetch else h
            p = prefill.get(at)
            if p is None:
                p = prefill[at] = v.prefill_ns(j, at)
            t = queue[k] + p
            if t >= pick_t:
                continue  # a fetch only adds time: this instance cannot win (ties go to the lower index)
            if fetch:
                t += v.fetch_ns(j, best, k, h, best_len)
                if t >= pick_t:
                    continue
            pick, pick_t, pick_fetch = k, t, fetch
        if pick_fetch:
            return Decision(pick, best, best_len, held[pick])
        return Decision(pick, local_blocks=held[pick])
