"""Each instance in turn: the k-th request sent goes to instance k mod N (a rejected request
does not take a turn)."""
from __future__ import annotations

from .base import Decision, Router, Routing, View, register


@register("round_robin")
class RoundRobin(Router):
    description = "each instance in turn"

    def __init__(self, view: View, settings: Routing) -> None:
        super().__init__(view, settings)
        self.turn = 0

    def route(self, j: int) -> Decision:
        i = self.turn % self.view.instances
        return Decision(i, local_blocks=self.view.match(i, j))

    def routed(self, j: int, d: Decision) -> None:
        self.turn += 1
