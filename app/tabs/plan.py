"""The Plan tab: `kvviz plan` on the scenario's [plan] grid (prefix_cache scenarios with one)."""
from __future__ import annotations

from ..views.plan import PlanView
from .base import Tab


class PlanTab(Tab):
    name = "plan"
    label = "Plan"
    on_demand = True

    def make_widget(self):
        view = PlanView()
        view.open_mix.connect(self._open)
        return view

    def unavailable(self, result):
        if result.scenario.kind != "prefix_cache":
            return "A plan searches a prefix cache's tier mix (kvviz plan)"
        if not result.scenario.plan.axes:
            return "This scenario has no [plan] section (plan_prefix_tiers has one)"
        return None

    def on_new_result(self, result, new_scenario):
        super().on_new_result(result, new_scenario)
        sc = result.scenario
        if not (sc.kind == "prefix_cache" and sc.plan.axes):
            return
        if new_scenario or not self.widget.data:
            n = 1
            for a in sc.plan.axes:
                n *= len(a.values)
            self.widget.set_scenario(self.ctx.scenario_data(), self.ctx.scenario_path() or "<scenario>",
                                     list(sc.plan.targets), n)
        elif self.widget.job is None:  # an edit (or a mix opened from the plot): the next Run plans
            self.widget.data = self.ctx.scenario_data()  # on it; the plot stays

    def _open(self, settings: dict):
        for path, value in settings.items():
            self.ctx.set_value(path, value)
        self.ctx.show("timeline")

    def shutdown(self):
        self.widget.shutdown()
