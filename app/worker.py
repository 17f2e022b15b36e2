"""Simulations run off the GUI thread; the finished Result comes back through a signal.

Graphics items are never touched here: the window builds them when `finished` arrives.
"""
from __future__ import annotations

import traceback

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from kvviz import ScenarioError, simulate


class _Signals(QObject):
    finished = Signal(object, int)   # Result, request id
    failed = Signal(str, int)        # message for the user, request id


class _Job(QRunnable):
    def __init__(self, scenario, request: int, signals: _Signals):
        super().__init__()
        self.scenario, self.request, self.signals = scenario, request, signals

    def run(self):
        try:
            result = simulate(self.scenario)
        except ScenarioError as e:
            self.signals.failed.emit(str(e), self.request)
        except Exception as e:  # a bug: report it in the status bar, never as a traceback dialog
            traceback.print_exc()
            self.signals.failed.emit(f"internal error while simulating: {e!r}", self.request)
        else:
            self.signals.finished.emit(result, self.request)


class SimulationRunner(QObject):
    """Runs one scenario at a time; only the newest request's result is delivered."""

    finished = Signal(object)
    failed = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(1)
        self._signals = _Signals(self)
        self._signals.finished.connect(self._on_finished)
        self._signals.failed.connect(self._on_failed)
        self._latest = 0

    def submit(self, scenario) -> int:
        self._latest += 1
        self.pool.start(_Job(scenario, self._latest, self._signals))
        return self._latest

    def busy(self) -> bool:
        return self.pool.activeThreadCount() > 0

    def wait(self, msecs: int = -1) -> bool:
        return self.pool.waitForDone(msecs)

    def _on_finished(self, result, request: int):
        if request == self._latest:
            self.finished.emit(result)

    def _on_failed(self, message: str, request: int):
        if request == self._latest:
            self.failed.emit(message)
