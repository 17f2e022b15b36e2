"""The Compare tab: a pinned run (A) against the current one (B), timelines and metrics."""
from __future__ import annotations

from ..views.compare import CompareView
from .base import Tab


class CompareTab(Tab):
    name = "compare"
    label = "Compare"

    def make_widget(self):
        return CompareView()

    def toolbar_actions(self):
        return [("Pin as A", "Keep the current result as A in the Compare tab", self.pin)]

    def pin(self):
        """Keep the current run as A, and show the comparison."""
        if self.result is not None:
            self.widget.pin(self.result)
            self._stale = True
            self.ctx.show(self.name)

    def on_new_result(self, result, new_scenario):
        pinned = self.widget.pinned
        if pinned is not None and pinned.scenario.kind != result.scenario.kind:
            self.widget.unpin()  # A and B of different kinds share no lanes and no metrics
        super().on_new_result(result, new_scenario)
