"""Where independent runs go, as the Sweep and Replay tabs ask it: this computer ("local") or a
Dask scheduler's address, with a button that connects off the GUI thread and says what answered
(kvviz.executor.describe_executor)."""
from __future__ import annotations

from typing import Callable

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QPushButton, QWidget

from kvviz.executor import default_spec, describe_executor

from .background import BackgroundJob


class RunOn(QWidget):
    def __init__(self, say: Callable[[str], None], what: str, parent=None):
        """`say(text)` shows the test's outcome; `what` ends the tooltip: what a cluster runs."""
        super().__init__(parent)
        self.say = say
        self.combo = QComboBox()
        self.combo.setEditable(True)
        spec = default_spec()
        self.combo.addItems(["local"] + ([spec] if spec != "local" else []))
        self.combo.setCurrentText(spec)
        self.combo.setToolTip(f"local: this computer's cores. A Dask scheduler address (tcp://HOST:8786) runs "
                              f"{what} on its cluster (pip install 'kvviz[cluster]' on every machine)")
        self.test_btn = QPushButton("Test connection")
        self.test_btn.clicked.connect(self.test_connection)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.combo, 1)
        row.addWidget(self.test_btn)
        self._probe: BackgroundJob | None = None

    def spec(self) -> str:
        return self.combo.currentText().strip() or "local"

    def setCurrentText(self, text: str) -> None:
        self.combo.setCurrentText(text)

    def currentText(self) -> str:
        return self.combo.currentText()

    def test_connection(self):
        """Connect to where runs would go, off the GUI thread, and say what answered."""
        if self._probe is not None:
            return
        spec = self.spec()
        probe = BackgroundJob(lambda _progress: describe_executor(spec), "connection test")
        probe.done.connect(lambda line: self.say(f"✓ {line}"))
        probe.failed.connect(lambda msg: self.say(f"⚠ {msg}"))
        probe.finished.connect(self._probe_ended)
        self._probe = probe
        self.test_btn.setEnabled(False)
        self.say(f"connecting to {spec}…")
        probe.start()

    def _probe_ended(self):
        self._probe = None
        self.test_btn.setEnabled(True)

    @property
    def testing(self) -> bool:
        return self._probe is not None

    def shutdown(self):
        """A connection test still under way is waited for (at most the connect timeout)."""
        if self._probe is not None:
            self._probe.wait()
