"""llm-d's precise prefix-cache routing (the inference scheduler's weighted scorers, our
reading): each instance scores
  routing.prefix_weight × (leading blocks it holds / the request's blocks)      (from its KV events)
+ routing.kv_weight     × (1 − its KV utilisation)                              (running KV / pool)
+ routing.queue_weight  × (max queue − its queue) / (max queue − min queue)     (1 for all when equal)
and the highest score wins (lowest index on ties). The weights are settings; their defaults are
ASSUMPTIONS named in the scenario."""
from __future__ import annotations

from .base import Decision, Router, Routing, View, register


def weighted_pick(v: View, s: Routing, prefix: list[float]) -> int:
    """The instance with the highest weighted score, given each instance's prefix share."""
    q = [v.queue_len(k) for k in range(v.instances)]
    lo, hi = min(q), max(q)
    best: float | None = None
    at = 0
    for k in range(v.instances):
        queue = (hi - q[k]) / (hi - lo) if hi > lo else 1.0
        score = s.prefix_weight * prefix[k] + s.kv_weight * (1.0 - v.kv_utilisation(k)) + s.queue_weight * queue
        if best is None or score > best:
            best, at = score, k
    return at


@register("precise_prefix")
class PrecisePrefix(Router):
    description = "llm-d: weighted prefix-match (what instances hold), KV-utilisation and queue scorers"

    def route(self, j: int) -> Decision:
        v = self.view
        n_blocks = v.blocks_of(j)
        held = v.matches(j)
        i = weighted_pick(v, self.settings, [h / n_blocks if n_blocks else 0.0 for h in held])
        return Decision(i, local_blocks=held[i])
