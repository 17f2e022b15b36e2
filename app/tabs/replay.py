"""The Replay tab: a request trace replayed through cache policies, run when asked."""
from __future__ import annotations

from ..views.replay import ReplayView
from .base import Tab


class ReplayTab(Tab):
    name = "replay"
    label = "Replay"
    on_demand = True
    needs_run = False  # replays its own trace (a bundled sample by default)

    def make_widget(self):
        return ReplayView(settings=self.ctx.settings)

    def shown(self):
        self.widget.draw_sample_once()  # the tab never opens on an empty plot

    def shutdown(self):
        self.widget.shutdown()
