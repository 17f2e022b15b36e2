"""The Claims tab: the scenario's seed claims beside the model (kvviz claims), verdicts coloured."""
from __future__ import annotations

from ..views.claims import ClaimsView
from .base import Tab


class ClaimsTab(Tab):
    name = "claims"
    label = "Claims"

    def make_widget(self):
        return ClaimsView()

    def unavailable(self, result):
        if getattr(result.scenario, "claim", None):
            return None
        return "This scenario states no [[claim]] tables (the bundled seed scenarios do: kvviz claims)"

    def set_result(self, result):
        self.widget.set_result(result, self.ctx.scenario_data(), self.ctx.scenario_path() or "<scenario>")

    def shutdown(self):
        self.widget.shutdown()
