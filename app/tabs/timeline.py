"""The Timeline tab: every lane's spans and marks, with the details pane and search. It owns the
run's time view (Home, the visible range for export), the mechanism's double-click pick (a view
action: it re-runs with the field set for viewing, never editing the scenario), and where a new
scenario opens and, after an edit that moves the mechanism's region of interest, where it goes."""
from __future__ import annotations

from kvviz.mechanisms import mechanisms

from ..views.timeline import TimelineView
from .base import Tab


class TimelineTab(Tab):
    name = "timeline"
    aliases = ("metrics",)  # the Metrics dock is beside every tab: --view metrics shows this one
    label = "Timeline"
    needs_run = False  # before any run, its placeholder says why nothing is drawn

    def make_widget(self):
        view = TimelineView(instrument=True)
        view.shared_range = self.ctx.time_range
        view.picked.connect(self._picked)
        self.ctx.time_view = view
        self._zoom_to: tuple[str, int] | None = None  # (lane, ref) to show once the picked re-run is in
        self._zoom_next: tuple[str, int] | None = None  # the same, for the run now arriving
        return view

    def on_new_result(self, result, new_scenario):
        super().on_new_result(result, new_scenario)
        record = mechanisms()[result.scenario.kind]
        pick = record.pick
        self.widget.pick_hint = (pick[0], f"{pick[2]} ({pick[1]})") if pick else None
        kept = self.ctx.time_range
        if new_scenario:
            kept.cursor_ns = None
            kept.roi, kept.user_moved = None, False
            self.widget.new_scenario()  # no search count, selection, range or Δt of the previous file
        roi = record.initial_range(result) if record.initial_range is not None else None
        if roi is not None and self._zoom_to is not None:
            # the picked job's re-run: open on what it draws (its prefill iteration layer by
            # layer), not on all of the job's iterations, where the layers were a hairline
            kept.ns, kept.roi, kept.user_moved = roi, roi, False
            self._zoom_to = None
        elif roi is not None:
            # where the mechanism's point is (Home shows all); a later run whose point moved
            # takes the view with it unless the user has zoomed since
            kept.follow(roi)
        self._zoom_next, self._zoom_to = self._zoom_to, None

    def set_result(self, result):
        self.widget.set_result(result)
        if self._zoom_next is not None:
            self.widget.zoom_to(*self._zoom_next)  # the picked job, now drawn layer by layer
            self._zoom_next = None

    def _picked(self, lane: str, ref: int):
        """A double-clicked span: if the mechanism maps its lane to a field, re-run with it set
        for this view (the scenario is not edited and not marked modified)."""
        if self.result is None:
            return
        pick = mechanisms()[self.result.scenario.kind].pick
        if pick is not None and lane == pick[0] and ref >= 0:
            self._zoom_to = (lane, ref)
            self.ctx.view_value(pick[1], ref)
            self.ctx.say(f"re-running with {pick[1]} = {ref} to {pick[2]} (a view: the scenario is unchanged)")
