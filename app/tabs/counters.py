"""The Counters tab: every counter of the run as a step line, one row each, following the
timeline's zoom (kept across re-runs) and its cursor."""
from __future__ import annotations

from ..views.counters import CountersView
from .base import Tab, follow_timeline


class CountersTab(Tab):
    name = "counters"
    label = "Counters"

    def make_widget(self):
        return follow_timeline(CountersView(), self.ctx)

    def set_result(self, result):
        self.widget.set_result(result)
        kept = self.ctx.time_range.cursor_ns  # the timeline's cursor, in ns (its units may be a stale run's)
        if kept is not None:
            self.widget.set_cursor(kept / self.widget.scale)
