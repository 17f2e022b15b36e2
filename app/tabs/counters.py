"""The Counters tab: every counter of the run as a step line."""
from __future__ import annotations

from ..views.counters import CountersView
from .base import Tab


class CountersTab(Tab):
    name = "counters"
    label = "Counters"

    def make_widget(self):
        return CountersView()
