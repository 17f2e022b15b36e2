"""The bars tab: a kind's bar chart — the hit-rate ladder (editable rungs), or the policy
comparison when the run compares placement policies. A policy comparison opens here: its
timeline of a 16,000 s serving run shows one job's loading as a hairline."""
from __future__ import annotations

from PySide6.QtWidgets import QStackedWidget

from ..views._common import carries, kinds_carrying
from ..views.ladder import LadderView
from ..views.policies import PoliciesView, policy_rows
from .base import Tab


class BarsTab(Tab):
    name = "ladder"
    aliases = ("policies",)
    label = "Ladder"

    def make_widget(self):
        self.ladder, self.policies = LadderView(), PoliciesView()
        self.ladder.rungs_edited.connect(self._rungs_edited)
        stack = QStackedWidget()
        stack.addWidget(self.ladder)
        stack.addWidget(self.policies)
        return stack

    @staticmethod
    def _compares_policies(result) -> bool:
        policies = result.metrics_dict().get("policies")
        return carries(result, "policies") and isinstance(policies, dict) and bool(policy_rows(policies))

    def title(self, result):
        return "Policies" if result is not None and self._compares_policies(result) else self.label

    def unavailable(self, result):
        if self._compares_policies(result) or carries(result, "ladder"):
            return None
        return (f"The ladder applies to {kinds_carrying('ladder')} scenarios; "
                "Policies to runs that compare placement policies")

    def opens_first(self, result):
        return self._compares_policies(result)

    def set_result(self, result):
        view = self.policies if self._compares_policies(result) else self.ladder
        self.widget.setCurrentWidget(view)
        view.set_result(result)

    def data_rows(self):
        return self.widget.currentWidget().data_rows()  # the ladder's rungs or the policies' bars

    def _rungs_edited(self, rungs: list[dict]):
        """The ladder changed a label or hit rate: write only what changed, so every other key
        of a rung (its `overrides`) stays as the file has it."""
        current = self.ctx.scenario_data().get("rungs")
        if not isinstance(current, list) or len(current) != len(rungs):
            self.ctx.set_value("rungs", rungs)  # the panel holds no rungs to merge into
            return
        for i, (old, new) in enumerate(zip(current, rungs)):
            for key in ("label", "hbm_hit_pct"):
                was = old.get(key) if isinstance(old, dict) else None
                if was != new[key]:  # 72 == 72.0: an untouched rung keeps the file's spelling
                    self.ctx.set_value(f"rungs.{i}.{key}", new[key])
