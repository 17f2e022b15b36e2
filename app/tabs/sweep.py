"""The Sweep tab: a metric over a grid of one or two fields, run when asked."""
from __future__ import annotations

from kvviz.mechanisms import mechanisms

from ..views.sweep import SweepView
from .base import Tab


class SweepTab(Tab):
    name = "sweep"
    label = "Sweep"
    on_demand = True

    def make_widget(self):
        view = SweepView()
        view.memory_limit = self.ctx.max_memory_gb  # the window's limit, read when a sweep starts
        return view

    def on_new_result(self, result, new_scenario):
        super().on_new_result(result, new_scenario)
        # the fields and metrics it offers are the current scenario's (new: a file just opened)
        self.widget.set_scenario(self.ctx.scenario_data(), self.ctx.scenario_path() or "<scenario>",
                                 mechanisms()[result.scenario.kind].model, result.metrics_dict(), new=new_scenario)

    def shutdown(self):
        self.widget.shutdown()
