"""Main window: scenario browser and parameter panel on the left, views in tabs, metrics on
the right. Data flows one way: panel edit -> validated scenario -> worker -> Result -> views."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication, QKeySequence
from PySide6.QtWidgets import (QDockWidget, QFileDialog, QLabel, QMainWindow,
                               QMessageBox, QProgressBar, QPushButton, QTabWidget, QToolBar,
                               QVBoxLayout, QWidget)

from kvviz import ScenarioError
from kvviz.mechanisms import mechanisms
from kvviz.bundled import bundled_scenarios
from kvviz.io import atomic_write

from .compare import CompareView
from .metrics import MetricsView
from .params import ParameterPanel
from .replay_view import ReplayView
from .save_dir import remember, start_path
from .scenario_picker import ScenarioPicker
from .sweep_view import SweepView
from .timeline import TimelineView
from .views.counters import CountersView
from .views.ladder import LadderView
from .views.policies import BarsTab, PoliciesView
from .views.occupancy import OccupancyView
from .views._common import ElidedLabel
from .views.rope_bound import RopeBoundView
from .views.time_range import SharedTimeRange
from .worker import SimulationRunner

MAX_RECENT = 8
SHOW_PROGRESS_AFTER_MS = 100  # runs shorter than this never flash a progress bar
TABS = ("timeline", "occupancy", "counters", "ladder", "rope bound", "compare", "sweep", "replay")


def app_settings() -> QSettings:
    return QSettings(QSettings.IniFormat, QSettings.UserScope, "kvviz", "kvviz")


class MainWindow(QMainWindow):
    result_ready = Signal(object)

    def __init__(self, path: str | Path | None = None, settings: QSettings | None = None):
        super().__init__()
        self.settings = settings or app_settings()
        self.setWindowTitle("kvviz")
        self.setAcceptDrops(True)
        self.resize(1440, 860)
        self.result = None

        self.timeline, self.occupancy, self.counters = TimelineView(), OccupancyView(), CountersView()
        self.ladder, self.rope_bound = LadderView(), RopeBoundView()
        self.bars = BarsTab(self.ladder, PoliciesView())  # the ladder, or the policy comparison
        self.compare, self.sweep, self.replay = CompareView(), SweepView(), ReplayView(settings=self.settings)
        self.views = dict(zip(TABS, (self.timeline, self.occupancy, self.counters, self.bars,
                                     self.rope_bound, self.compare, self.sweep, self.replay)))
        self.tabs = QTabWidget()
        for name, view in self.views.items():
            self.tabs.addTab(view, name.capitalize())
        self.tabs.currentChanged.connect(lambda _: self._refresh_visible())
        # a tab that needs more width (Compare) squeezes the docks; the next one gives it back
        self.tabs.currentChanged.connect(lambda _: QTimer.singleShot(0, self, self._regrow_docks))
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
        self.time_range = SharedTimeRange()  # the zoom, kept while the same scenario re-runs
        self.timeline.shared_range = self.occupancy.shared_range = self.time_range
        self._stale: set[str] = set()  # views not yet showing the current result
        self.occupancy.link_x(self.timeline.plot)
        self.timeline.picked.connect(self._picked)
        self.timeline.time_cursor.sigPositionChanged.connect(lambda line: self.occupancy.set_cursor(line.value()))

        self.panel = ParameterPanel()
        self.metrics = MetricsView()
        self._dock_defaults: dict[QDockWidget, tuple] = {}  # dock -> (area, width), for View → Reset layout
        # dock -> the width it gets back when the window has room again: its default, a kind's
        # metrics tables, or where the user dragged it. Qt gives a growing window's room to the
        # centre only, so a window made small and large again kept its docks squeezed.
        self._dock_wanted: dict[QDockWidget, int] = {}
        self._metrics_auto = 0  # the width last fitted to a kind's metrics (not the user's drag)
        self._fitting = False  # docks are being resized by the window, not by the user
        self._last_width = 0  # the window's width at its last resize
        self.params_dock = self._dock("Parameters", self.panel, Qt.LeftDockWidgetArea, 320)
        self.metrics_dock = self._dock("Metrics", self.metrics, Qt.RightDockWidgetArea, 300)
        self._shown_path: str | None = None  # the file whose result is on screen
        self._new_scenario = False  # the next result is the first of a newly opened file
        self._after_run_note = ""  # said with the next result (a pick that fell back)
        self._run_hint = ""  # the running simulation's size and time estimate, when long
        self._metrics_kind = None  # the kind the Metrics dock was last fitted to
        self._zoom_to: tuple[str, int] | None = None  # (lane, ref) to show once the picked re-run is in

        self.runner = SimulationRunner(self)
        self.runner.finished.connect(self._show)
        self.runner.failed.connect(self._fail)
        self.runner.refused.connect(self._run_refused)
        self.runner.busy_changed.connect(self._busy)
        self.panel.edited.connect(self._run)
        self.panel.invalid.connect(lambda m: self._say(f"⚠ {m}" if m else "edits valid"))
        self.panel.dirty_changed.connect(lambda _: self._title())
        self.ladder.rungs_edited.connect(self._rungs_edited)

        self._build_toolbar()
        self._build_menus()
        self._build_status()
        self._restore()
        start = path or self._default_scenario()
        if start:
            self.open(str(start))

    # --- construction -------------------------------------------------------------------
    def _dock(self, title: str, widget, area, width: int):
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock-{title.lower()}")
        dock.setWidget(widget)
        widget.setMinimumWidth(width - 70)  # a restored or squeezed layout never hides the fields
        self.addDockWidget(area, dock)
        self.resizeDocks([dock], [width], Qt.Horizontal)
        self._dock_defaults[dock] = (area, width)
        self._dock_wanted[dock] = width
        dock.installEventFilter(self)
        return dock

    def eventFilter(self, obj, ev):  # noqa: N802 (Qt's name)
        # A dock resized while the window keeps its width: the user dragged the separator.
        if ev.type() == QEvent.Resize and obj in self._dock_wanted and not self._fitting \
                and not obj.isFloating() and ev.oldSize().width() > 0 and self.isVisible() \
                and self.width() == self._last_width:
            self._dock_wanted[obj] = obj.width()
        return super().eventFilter(obj, ev)

    def resizeEvent(self, ev):  # noqa: N802
        super().resizeEvent(ev)
        grew = ev.size().width() > self._last_width > 0
        self._last_width = ev.size().width()
        if grew:
            QTimer.singleShot(0, self, self._regrow_docks)

    def _regrow_docks(self):
        """Side docks squeezed by a smaller window get their widths back as it grows."""
        docks = [d for d, w in self._dock_wanted.items()
                 if d.isVisible() and not d.isFloating() and d.width() < w - 2]
        if docks:
            self._fit_docks(docks, [self._dock_wanted[d] for d in docks])

    def _fit_docks(self, docks, widths):
        self._fitting = True  # until the layout this posts has run: its resizes are not a drag
        self.resizeDocks(docks, widths, Qt.Horizontal)
        QTimer.singleShot(0, self, lambda: setattr(self, "_fitting", False))

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
        self.act_pin = bar.addAction("Pin as A", self.pin)
        self.act_pin.setToolTip("Keep the current result as A in the Compare tab")
        self.act_export = bar.addAction("Export…", lambda: self.export_dialog("svg"))

    def _build_menus(self):
        m = self.menuBar().addMenu("&File")
        m.addAction("&Open…", QKeySequence.Open, self.open_dialog)
        self.recent_menu = m.addMenu("Open &Recent")
        m.addAction("&Save", QKeySequence.Save, self.save)
        m.addAction("Save &As…", QKeySequence.SaveAs, self.save_as)
        m.addAction("&Reset to File", self.reset_to_file)
        ex = m.addMenu("&Export")
        for fmt, label in (("svg", "Timeline as SVG…"), ("png", "Timeline as PNG…"), ("pdf", "Timeline as PDF…")):
            ex.addAction(label, lambda f=fmt: self.export_dialog(f))
            ex.addAction(label.replace("…", " (visible range)…"), lambda f=fmt: self.export_dialog(f, True))
        ex.addSeparator()
        for fmt, label in (("perfetto", "Perfetto trace JSON…"), ("csv", "Trace as CSV…"), ("json", "Metrics as JSON…")):
            ex.addAction(label, lambda f=fmt: self.export_dialog(f))
        ex.addSeparator()
        for fmt in ("png", "svg"):  # any tab as drawn: ladder, policies, counters, replay curves
            ex.addAction(f"Current View as {fmt.upper()}…", lambda f=fmt: self.export_view_dialog(f))
        m.addSeparator()
        m.addAction("&Quit", QKeySequence.Quit, self.close)
        v = self.menuBar().addMenu("&View")
        for dock in self.findChildren(QDockWidget):
            v.addAction(dock.toggleViewAction())
        v.addSeparator()
        self.act_whole_run = v.addAction("Show the &Whole Run", self._show_whole_run)
        self.act_whole_run.setShortcut(QKeySequence("Home"))
        self.act_reset_layout = v.addAction("&Reset Layout", self.reset_layout)
        self._fill_recent()

    def _build_status(self):
        self.status = ElidedLabel()  # a long message is elided (tooltip: all of it), never widens the window
        self.progress = QProgressBar()
        self.progress.setRange(0, 0)
        self.progress.setMaximumWidth(160)
        self.cancel_btn = QPushButton("Cancel")
        self.cancel_btn.clicked.connect(self.runner.cancel)
        self.statusBar().addWidget(self.status, 1)
        self.statusBar().addPermanentWidget(self.progress)
        self.statusBar().addPermanentWidget(self.cancel_btn)
        self.progress.hide()
        self.cancel_btn.hide()
        self._progress_timer = QTimer(self, singleShot=True, interval=SHOW_PROGRESS_AFTER_MS)
        self._progress_timer.timeout.connect(self._show_progress)

    # --- scenario files -----------------------------------------------------------------
    def _default_scenario(self) -> str | None:
        return self.picker.path_of("rope_prefetch_16") or (self.picker.itemData(0) if self.picker.count() else None)

    def open(self, path: str) -> bool:
        """Open a scenario file. One that does not validate opens too, its values shown and the
        blamed fields marked, so it can be fixed here; only an unreadable file is refused."""
        if not self._confirm_discard():
            self._sync_picker()  # the picker may already show the name the user chose
            return False
        try:
            self.panel.load(path, strict=False)
        except ScenarioError as e:
            self._fail(str(e))
            self._sync_picker()
            return False
        self.runner.cancel()  # a run of the previous scenario must not arrive as this one's
        self.time_range.forget()
        self._new_scenario = True
        self._add_recent(path)
        self._sync_picker()
        self._title()
        scenario = self.panel.scenario()
        self._note_stale(scenario)
        if scenario is not None:
            self._run(scenario)
        else:
            errors = self.panel.errors()
            self._fail(f"{Path(path).name} does not validate; fix it on the left: "
                       f"{errors[0][0]}: {errors[0][1]}")
        return True

    def _sync_picker(self):
        self.picker.show_file(self.panel.path())

    def _note_stale(self, scenario):
        """Say, above the views and on the Metrics dock, that what they show is the previous
        scenario's until the new one has run (or, if it does not validate, at all)."""
        if self.result is None:
            return
        old = Path(self._shown_path).name if self._shown_path else self.result.scenario.name
        new = Path(self.panel.path() or "").name
        self.stale_note.setText(f"Showing the previous scenario, {old}, until {new} has been simulated…"
                                if scenario is not None else
                                f"Showing the previous scenario, {old}: {new} has invalid values, "
                                "marked on the left.")
        self.stale_note.show()
        self.metrics_dock.setWindowTitle(f"Metrics — {old} (previous scenario)")

    def open_dialog(self):
        path, _ = QFileDialog.getOpenFileName(self, "Open scenario", str(Path(self.panel.path() or ".").parent),
                                              "Scenarios (*.toml)")
        if path:
            self.open(path)

    def save(self) -> bool:
        try:
            self.panel.save()
        except (ScenarioError, OSError) as e:
            self._fail(f"not saved: {e}")
            return False
        self._say(f"saved {self.panel.path()}")
        return True

    def save_as(self) -> bool:
        path, _ = QFileDialog.getSaveFileName(self, "Save scenario as", self.panel.path() or "", "Scenarios (*.toml)")
        if not path:
            return False
        try:
            self.panel.save(path)
        except (ScenarioError, OSError) as e:
            self._fail(f"not saved: {e}")
            return False
        self._add_recent(path)
        self._sync_picker()  # the Scenario box named the old file
        self._title()
        self._say(f"saved {self.panel.path()}")
        return True

    def reset_to_file(self):
        """Back to the file's values, after asking when that drops edits (a toolbar click
        threw them all away at once)."""
        if self.panel.is_dirty() and self.ask_reset() != QMessageBox.Discard:
            return
        self.panel.reset_to_file()
        scenario = self.panel.scenario()
        if scenario is not None:
            self._run(scenario)

    def ask_unsaved(self) -> QMessageBox.StandardButton:
        """Save / Discard / Cancel for unsaved edits (tests replace this)."""
        return QMessageBox.question(self, "Unsaved changes",
                                    f"{Path(self.panel.path() or 'scenario').name} has unsaved changes.",
                                    QMessageBox.Save | QMessageBox.Discard | QMessageBox.Cancel,
                                    QMessageBox.Save)

    def ask_reset(self) -> QMessageBox.StandardButton:
        """Discard / Cancel before Reset drops unsaved edits (tests replace this)."""
        return QMessageBox.question(self, "Reset to the file",
                                    f"Discard the unsaved changes to {Path(self.panel.path() or 'scenario').name} "
                                    "and go back to the file's values?",
                                    QMessageBox.Discard | QMessageBox.Cancel, QMessageBox.Cancel)

    def _confirm_discard(self) -> bool:
        if not self.panel.is_dirty():
            return True
        answer = self.ask_unsaved()
        if answer == QMessageBox.Save:
            return self.save()
        return answer == QMessageBox.Discard

    def _add_recent(self, path: str):
        path = str(Path(path).resolve())  # one entry per file, whatever the directory it was opened from
        recent = [p for p in self._recent() if p != path]
        self.settings.setValue("recent", [path] + recent[: MAX_RECENT - 1])
        self._fill_recent()

    def _recent(self) -> list[str]:
        value = self.settings.value("recent", [])
        return [value] if isinstance(value, str) else list(value or [])

    def _fill_recent(self):
        self.recent_menu.clear()
        for p in self._recent():
            self.recent_menu.addAction(p, lambda p=p: self.open(p))
        self.recent_menu.setEnabled(bool(self._recent()))

    # --- drag and drop ------------------------------------------------------------------
    def dragEnterEvent(self, event):
        urls = event.mimeData().urls()
        if urls and urls[0].toLocalFile().endswith(".toml"):
            event.acceptProposedAction()

    def dropEvent(self, event):
        self.open(event.mimeData().urls()[0].toLocalFile())

    # --- running and showing ------------------------------------------------------------
    def _run(self, scenario):
        est = mechanisms()[scenario.kind].estimate(scenario)  # a long run says how long before it starts
        self._run_hint = f" ({est.describe()}, estimated)" if est is not None and est.seconds >= 2 else ""
        self.runner.submit(scenario)

    def _busy(self, busy: bool):
        if busy:
            self._say(f"simulating…{self._run_hint}")
            self._progress_timer.start()
        else:
            self._progress_timer.stop()
            self.progress.hide()
            self.cancel_btn.hide()

    def _show_progress(self):
        if self.runner.busy():
            self.progress.show()
            self.cancel_btn.show()

    def _show(self, result):
        self.result = result
        new_scenario, self._new_scenario = self._new_scenario, False  # (not a re-run, nor a Save As)
        self._shown_path = self.panel.path()
        self.stale_note.hide()
        self.metrics_dock.setWindowTitle("Metrics")
        if self.compare.pinned is not None and self.compare.pinned.scenario.kind != result.scenario.kind:
            self.compare.unpin()  # A and B of different kinds share no lanes and no metrics
        self.metrics.set_result(result)
        pick = mechanisms()[result.scenario.kind].pick
        self.timeline.pick_hint = (pick[0], f"{pick[2]} ({pick[1]})") if pick else None
        if result.scenario.kind != self._metrics_kind:
            self._metrics_kind = result.scenario.kind
            self._fit_metrics_dock()
        self._stale = set(TABS) - {"sweep", "replay"}  # these two run on demand
        self.tabs.setTabText(TABS.index("ladder"), BarsTab.title_for(result))
        self._enable_tabs(result)
        kind = mechanisms()[result.scenario.kind]
        if new_scenario and kind.initial_range is not None:
            self.time_range.ns = kind.initial_range(result)  # where the mechanism's point is; Home shows all
        if new_scenario and BarsTab.title_for(result) == "Policies" and TABS[self.tabs.currentIndex()] == "timeline":
            # a run comparing placement policies opens on that comparison: its timeline of a
            # 16,000 s serving run shows one job's loading as a hairline
            self.tabs.setCurrentIndex(TABS.index("ladder"))
        self.sweep.set_scenario(self.panel.data(), self.panel.path() or "<scenario>",
                                mechanisms()[result.scenario.kind].model, result.metrics_dict(), new=new_scenario)
        self._refresh_visible()
        if self._zoom_to is not None and "timeline" not in self._stale:
            self.timeline.zoom_to(*self._zoom_to)  # the picked job, now drawn layer by layer
        self._zoom_to = None
        tr = result.trace
        checks = result.metrics.get("checks", ())
        failed = sum(not c["ok"] for c in checks)
        verdict = f"; ⚠ {failed} of {len(checks)} checks failed" if failed else \
            (f"; {len(checks)} {'check passes' if len(checks) == 1 else 'checks pass'}" if checks else "")
        self._say(f"{result.scenario.name}: {len(tr.spans):,} spans, {len(tr.instants):,} instants; "
                  f"simulated in {self.runner.last_seconds * 1000:.0f} ms{verdict}{self._after_run_note}")
        self._after_run_note = ""
        self.result_ready.emit(result)

    def _enable_tabs(self, result):
        """Tabs that have nothing for this kind of run are disabled, saying why."""
        for name, reason in (("ladder", BarsTab.unavailable(result)), ("rope bound", RopeBoundView.unavailable(result))):
            i = TABS.index(name)
            self.tabs.setTabEnabled(i, reason is None)
            self.tabs.setTabToolTip(i, reason or "")
        if not self.tabs.isTabEnabled(self.tabs.currentIndex()):
            self.tabs.setCurrentIndex(TABS.index("timeline"))

    def _fit_metrics_dock(self):
        """Room for the widest side-by-side table (five policies), up to 35% of the window, and
        never so wide that the centre can no longer show every tab's name; back to its default
        for a kind with narrow tables, unless the user has dragged it since."""
        left = max((d.width() for d in self.findChildren(QDockWidget)
                    if self.dockWidgetArea(d) == Qt.LeftDockWidgetArea and d.isVisible()), default=0)
        room = self.width() - left - self.tabs.tabBar().sizeHint().width() - 24
        default = self._dock_defaults[self.metrics_dock][1]
        want = max(default, min(self.metrics.wanted_width(), int(self.width() * 0.35), room))
        had = self._dock_wanted[self.metrics_dock]
        if want > had or had in (self._metrics_auto, default):
            self._metrics_auto = self._dock_wanted[self.metrics_dock] = want
            self._fit_docks([self.metrics_dock], [want])

    def _rungs_edited(self, rungs: list[dict]):
        """The Ladder tab changed a label or hit rate: write only what changed, so every other
        key of a rung (its `overrides`) stays as the file has it."""
        current = self.panel.data().get("rungs")
        if not isinstance(current, list) or len(current) != len(rungs):
            self.panel.set_value("rungs", rungs)  # the panel holds no rungs to merge into
            return
        for i, (old, new) in enumerate(zip(current, rungs)):
            for key in ("label", "hbm_hit_pct"):
                was = old.get(key) if isinstance(old, dict) else None
                if was != new[key]:  # 72 == 72.0: an untouched rung keeps the file's spelling
                    self.panel.set_value(f"rungs.{i}.{key}", new[key])

    def _picked(self, lane: str, ref: int):
        """A double-clicked span: if the mechanism maps its lane to a field, set it (re-runs)."""
        if self.result is None:
            return
        pick = mechanisms()[self.result.scenario.kind].pick
        if pick is not None and lane == pick[0] and ref >= 0:
            self._zoom_to = (lane, ref)
            self.panel.set_value(pick[1], ref)
            self._say(f"{pick[1]} = {ref}: re-running")

    def _run_refused(self, field: str, message: str):
        """The simulation refused a value at `field`. A double-click pick that no longer exists
        (the workload shrank under it) falls back to the file's value and re-runs; anything else
        is marked at its field, as an invalid edit is."""
        kind = self.panel.data().get("kind")
        pick = mechanisms()[kind].pick if isinstance(kind, str) and kind in mechanisms() else None
        in_file = self.panel.value(field, of_file=True)
        if pick is not None and field == pick[1] and self.panel.value(field) != in_file:
            self._after_run_note = f"; ⚠ {field}: {message}: the pick was cleared"
            self.time_range.forget()  # the zoom was on the picked job
            self.panel.set_value(field, in_file)  # None: the key goes, the default applies
            self.panel.flush()
            return
        self.panel.mark_refused(field, message)

    def _show_whole_run(self):
        self.time_range.forget()
        self.timeline.show_whole_run()

    def reset_layout(self):
        """Docks back in their areas at their first widths, shown; the layout saved in the
        settings is forgotten (a squeezed one would otherwise come back on the next launch)."""
        for dock, (area, _) in self._dock_defaults.items():
            dock.setFloating(False)
            self.addDockWidget(area, dock)
            dock.show()
        docks = list(self._dock_defaults)
        self._dock_wanted = {d: w for d, (_, w) in self._dock_defaults.items()}
        self._fit_docks(docks, list(self._dock_wanted.values()))
        if self.result is not None:
            self._fit_metrics_dock()  # as when the run's kind was first shown
        self.settings.remove("windowState")
        self.settings.remove("dockWidths")

    def _refresh_visible(self):
        """Only the visible view redraws now; the others when their tab is shown."""
        name = TABS[self.tabs.currentIndex()]
        if name == "replay":
            self.replay.draw_sample_once()
        if self.result is None or name not in self._stale:
            return
        self._stale.discard(name)
        self.views[name].set_result(self.result)

    def show_view(self, name: str):
        self.tabs.setCurrentIndex(TABS.index(name))
        self._refresh_visible()

    def pin(self):
        if self.result is not None:
            self.compare.pin(self.result)
            self._stale.add("compare")
            self.show_view("compare")

    def _fail(self, message: str):
        self._say(f"⚠ {message}")

    def _say(self, text: str):
        self.status.setText(text)

    def _title(self):
        name = Path(self.panel.path()).name if self.panel.path() else "kvviz"
        self.setWindowTitle(f"{name}{' *' if self.panel.is_dirty() else ''} — kvviz")

    # --- export -------------------------------------------------------------------------
    def export_dialog(self, fmt: str, visible_range: bool = False):
        if self.result is None:
            return
        ext = {"perfetto": "json", "csv": "csv", "json": "json"}.get(fmt, fmt)
        stem = Path(self.panel.path() or "kvviz").stem
        path, _ = QFileDialog.getSaveFileName(self, f"Export {fmt.upper()}", start_path(self.settings, f"{stem}.{ext}"),
                                              f"*.{ext}")
        if path:
            self.export(fmt, path, visible_range)

    def export(self, fmt: str, path: str, visible_range: bool = False):
        """Write the current run: figures use the timeline's visible range when asked."""
        from .exporting import export_result
        rng = self.timeline.visible_range_ns() if visible_range else None
        try:
            written = export_result(self.result, fmt, path, rng)
        except (OSError, ValueError) as e:
            self._fail(f"export failed: {e}")
            return
        remember(self.settings, path)
        self._say("wrote " + ", ".join(written))

    def export_view_dialog(self, fmt: str):
        name = TABS[self.tabs.currentIndex()].replace(" ", "_")
        stem = Path(self.panel.path() or "kvviz").stem
        path, _ = QFileDialog.getSaveFileName(self, f"Export the view as {fmt.upper()}",
                                              start_path(self.settings, f"{stem}_{name}.{fmt}"), f"*.{fmt}")
        if path:
            self.export_view(fmt, path)

    def export_view(self, fmt: str, path: str):
        """The current tab as drawn: PNG at twice the screen's pixels (for print), or SVG with
        the plots' lines and text as vectors."""
        from .exporting import render_widget
        try:
            atomic_write(path, render_widget(self.tabs.currentWidget(), fmt))
        except (OSError, ValueError) as e:
            self._fail(f"export failed: {e}")
            return
        remember(self.settings, path)
        self._say(f"wrote {path}")

    # --- settings and closing -----------------------------------------------------------
    def _restore(self):
        geo, state = self.settings.value("geometry"), self.settings.value("windowState")
        if geo is not None:
            self.restoreGeometry(geo)
        if state is not None:
            self.restoreState(state)
            widths = self.settings.value("dockWidths")  # what the user chose, squeezed or not
            if isinstance(widths, list) and len(widths) == len(self._dock_wanted):
                for dock, w in zip(self._dock_wanted, widths):
                    if str(w).isdigit():
                        self._dock_wanted[dock] = int(w)
            QTimer.singleShot(0, self, self._regrow_docks)  # a layout saved squeezed opens with room
        self._fit_to_screen()

    def _fit_to_screen(self):
        """Never larger than the screen: the 1440 x 860 default on a 1366 x 768 laptop put the
        Metrics dock past the screen's edge (Qt already fits a restored layout)."""
        screen = self.screen() or QGuiApplication.primaryScreen()
        if screen is None:
            return
        room = screen.availableGeometry()
        w, h = min(self.width(), room.width()), min(self.height(), room.height())
        if (w, h) != (self.width(), self.height()):
            self.resize(w, h)
            self.move(room.topLeft())

    def closeEvent(self, event):
        if not self._confirm_discard():
            event.ignore()
            return
        self.settings.setValue("geometry", self.saveGeometry())
        self.settings.setValue("windowState", self.saveState())
        self.settings.setValue("dockWidths", [str(w) for w in self._dock_wanted.values()])
        self.settings.sync()
        self.sweep.shutdown()
        self.replay.shutdown()
        self.runner.shutdown()  # no worker may outlive the window
        super().closeEvent(event)
