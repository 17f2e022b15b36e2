"""Mooncake's local cache-aware scheduling (FAST'25 §6, Fig. 5 `local cache-aware`): for each
instance, the prefix of the request it holds itself (its own tiers, what its KV events publish),
and the estimated TTFT = queue time + prefill of the unmatched part over the matched part as
history (the roofline's prefill(n after h)); the smallest wins."""
from __future__ import annotations

from .base import Decision, Router, argmin, register


@register("prefix_affinity")
class PrefixAffinity(Router):
    description = "smallest estimated TTFT = queue time + prefill of the part the instance does not hold"

    def route(self, j: int) -> Decision:
        v = self.view
        held = v.matches(j)
        queue = v.queues_ns()
        i = argmin([queue[k] + v.prefill_ns(j, held[k]) for k in range(v.instances)])
        return Decision(i, local_blocks=held[i])
