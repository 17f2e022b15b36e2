"""Main window: scenario browser and parameter panel on the left, the tabs of app.tabs.TABS in
the centre, metrics on the right. Data flows one way: panel edit -> validated scenario ->
worker -> Result -> tabs. The window knows no tab by name: it loops over the list."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QLabel,
    QMainWindow,
    QProgressBar,
    QPushButton,
    QTabWidget,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from kvviz import ScenarioError, parse_scenario
from kvviz.bundled import bundled_scenarios
from kvviz.format import printable
from kvviz.mechanisms import engine_note_once, mechanisms

from ..background import JobControls
from ..memory_limit import for_app, stored_limit
from ..params import ParameterPanel
from ..tabs import TABS, Tab, TabContext
from ..views._common import ElidedLabel
from ..views.metrics import MetricsView
from ..views.time_range import SharedTimeRange
from ..worker import SimulationRunner
from .docks import DockLayout
from .export_menu import ExportMenu
from .files import ScenarioFiles
from .job_status import JobStatus
from .memory_menu import MemoryMenu
from .scenario_picker import ScenarioPicker
from .shortcuts import shortcuts_dialog
from .tab_reach import make_tabs_reachable

SHOW_PROGRESS_AFTER_MS = 100  # runs shorter than this never flash a progress bar
FIRST_PAINT_WAIT_MS = 2000  # a shown window's first run waits this long at most for its first paint


def app_settings() -> QSettings:
    return QSettings(QSettings.IniFormat, QSettings.UserScope, "kvviz", "kvviz")


PARAMS_DOCK_WIDTH = 320  # the Parameters dock's first width (px): every bundled scenario's form fits


class MainWindow(ScenarioFiles, ExportMenu, MemoryMenu, QMainWindow):
    result_ready = Signal(object)
    export_finished = Signal(bool)  # an export started from the menu has ended (True: written)

    def __init__(self, path: str | Path | None = None, settings: QSettings | None = None):
        super().__init__()
        self.settings = settings or app_settings()
        self.setWindowTitle("kvviz")
        self.setAcceptDrops(True)
        self.resize(1440, 860)
        self.result = None
        self._closed = False
        self.panel = ParameterPanel()
        self.metrics = MetricsView()

        self.time_range = SharedTimeRange()  # the zoom, kept while the same scenario re-runs
        # fields set for viewing only (a timeline pick): applied to every run, never to the file
        self._view_values: dict[str, object] = {}
        self._ctx = TabContext(settings=self.settings, time_range=self.time_range, set_value=self.panel.set_value,
                               view_value=self._view_value, scenario_data=self.panel.data, scenario_path=self.panel.path,
                               say=self._say, show=self.show_view, max_memory_gb=lambda: stored_limit(self.settings))
        self.tab_list: list[Tab] = []
        self.tabs = QTabWidget()
        for cls in TABS:
            tab = cls(self._ctx)
            self.tab_list.append(tab)
            self.tabs.addTab(tab.widget, tab.title(None))
        self.tab_menu = make_tabs_reachable(self.tabs)  # 1366 px: no tab out of reach
        self.time_view = self._ctx.time_view  # the timeline: Home and "export the visible range"
        self.tabs.currentChanged.connect(lambda _: self._refresh_visible())
        # a tab that needs more width (Compare) squeezes the docks; the next one gives it back
        self.tabs.currentChanged.connect(lambda _: QTimer.singleShot(0, self, self.docks.regrow))
        # said above the views while they still show the previous scenario (its run pending or refused)
        self.stale_note = QLabel()
        self.stale_note.setWordWrap(True)
        self.stale_note.setStyleSheet("QLabel { background: #fff4d6; color: #5d4200; padding: 4px 8px;"
                                      " border-bottom: 1px solid #e8d9a8; }")
        self.stale_note.hide()
        centre = QWidget()
        lay = QVBoxLayout(centre)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(self.stale_note)
        lay.addWidget(self.tabs, 1)
        self.setCentralWidget(centre)

        self.docks = DockLayout(self)
        self.params_dock = self.docks.add("Parameters", self.panel, Qt.LeftDockWidgetArea, PARAMS_DOCK_WIDTH)
        self.metrics_dock = self.docks.add("Metrics", self.metrics, Qt.RightDockWidgetArea, 300)
        self._shown_path: str | None = None  # the file whose result is on screen
        self._new_scenario = False  # the next result is the first of a newly opened file
        self._after_run_note = ""  # said with the next result (a pick that fell back)
        self._metrics_kind = None  # the kind the Metrics dock was last fitted to

        self.runner = SimulationRunner(self)
        self.runner.max_memory_gb = stored_limit(self.settings)  # File → Memory Limit for Runs…
        self.runner.finished.connect(self._show)
        self.runner.partial.connect(self._show_partial)
        self.runner.failed.connect(self._fail)
        self.runner.refused.connect(self._run_refused)
        self.runner.busy_changed.connect(self._busy)
        self.panel.edited.connect(self._run)
        self.panel.invalid.connect(self._edits_invalid)
        self.panel.dirty_changed.connect(lambda _: self._title())

        self._build_toolbar()
        self._build_menus()
        self._build_status()
        self._build_export_status()
        # every tab's background job in the status bar, with its own Cancel
        self.job_status = JobStatus(self, self.tabs.findChildren(JobControls), self._say)
        self.docks.restore(self.settings)
        # The window is drawn before anything runs: the first run waits for its first paint
        # (or, for a window never shown, the first turn of the event loop), so a slow scenario
        # or a busy machine never keeps the window off the screen.
        self._drawn = False
        self._waiting_run = None  # the scenario whose run waits for the first paint
        QTimer.singleShot(0, self, self._start_unless_shown)
        QTimer.singleShot(FIRST_PAINT_WAIT_MS, self, self._first_drawn)  # a paint that never comes
        start = path or self._default_scenario()
        if start:
            self.open(str(start))
        if self.result is None and self.panel.path() is None:
            self._no_run_tabs()

    def _no_run_tabs(self):
        """No scenario open (the file given is missing or unreadable): the tabs that draw a
        run are disabled, saying why, instead of showing empty axes; the first result enables
        each that applies (_enable_tabs)."""
        for i, tab in enumerate(self.tab_list):
            if tab.needs_run:
                self.tabs.setTabEnabled(i, False)
                self.tabs.setTabToolTip(i, "Open a scenario first (File → Open, or the Scenario box)")

    def paintEvent(self, event):  # noqa: N802 (Qt's name)
        super().paintEvent(event)
        if not self._drawn:
            QTimer.singleShot(0, self, self._first_drawn)  # once this paint is on the screen

    def _start_unless_shown(self):
        if not self.isVisible():
            self._first_drawn()

    def _first_drawn(self):
        """The window is on the screen (or will not be): the run that waited for it starts."""
        if self._drawn:
            return
        self._drawn = True
        scenario, self._waiting_run = self._waiting_run, None
        if scenario is not None:
            self._run(scenario)

    # --- construction -------------------------------------------------------------------
    def _build_toolbar(self):
        bar = QToolBar("Scenario", self)
        bar.setObjectName("toolbar-scenario")
        bar.setMovable(False)
        self.addToolBar(bar)
        bar.addWidget(QLabel(" Scenario "))
        self.picker = ScenarioPicker(bundled_scenarios())
        self.picker.activated.connect(lambda i: self.open(self.picker.itemData(i)))
        bar.addWidget(self.picker)
        self.act_open = bar.addAction("Open…", self.open_dialog)
        self.act_save = bar.addAction("Save", self.save)
        self.act_reset = bar.addAction("Reset", self.reset_to_file)
        bar.addSeparator()
        for tab in self.tab_list:
            for text, tip, slot in tab.toolbar_actions():
                bar.addAction(text, slot).setToolTip(tip)
        self.act_export = bar.addAction("Export…", self.export_current)
        self.act_export.setToolTip("the timeline as an SVG figure; on another tab, that tab's view (File → Export: more)")

    def _build_menus(self):
        m = self.menuBar().addMenu("&File")
        m.addAction("&Open…", QKeySequence.Open, self.open_dialog)
        self.recent_menu = m.addMenu("Open &Recent")
        m.addAction("&Save", QKeySequence.Save, self.save)
        m.addAction("Save &As…", QKeySequence.SaveAs, self.save_as)
        m.addAction("&Reset to File", self.reset_to_file)
        self._build_export_menu(m.addMenu("&Export"))
        m.addAction("&Memory Limit for Runs…", self.memory_limit_dialog)
        m.addSeparator()
        m.addAction("&Quit", QKeySequence.Quit, self.close)
        v = self.menuBar().addMenu("&View")
        for dock in self.findChildren(QDockWidget):
            v.addAction(dock.toggleViewAction())
        v.addSeparator()
        self.act_whole_run = v.addAction("Show the &Whole Run", self._show_whole_run)
        self.act_whole_run.setShortcut(QKeySequence("Home"))
        self.act_reset_layout = v.addAction("&Reset Layout", self.reset_layout)
        v.addSeparator()
        self.act_find = v.addAction("&Find in the Timeline", self.find_in_timeline)
        self.act_find.setShortcut(QKeySequence.Find)  # Ctrl+F
        self.act_find.setShortcutContext(Qt.WindowShortcut)
        # the view tabs from anywhere in the window (Ctrl+Tab works only with the focus inside
        # the tab widget); window-wide, so a focused spin box is not stepped by them
        self.act_next_tab = v.addAction("&Next View Tab", lambda: self._step_tab(1))
        self.act_next_tab.setShortcut(QKeySequence("Ctrl+PgDown"))
        self.act_prev_tab = v.addAction("&Previous View Tab", lambda: self._step_tab(-1))
        self.act_prev_tab.setShortcut(QKeySequence("Ctrl+PgUp"))
        for act in (self.act_next_tab, self.act_prev_tab):
            act.setShortcutContext(Qt.WindowShortcut)
        h = self.menuBar().addMenu("&Help")
        self.act_shortcuts = h.addAction("&Keyboard Shortcuts…", self.show_shortcuts)
        self.shortcuts_dialog = None
        self._fill_recent()

    def _build_status(self):
        self.status = ElidedLabel()  # a long message is elided (tooltip: all of it), never widens the window
        self.progress = QProgressBar()
        self.progress.setRange(0, 0)
        self.progress.setMaximumWidth(160)
        self.cancel_btn = QPushButton("Cancel")
        # never takes focus: hidden under the focus at the run's end, it handed focus on to the
        # scenario's name with its text selected, and the next key overwrote the name
        self.cancel_btn.setFocusPolicy(Qt.NoFocus)
        self.cancel_btn.clicked.connect(self.cancel_run)
        self.statusBar().addWidget(self.status, 1)
        self.statusBar().addPermanentWidget(self.progress)
        self.statusBar().addPermanentWidget(self.cancel_btn)
        self.progress.hide()
        self.cancel_btn.hide()
        self._progress_timer = QTimer(self, singleShot=True, interval=SHOW_PROGRESS_AFTER_MS)
        self._progress_timer.timeout.connect(self._show_progress)

    def _default_scenario(self) -> str | None:
        return self.picker.path_of("rope_prefetch_16") or (self.picker.itemData(0) if self.picker.count() else None)

    # --- tabs ---------------------------------------------------------------------------
    def tab(self, name: str) -> Tab:
        """The tab called `name` (or one of its aliases)."""
        for tab in self.tab_list:
            if name == tab.name or name in tab.aliases:
                return tab
        raise KeyError(f"no tab {name!r}")

    def view(self, name: str):
        """The widget the tab called `name` shows."""
        return self.tab(name).widget

    def current_tab(self) -> Tab:
        return self.tab_list[self.tabs.currentIndex()]

    def show_view(self, name: str):
        self.tabs.setCurrentIndex(self.tab_list.index(self.tab(name)))
        self._refresh_visible()

    def _refresh_visible(self):
        """Only the visible tab draws now; the others when they are shown."""
        self.current_tab().shown()

    # --- running and showing ------------------------------------------------------------
    def _view_value(self, field: str, value) -> None:
        """Re-run with `field` = value for viewing (the scenario stays as edited, not modified)."""
        self._view_values[field] = value
        if self.panel.scenario() is not None:
            self._run(self.panel.scenario())

    def _viewed(self, scenario):
        """The scenario with the view's own values set (a pick), or as it is without any."""
        if not self._view_values:
            return scenario
        data = self.panel.data()
        for field, value in self._view_values.items():
            *parents, last = field.split(".")
            node = data
            for key in parents:
                node = node.setdefault(key, {})
            node[last] = value
        try:
            return parse_scenario(data, self.panel.path() or "<scenario>")
        except ScenarioError as e:  # the pick no longer fits the edited scenario: drop it
            self._view_values.clear()
            self._after_run_note = f"; ⚠ the timeline's pick was cleared: {e}"
            return scenario

    def _run(self, scenario):
        if self._closed:
            return
        if not self._drawn:  # started once the window is on the screen
            self._waiting_run = scenario
            self._say(f"{scenario.name}: opening…")
            self._placeholder(scenario.name, "opening…")
            return
        viewed = self._viewed(scenario)
        if note := engine_note_once(viewed.kind):  # a slower engine than it could run: said once, with the result
            self._after_run_note += f"; {note}"
        self.runner.submit(viewed)

    def _busy(self, busy: bool):
        if busy:
            self.progress.setRange(0, 0)  # busy, until parts say how far
            self._say(self._running_text())
            job = self.runner.job_scenario()
            self._placeholder(job.name if job is not None else "", self._running_text(),
                              "the timeline appears here when the run has ended")
            self._progress_timer.start()
        else:
            self._progress_timer.stop()
            self.progress.hide()
            self.cancel_btn.hide()

    def _running_text(self) -> str:
        """What a run says while it runs: how many of its parts it runs, and how long it will
        take (a long one: the runner's estimate of what it sends, calibrated on this machine)."""
        sent, total = self.runner.sending
        what = f"simulating {sent} of {total} parts (the others unchanged)…" if 0 < sent < total else "simulating…"
        est = self.runner.estimate
        return what + (f" ({est.describe()}, estimated)" if est is not None and est.seconds >= 2 else "")

    def cancel_run(self):
        """Stop the running simulation: the views keep the last finished run, and say so."""
        if not self.runner.busy():
            return
        self.runner.cancel()
        if self.result is None:
            self._say("simulation cancelled")
            self._placeholder("simulation cancelled: edit a value, or Reset, to run it")
            return
        self._say("simulation cancelled: the views show the run before the last edit")
        self.stale_note.setText("Showing the run before the last edit: its simulation was cancelled "
                                "(edit a value or Reset to run again).")
        self.stale_note.show()
        self.metrics_dock.setWindowTitle("Metrics — the run before the last edit")

    def _show_progress(self):
        if self.runner.busy():
            self.progress.show()
            self.cancel_btn.show()

    def _show_partial(self, result, done: int, total: int):
        """Some of a run's parts have ended (the recorded one always): the tabs draw what has
        arrived; `self.result` stays the last whole run (exports, Compare's pin) until it ends."""
        self._show(result, partial=True)
        self._say(f"{result.scenario.name}: {done} of {total} parts done, the others still running…")
        self.progress.setRange(0, total)  # how far the run is, from its first part on
        self.progress.setValue(done)

    def _show(self, result, partial: bool = False):
        if not partial:
            self.result = result
        new_scenario, self._new_scenario = self._new_scenario, False  # (not a re-run, nor a Save As)
        self._shown_path = self.panel.path()
        self.stale_note.hide()
        self.metrics_dock.setWindowTitle("Metrics")
        self.metrics.set_result(result)
        if result.scenario.kind != self._metrics_kind:
            self._metrics_kind = result.scenario.kind
            self._fit_metrics_dock()
        for tab in self.tab_list:
            tab.on_new_result(result, new_scenario)
        self._enable_tabs(result)
        first = next((i for i, t in enumerate(self.tab_list) if t.opens_first(result)), None)
        if new_scenario and first is not None and self.tabs.currentIndex() == 0:
            self.tabs.setCurrentIndex(first)  # from the default tab only: never away from the user's choice
        self._refresh_visible()
        if partial:
            return
        tr = result.trace
        checks = result.metrics.get("checks", ())
        failed = sum(not c["ok"] for c in checks)
        verdict = f"; ⚠ {failed} of {len(checks)} checks failed" if failed else \
            (f"; {len(checks)} {'check passes' if len(checks) == 1 else 'checks pass'}" if checks else "")
        reused, parts = self.runner.last_reused, self.runner.last_parts
        if parts and reused == parts:  # nothing ran: every part was kept from earlier runs
            how = f"reused ({parts} {'part' if parts == 1 else 'parts'})"
        else:
            how = f"simulated in {self.runner.last_seconds * 1000:.0f} ms" + \
                (f" ({reused} unchanged {'part' if reused == 1 else 'parts'} reused)" if reused else "")
        # an overloaded run's TTFT is its backlog: said here, the rates in Metrics' overload row
        over = "; ⚠ overloaded (Metrics: overload)" if "overload" in result.metrics else ""
        # the name often holds the file's figures ("150 groups × 5 users"): an edited run says so
        edited = " (edited)" if self.panel.is_dirty() else ""
        self._say(f"{result.scenario.name}{edited}: {len(tr.spans):,} spans, {len(tr.instants):,} instants; "
                  f"{how}{self._engine_notes(result)}{verdict}{over}{self._after_run_note}")
        self._after_run_note = ""
        self.result_ready.emit(result)

    def _engine_notes(self, result) -> str:
        """Why the run (some of its parts) fell back from the compiled engine to the Python one
        (a policy without a compiled twin, KVVIZ_ENGINE=python, a missing or stale build): the
        run's own notes, next to its time, which they explain; one the window already says
        (its engine note, said once) is not said twice."""
        notes = [n for n in result.metrics.get("notes", ()) if isinstance(n, str) and n not in self._after_run_note]
        return "".join(f"; ⚠ {n}" for n in notes)

    def _enable_tabs(self, result):
        """Each tab's title for this run; tabs that have nothing for it are disabled, saying why.
        When the tab on screen is one of those, the run's own first tab (else the first) comes
        to the front before it is disabled: Qt would move on to the next enabled tab, which
        landed Policies or Ladder on an empty Compare."""
        reasons = [tab.unavailable(result) for tab in self.tab_list]
        if reasons[self.tabs.currentIndex()] is not None:
            first = next((i for i, t in enumerate(self.tab_list) if reasons[i] is None and t.opens_first(result)), 0)
            self.tabs.setCurrentIndex(first)  # the first tab applies to every run
        for i, tab in enumerate(self.tab_list):
            self.tabs.setTabText(i, tab.title(result))
            self.tabs.setTabEnabled(i, reasons[i] is None)
            self.tabs.setTabToolTip(i, reasons[i] or "")

    def _fit_metrics_dock(self):
        """The Metrics dock as wide as the run's tables want, leaving the centre every tab's name."""
        self.docks.fit_right(self.metrics_dock, self.metrics.wanted_width(),
                             self.tabs.tabBar().sizeHint().width() + 24)

    def _note_stale(self, scenario):
        """Say, above the views and on the Metrics dock, that what they show is the previous
        scenario's until the new one has run (or, if it does not validate, at all)."""
        if self.result is None:
            return
        old = Path(self._shown_path).name if self._shown_path else self.result.scenario.name
        new = Path(self.panel.path() or "").name
        old, new = printable(old), printable(new)
        self.stale_note.setText(f"Showing the previous scenario, {old}, until {new} has been simulated…"
                                if scenario is not None else
                                f"Showing the previous scenario, {old}: {new} has invalid values, "
                                "marked on the left.")
        self.stale_note.show()
        self.metrics_dock.setWindowTitle(f"Metrics — {old} (previous scenario)")

    def _run_refused(self, field: str, message: str):
        """The simulation refused a value at `field`. A double-click pick that no longer exists
        (the workload shrank under it) falls back to the file's value and re-runs; anything else
        is marked at its field, as an invalid edit is."""
        kind = self.panel.data().get("kind")
        pick = mechanisms()[kind].pick if isinstance(kind, str) and kind in mechanisms() else None
        in_file = self.panel.value(field, of_file=True)
        if field in self._view_values:  # a pick made for viewing: forget it, run as edited
            del self._view_values[field]
            self._after_run_note = f"; ⚠ {field}: {message}: the pick was cleared"
            self.time_range.forget()
            if self.panel.scenario() is not None:
                self._run(self.panel.scenario())
            return
        if pick is not None and field == pick[1] and self.panel.value(field) != in_file:
            self._after_run_note = f"; ⚠ {field}: {message}: the pick was cleared"
            self.time_range.forget()  # the zoom was on the picked job
            self.panel.set_value(field, in_file)  # None: the key goes, the default applies
            self.panel.flush()
            return
        self.panel.mark_refused(field, for_app(message, self.runner.max_memory_gb or stored_limit(self.settings)))
        self._say(f"⚠ {field}: refused by the simulation, marked in Parameters; the views show the last run")

    def _show_whole_run(self):
        self.time_range.forget()
        self.time_view.show_whole_run()
        # a linked view on screen shows the current run, which the timeline may not have drawn yet
        shown = self.current_tab().widget
        if shown is not self.time_view and hasattr(shown, "show_whole_run"):
            shown.show_whole_run()

    def find_in_timeline(self):
        """Ctrl+F: the Timeline tab in front, its search box with the focus."""
        self.tabs.setCurrentWidget(self.time_view)
        self._refresh_visible()
        self.time_view.focus_search()

    def _step_tab(self, step: int):
        """The next (step 1) or previous (-1) enabled view tab, wrapping round."""
        n = self.tabs.count()
        i = self.tabs.currentIndex()
        for _ in range(n):
            i = (i + step) % n
            if self.tabs.isTabEnabled(i):
                self.tabs.setCurrentIndex(i)
                return

    def show_shortcuts(self):
        """Help → Keyboard Shortcuts…: a small dialog beside the window (it may stay open)."""
        if self.shortcuts_dialog is None:
            self.shortcuts_dialog = shortcuts_dialog(self)
        self.shortcuts_dialog.show()
        self.shortcuts_dialog.raise_()

    def reset_layout(self):
        """Docks back in their areas at their first widths, shown; the layout saved in the
        settings is forgotten (a squeezed one would otherwise come back on the next launch)."""
        self.docks.reset()
        if self.result is not None:
            self._fit_metrics_dock()  # as when the run's kind was first shown
        self.settings.remove("windowState")
        self.settings.remove("dockWidths")

    def _edits_invalid(self, message: str):
        """The panel's edits are invalid ("path: message"), or valid again (""). The message is
        said once, at its field: here only where to look (the field may be scrolled away)."""
        if not message:
            self._say("edits valid")
            return
        n = len(self.panel.errors())
        where = message.split(": ", 1)[0]
        more = f" and {n - 1} more" if n > 1 else ""
        self._say(f"⚠ {where}{more}: invalid, marked in Parameters; the views show the last valid run")

    def _fail(self, message: str):
        self._say(f"⚠ {message}")
        self._placeholder(f"⚠ {message}")

    def _placeholder(self, *lines: str):
        """What the empty timeline says until the first run arrives (nothing once one has)."""
        if self.result is None:
            self.time_view.waiting([printable(line) for line in lines])

    def _say(self, text: str):
        self.status.setText(printable(text))  # it may quote a scenario's name or a field path

    def _title(self):
        name = Path(self.panel.path()).name if self.panel.path() else "kvviz"
        self.setWindowTitle(f"{printable(name)}{' *' if self.panel.is_dirty() else ''} — kvviz")

    # --- closing ------------------------------------------------------------------------
    def closeEvent(self, event):  # noqa: N802 (Qt's name)
        if not self._confirm_discard():
            event.ignore()
            return
        self.docks.save(self.settings)
        self.settings.sync()
        for tab in self.tab_list:
            tab.shutdown()
        self.exports.shutdown()  # a cancelled export writes nothing
        self._closed = True  # an edit still in the panel's debounce must not reach the runner
        self.runner.shutdown()  # no worker may outlive the window
        super().closeEvent(event)
