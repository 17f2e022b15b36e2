"""The Tiers tab: for a run whose record lists the "tiers" analysis, each policy's hits split
by the tier that served them (bars, drawn from each run) and a capacity surface over two
tiers' sizes (a sweep, run when asked). Data as CSV and Current View take the page shown."""
from __future__ import annotations

from PySide6.QtWidgets import QTabWidget

from ..views._common import carries, kinds_carrying
from ..views.capacity_surface import CapacitySurfaceView
from ..views.tier_bars import TierBarsView
from .base import Tab


class TiersTab(Tab):
    name = "tiers"
    aliases = ("surface",)  # --view surface: the capacity surface page, run before the screenshot
    label = "Tiers"

    def make_widget(self):
        self.bars, self.surface = TierBarsView(), CapacitySurfaceView()
        pages = QTabWidget()
        pages.setDocumentMode(True)
        pages.addTab(self.bars, "Hits per tier")
        pages.addTab(self.surface, "Capacity surface")
        return pages

    def unavailable(self, result):
        if carries(result, "tiers"):
            return None
        return f"The Tiers tab applies to {kinds_carrying('tiers')} scenarios (hits per memory tier)"

    def opens_first(self, result):
        return carries(result, "tiers")  # the replay's timeline holds only a hit or miss per request

    def on_new_result(self, result, new_scenario):
        super().on_new_result(result, new_scenario)
        if carries(result, "tiers"):  # the grid is the scenario as edited now
            self.surface.set_scenario(self.ctx.scenario_data(), self.ctx.scenario_path() or "<scenario>",
                                      result.metrics_dict(), new=new_scenario)
        elif new_scenario or self.surface.data is not None:  # never the previous scenario's surface
            self.surface.not_applicable(self.unavailable(result))

    def set_result(self, result):
        self.bars.set_result(result)

    def show_page(self, page: str) -> None:
        """"bars" or "surface" to the front."""
        self.widget.setCurrentWidget(self.surface if page == "surface" else self.bars)

    def job_for(self, view: str):
        if view != "surface":
            return None
        self.show_page("surface")
        return self.surface

    def data_rows(self):
        return self.widget.currentWidget().data_rows()

    def figure_widget(self):
        return self.widget.currentWidget()

    def shutdown(self):
        self.surface.shutdown()
