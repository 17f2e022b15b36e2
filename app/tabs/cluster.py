"""The Cluster tab: for a cluster run, its instances (the Gantt grouped by instance, routing
decisions, queue and cache occupancy per instance over time) and a router comparison (the
scenario once per router, run when asked: `--view routers` runs it before a screenshot).
Data as CSV and Current View take the page shown."""
from __future__ import annotations

from PySide6.QtWidgets import QTabWidget

from ..views.cluster import ClusterView
from ..views.cluster_routers import RoutersView
from .base import Tab


def is_cluster(result) -> bool:
    """A run with per-instance lanes and routers to compare: its per-instance metrics and a
    `routing.policy` setting (asked of the result, never of a kind's name)."""
    routing = getattr(result.scenario, "routing", None)
    return "per_instance" in result.metrics and hasattr(routing, "policy")


class ClusterTab(Tab):
    name = "cluster"
    aliases = ("routers",)  # --view routers: the router comparison page, run before the screenshot
    label = "Cluster"

    def make_widget(self):
        self.instances, self.routers = ClusterView(), RoutersView()
        self.routers.memory_limit = self.ctx.max_memory_gb
        pages = QTabWidget()
        pages.setDocumentMode(True)
        pages.addTab(self.instances, "Instances")
        pages.addTab(self.routers, "Router comparison")
        return pages

    def unavailable(self, result):
        if is_cluster(result):
            return None
        return "The Cluster tab applies to cluster scenarios (instances behind a router)"

    def on_new_result(self, result, new_scenario):
        super().on_new_result(result, new_scenario)
        why = self.unavailable(result)
        if why is None:  # the comparison runs the scenario as edited now
            self.routers.set_scenario(self.ctx.scenario_data(), self.ctx.scenario_path() or "<scenario>", result,
                                      new=new_scenario)
        else:
            self.instances.not_applicable(why)
            self.routers.not_applicable(why)
            self._stale = False

    def set_result(self, result):
        if self.unavailable(result) is None:
            self.instances.set_result(result)

    def show_page(self, page: str) -> None:
        """"instances" or "routers" to the front."""
        self.widget.setCurrentWidget(self.routers if page == "routers" else self.instances)

    def job_for(self, view: str):
        if view != "routers":
            self.show_page("instances")
            return None
        self.show_page("routers")
        return self.routers

    def data_rows(self):
        return self.widget.currentWidget().data_rows()

    def figure_widget(self):
        return self.widget.currentWidget()

    def shutdown(self):
        self.routers.shutdown()
