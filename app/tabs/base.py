"""The protocol every tab implements, and what the window hands each tab (its context).

A tab wraps one view widget. The window builds the tabs of `app.tabs.TABS` in order, calls
`on_new_result` on every tab for each run, draws only the tab on screen (`shown`), and asks
each tab for its title and whether it applies. Tabs never import the window: what they need
from it comes through the TabContext."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from PySide6.QtWidgets import QWidget

from kvviz.result import Result

from ..views.time_range import SharedTimeRange


def _nothing(*_args):
    return None


@dataclass
class TabContext:
    """What a tab may use of the window. The defaults let a tab stand alone (tests)."""
    settings: object = None  # QSettings, for a tab that remembers a folder (Replay)
    time_range: SharedTimeRange = field(default_factory=SharedTimeRange)  # the zoom kept across re-runs
    set_value: Callable[[str, object], None] = _nothing  # edit a scenario field (the run repeats)
    # re-run with a field set for viewing only (a pick): the scenario is neither edited nor
    # marked modified; the value holds for later runs until another scenario opens
    view_value: Callable[[str, object], None] = _nothing
    scenario_data: Callable[[], dict] = dict  # the scenario as edited, as in its file
    scenario_path: Callable[[], str | None] = _nothing
    say: Callable[[str], None] = _nothing  # the status line
    show: Callable[[str], None] = _nothing  # bring a tab (by name) to the front
    max_memory_gb: Callable[[], float | None] = _nothing  # the size guard's limit for runs (None: kvviz's)
    # the time view of the run (the timeline): Home, "export the visible range", and the views
    # that follow its zoom and cursor read it; set by the tab that owns it
    time_view: object = None


class Tab:
    """One tab: a view widget, when it applies, and what it does with each run."""
    name = ""              # the `kvviz-gui --view` name, and the key tests and the window use
    aliases: tuple[str, ...] = ()  # other --view names that show this tab
    label = ""             # the tab's title unless `title` says otherwise
    on_demand = False      # drawn when the user runs it (sweep, replay), not from each run
    needs_run = True       # has nothing to show before a scenario has run (disabled until then)

    def __init__(self, ctx: TabContext):
        self.ctx = ctx
        self.result: Result | None = None  # the latest run
        self._stale = False  # a run not yet drawn (drawn when the tab is shown)
        self.widget: QWidget = self.make_widget()

    def make_widget(self) -> QWidget:
        raise NotImplementedError

    def job_for(self, view: str):
        """The widget whose job `--view view` runs before a screenshot (run(), stopped, job,
        jobs, status), for a tab that is not on_demand but holds such a page; None if none."""
        return None

    def title(self, result: Result | None) -> str:
        return self.label

    def unavailable(self, result: Result) -> str | None:
        """Why this tab has nothing for `result` (one line, its tooltip), or None when it applies."""
        return None

    def opens_first(self, result: Result) -> bool:
        """Whether a newly opened scenario's first run should show this tab, not the first."""
        return False

    def on_new_result(self, result: Result, new_scenario: bool) -> None:
        """Every run, shown or not (new_scenario: the first run of a newly opened file)."""
        self.result = result
        self._stale = not self.on_demand

    def shown(self) -> None:
        """The tab is on screen: draw the latest run if it has not been drawn."""
        if self._stale and self.result is not None:
            self._stale = False
            self.set_result(self.result)

    def set_result(self, result: Result) -> None:
        self.widget.set_result(result)

    def data_rows(self) -> tuple[list[str], list[list]] | None:
        """The numbers the tab shows, as a table: (header, rows), or None when it has none now.
        File → Export → Data as CSV writes it, for any tab, with no code of its own: by default
        the tab's widget is asked (a view with a `data_rows` method offers its data)."""
        rows = getattr(self.widget, "data_rows", None)
        return rows() if callable(rows) else None

    def figure_widget(self):
        """The widget a "Current View" figure shows: the tab's widget unless it says otherwise."""
        return self.widget

    def toolbar_actions(self) -> list[tuple[str, str, Callable]]:
        """(text, tooltip, slot) for the window's toolbar."""
        return []

    def shutdown(self) -> None:
        """The window closes: stop any background work."""


def follow_timeline(view, ctx: TabContext):
    """`view` linked to the timeline: the shared time range (its zoom, kept across re-runs) and
    the timeline's cursor. The timeline is built first (TABS lists it first)."""
    view.shared_range = ctx.time_range
    timeline = ctx.time_view
    if timeline is not None:
        view.link_x(timeline.plot)
        timeline.time_cursor.sigPositionChanged.connect(lambda line: view.set_cursor(line.value()))
    return view
