"""The Occupancy tab: which slot holds what, over time, following the timeline's zoom and cursor."""
from __future__ import annotations

from ..views.occupancy import OccupancyView
from .base import Tab, follow_timeline


class OccupancyTab(Tab):
    name = "occupancy"
    label = "Occupancy"

    def make_widget(self):
        return follow_timeline(OccupancyView(), self.ctx)
