"""Main window: pick a scenario, see its timeline and metrics."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QComboBox, QDockWidget, QFileDialog, QLabel, QMainWindow,
                               QToolBar)

from kvviz import ScenarioError, load_scenario
from kvviz.cli import bundled_scenarios

from .metrics import MetricsView
from .timeline import TimelineView
from .worker import SimulationRunner


class MainWindow(QMainWindow):
    result_ready = Signal(object)

    def __init__(self, path: str | Path | None = None):
        super().__init__()
        self.setWindowTitle("kvviz")
        self.resize(1400, 820)
        self.timeline = TimelineView()
        self.setCentralWidget(self.timeline)
        self.metrics = MetricsView()
        dock = QDockWidget("Metrics", self)
        dock.setObjectName("metrics-dock")
        dock.setWidget(self.metrics)
        dock.setFeatures(QDockWidget.DockWidgetMovable | QDockWidget.DockWidgetFloatable)
        self.addDockWidget(Qt.RightDockWidgetArea, dock)
        self.resizeDocks([dock], [420], Qt.Horizontal)

        bar = QToolBar("Scenario", self)
        bar.setObjectName("scenario-toolbar")
        bar.setMovable(False)
        self.addToolBar(bar)
        bar.addWidget(QLabel(" Scenario: "))
        self.picker = QComboBox()
        self.picker.setMinimumWidth(320)
        for p in bundled_scenarios():
            self.picker.addItem(p.stem, str(p))
        self.picker.currentIndexChanged.connect(lambda i: self.open(self.picker.itemData(i)))
        bar.addWidget(self.picker)
        bar.addAction("Open…", self._open_dialog)
        self.status = QLabel()
        self.statusBar().addWidget(self.status, 1)

        self.runner = SimulationRunner(self)
        self.runner.finished.connect(self._show)
        self.runner.failed.connect(self._fail)
        self.result = None
        self.path: str | None = None
        if path is not None:
            self.open(str(path))
        elif self.picker.count():
            default = self.picker.findText("rope_prefetch_16")
            self.picker.setCurrentIndex(max(default, 0))
            self.open(self.picker.currentData())

    def open(self, path: str):
        try:
            scenario = load_scenario(path)
        except ScenarioError as e:
            self._fail(str(e))
            return
        self.path = path
        self.status.setText(f"simulating {Path(path).name} …")
        self.runner.submit(scenario)

    def _open_dialog(self):
        path, _ = QFileDialog.getOpenFileName(self, "Open scenario", "", "Scenarios (*.toml)")
        if path:
            self.open(path)

    def _show(self, result):
        self.result = result
        self.setWindowTitle(f"kvviz — {result.scenario.name}")
        self.timeline.set_result(result)
        self.metrics.set_result(result)
        tr = result.trace
        self.status.setText(f"{result.scenario.name}: {len(tr.spans):,} spans, {len(tr.instants):,} instants, "
                            f"{result.events:,} events")
        self.result_ready.emit(result)

    def _fail(self, message: str):
        self.status.setText(f"⚠ {message}")

    def closeEvent(self, event):
        self.runner.wait()  # no worker may outlive the window
        super().closeEvent(event)
