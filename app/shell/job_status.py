"""The status bar follows every tab's background job (a sweep, the capacity surface, a replay,
claims, an operating point): what runs, how far it is and its estimate, with a Cancel of its own,
so a job started on one tab can be watched and stopped from any other."""
from __future__ import annotations

from typing import Callable

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QMainWindow, QProgressBar, QPushButton

from ..background import JobControls


class JobStatus(QObject):
    def __init__(self, window: QMainWindow, jobs: list[JobControls], say: Callable[[str], None]):
        super().__init__(window)
        self.say = say
        self.bar = QProgressBar()
        self.bar.setMaximumWidth(140)
        self.cancel_btn = QPushButton("Cancel")
        self.cancel_btn.setFocusPolicy(Qt.NoFocus)  # (as the run's Cancel: never takes the focus)
        self.cancel_btn.clicked.connect(self.cancel)
        for w in (self.bar, self.cancel_btn):
            window.statusBar().addPermanentWidget(w)
            w.hide()
        self.running: list[JobControls] = []  # the newest last: the one the bar shows
        for jc in jobs:
            jc.began.connect(lambda _what, jc=jc: self._began(jc))
            jc.said.connect(lambda text, jc=jc: self._said(jc, text))
            jc.stopped.connect(lambda jc=jc: self._stopped(jc))

    def shown(self) -> JobControls | None:
        return self.running[-1] if self.running else None

    def cancel(self) -> None:
        if (jc := self.shown()) is not None:
            jc.cancel()

    def _began(self, jc: JobControls) -> None:
        if jc in self.running:
            self.running.remove(jc)
        self.running.append(jc)
        self._show(jc)

    def _said(self, jc: JobControls, text: str) -> None:
        if jc is self.shown():
            self._show(jc, text)

    def _show(self, jc: JobControls, text: str | None = None) -> None:
        p = jc.progress
        self.bar.setRange(p.minimum(), p.maximum())
        self.bar.setValue(p.value())
        self.cancel_btn.setText(f"Cancel {jc.what}")
        self.bar.show()
        self.cancel_btn.show()
        self.say(f"{jc.what}: {text if text is not None else jc.status.text()}")

    def _stopped(self, jc: JobControls) -> None:
        if jc not in self.running:
            return
        self.running.remove(jc)
        self.say(f"{jc.what}: {jc.status.text()}")  # how it ended (done, cancelled, or why it failed)
        if (other := self.shown()) is not None:
            self._show(other)
        else:
            self.bar.hide()
            self.cancel_btn.hide()

    def shutdown(self) -> None:
        self.running.clear()
