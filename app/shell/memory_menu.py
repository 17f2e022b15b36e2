"""File → Memory Limit for Runs…, for the main window: the size guard's limit for its runs and
sweeps (app.memory_limit), stored in the settings; a run it refused runs again once raised."""
from __future__ import annotations

from PySide6.QtWidgets import QInputDialog

from ..memory_limit import KEY, MAX_GB, MIN_GB, stored_limit


class MemoryMenu:
    """A mixin of MainWindow: reads its settings, runner and panel."""

    def memory_limit_dialog(self) -> QInputDialog:
        dialog = QInputDialog(self)
        dialog.setWindowTitle("Memory Limit for Runs")
        dialog.setLabelText("Refuse a run estimated to need more memory than (GB):\n"
                            "(kept for next time)")
        dialog.setInputMode(QInputDialog.DoubleInput)
        dialog.setDoubleRange(MIN_GB, MAX_GB)
        dialog.setDoubleDecimals(1)
        dialog.setDoubleValue(stored_limit(self.settings))
        dialog.doubleValueSelected.connect(self.set_memory_limit)
        dialog.open()  # window-modal, not a nested event loop
        return dialog

    def set_memory_limit(self, gb: float) -> None:
        """Keep `gb` as the limit and use it from the next run; a run refused as too large is
        tried again at once."""
        self.settings.setValue(KEY, float(gb))
        self.runner.max_memory_gb = stored_limit(self.settings)
        self._say(f"memory limit for runs: {self.runner.max_memory_gb:g} GB")
        if self.panel.refused():
            self.panel.clear_refused()
            if self.panel.scenario() is not None:
                self._run(self.panel.scenario())
