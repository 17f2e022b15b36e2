"""A running sweep's values by grid index, as they arrive from its thread, and the redraw they
call for at most ten times a second: the Sweep tab's chart and the capacity surface both fill in
from one of these."""
from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

from kvviz.sweep import grid_size

REDRAW_MS = 100


class StreamedGrid(QObject):
    point = Signal(int, object)  # (grid index, value): emit it from the sweep's thread (on_result)

    def __init__(self, parent, redraw):
        super().__init__(parent)
        self.values: list | None = None  # None while no sweep runs
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(redraw)
        self.point.connect(self._on_point)

    def start(self, axes) -> None:
        self.values = [None] * grid_size(axes)

    def stop(self) -> None:
        self.values = None
        self._timer.stop()

    def _on_point(self, index: int, value) -> None:
        if self.values is not None and index < len(self.values):
            self.values[index] = value
            if not self._timer.isActive():
                self._timer.start(REDRAW_MS)
