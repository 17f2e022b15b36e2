"""Load balancing (Mooncake Fig. 5's `load balancing`): the instance whose queue would make the
request wait least, by the router's estimate of the prefill work queued and running there
(view.queue_ns); the cache is not looked at."""
from __future__ import annotations

from .base import Decision, Router, argmin, register


@register("least_loaded")
class LeastLoaded(Router):
    description = "the instance with the least queued prefill work (estimated queue time)"

    def route(self, j: int) -> Decision:
        v = self.view
        i = argmin(v.queues_ns())
        return Decision(i, local_blocks=v.match(i, j))
