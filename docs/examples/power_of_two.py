"""Power of two choices: look at two instances drawn at random and send the request to the one
with less queued prefill work (Mitzenmacher's load balancing; a toy beside least_loaded, which
looks at every instance). Saved as kvviz/mechanisms/cluster/routers/power_of_two.py."""
from __future__ import annotations

import numpy as np

from .base import Decision, Router, register


@register("power_of_two")
class PowerOfTwo(Router):
    description = "the less loaded of two instances drawn at random (routing.seed)"

    def __init__(self, view, settings):
        super().__init__(view, settings)
        self.rng = np.random.default_rng(settings.seed)

    def route(self, j: int) -> Decision:
        v = self.view
        a, b = (int(x) for x in self.rng.integers(v.instances, size=2))
        i = a if v.queue_ns(a) <= v.queue_ns(b) else b
        return Decision(i, local_blocks=v.match(i, j))
