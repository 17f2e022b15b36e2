"""Uniformly at random (Mooncake Fig. 5's `random` baseline), from `routing.seed`."""
from __future__ import annotations

import numpy as np

from .base import Decision, Router, Routing, View, register


@register("random")
class RandomRouter(Router):
    description = "an instance uniformly at random (routing.seed)"

    def __init__(self, view: View, settings: Routing) -> None:
        super().__init__(view, settings)
        self.rng = np.random.default_rng(settings.seed)

    def route(self, j: int) -> Decision:
        i = int(self.rng.integers(self.view.instances))
        return Decision(i, local_blocks=self.view.match(i, j))
