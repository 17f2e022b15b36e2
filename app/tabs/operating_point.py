"""The Operating point tab: each model's headline figures against the load (kvviz operating-point),
AttentionStore scenarios with the paper's per-model TTFT cut, prefill and GPU-time speedup rows."""
from __future__ import annotations

from kvviz.operating_point import headline_claims

from ..views.operating_point import OperatingPointView
from .base import Tab


class OperatingPointTab(Tab):
    name = "operating_point"
    aliases = ("op",)
    label = "Operating point"
    on_demand = True

    def make_widget(self):
        return OperatingPointView()

    def unavailable(self, result):
        if result.scenario.kind != "attention_store":
            return "Operating points are AttentionStore's: the paper's TTFT cut and speedups against the load"
        if not headline_claims(result.scenario, self.ctx.scenario_data() or {}):
            return ("This scenario states no [[claim]] rows on the TTFT cut, prefill or GPU-time speedup per model "
                    "(attention_store_sharegpt does: kvviz operating-point)")
        return None

    def on_new_result(self, result, new_scenario):
        super().on_new_result(result, new_scenario)
        if result.scenario.kind != "attention_store":
            self.widget.set_scenario(result.scenario, {}, "<scenario>")
            return
        data, path = self.ctx.scenario_data(), self.ctx.scenario_path()
        self.widget.set_scenario(result.scenario, data, path or "<scenario>", edited=self._edited(data, path))

    @staticmethod
    def _edited(data, path) -> bool:
        if not path:
            return True
        from kvviz import ScenarioError
        from kvviz.scenario_data import read_toml
        try:
            return read_toml(path) != data
        except (ScenarioError, OSError):
            return True

    def shutdown(self):
        self.widget.shutdown()
