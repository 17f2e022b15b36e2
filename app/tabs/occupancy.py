"""The Occupancy tab: which slot holds what, over time, following the timeline's zoom and cursor."""
from __future__ import annotations

from ..views.occupancy import OccupancyView
from .base import Tab


class OccupancyTab(Tab):
    name = "occupancy"
    label = "Occupancy"

    def make_widget(self):
        view = OccupancyView()
        view.shared_range = self.ctx.time_range
        timeline = self.ctx.time_view  # built first (TABS lists the timeline first)
        if timeline is not None:
            view.link_x(timeline.plot)
            timeline.time_cursor.sigPositionChanged.connect(lambda line: view.set_cursor(line.value()))
        return view
