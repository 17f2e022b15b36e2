"""One background job at a time for a view (a sweep, a cache replay): the worker thread, and
the Run / Cancel / progress / status widgets that follow it. Errors arrive as one line of text,
never as a traceback."""
from __future__ import annotations

import time
from typing import Callable

from PySide6.QtCore import QObject, Qt, QThread, Signal
from PySide6.QtWidgets import QLabel, QProgressBar, QPushButton, QSizePolicy

from kvviz import ScenarioError

from .gui_gc import collect_on_gui_thread
from .memory_limit import for_app


class Cancelled(Exception):
    pass


class BackgroundJob(QThread):
    """Runs `work(progress)` off the GUI thread; `progress(done, total)` raises Cancelled once
    cancel is asked, which unwinds the work (a sweep's process pool then ends its workers)."""
    progress = Signal(int, int)
    done = Signal(object)
    failed = Signal(str)

    def __init__(self, work: Callable, what: str):
        super().__init__()
        self.work, self.what = work, what
        self.cancelled = False

    def _progress(self, done: int, total: int):
        if self.cancelled:
            raise Cancelled
        self.progress.emit(done, total)

    def run(self):
        try:
            res = self.work(self._progress)
        except Cancelled:
            self.failed.emit(f"{self.what} cancelled")
        except ScenarioError as e:
            self.failed.emit(str(e))
        except Exception as e:  # a bug; never a traceback dialog
            self.failed.emit(f"internal error in {self.what}: {e!r}")
        else:
            self.done.emit(res)


class JobControls(QObject):
    """Run and Cancel buttons, a progress bar and a status line driving one BackgroundJob.
    A QObject in the GUI thread, so the job's signals reach these widgets there. The window
    follows every one (`began`, `said`, `stopped`) in its status bar, with a Cancel of its own."""
    stopped = Signal()  # the job ended: done, failed or cancelled
    began = Signal(str)  # what runs ("capacity surface")
    said = Signal(str)   # the status line's text, as it changes while the job runs

    def __init__(self, parent: QObject, run_label: str, unit: str):
        super().__init__(parent)
        self.unit = unit
        self.run_btn, self.cancel_btn = QPushButton(run_label), QPushButton("Cancel")
        self.cancel_btn.setEnabled(False)
        self.cancel_btn.clicked.connect(self.cancel)
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(200)
        # its minimum width is not the tab's: a bar appearing for a run must not widen the tab
        # and so push the docks narrower (seen in a real window)
        policy = QSizePolicy(QSizePolicy.Ignored, QSizePolicy.Fixed)
        # its room kept while hidden: the Run and Cancel buttons beside it keep their place when
        # a run starts (they re-flowed, and a second click on Run landed on Cancel)
        policy.setRetainSizeWhenHidden(True)
        self.progress.setSizePolicy(policy)
        self.progress.setVisible(False)
        self.status = QLabel()
        self.status.setStyleSheet("color:#444;")
        self.status.setWordWrap(True)  # a long error must not widen the window
        self.status.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        # two lines kept for it: a message wrapping to a second line must not move the plot
        self.status.setMinimumHeight(2 * self.status.fontMetrics().lineSpacing() + 2)
        self.status.setAlignment(Qt.AlignLeft | Qt.AlignTop)
        self.job: BackgroundJob | None = None
        self.succeeded = False  # the last job finished with a result (not failed or cancelled)
        self.cancel_note = ""   # said with "cancelling…" (e.g. what a cluster still finishes)
        self._result, self._deliver, self._restore = None, None, None
        self.what = ""
        self.t0 = 0.0

    def start(self, work: Callable, what: str, on_done: Callable, status: str = "running…",
              restore: Callable | None = None) -> None:
        """Run `work(progress)`; `on_done(result)` once it has ended with one, else `restore()`
        (cancelled or failed: the view goes back to what it showed before the run)."""
        if self.job is not None:
            return
        collect_on_gui_thread()  # no collection may start on the job's thread (gui_gc.py)
        job = BackgroundJob(work, what)
        job.progress.connect(self._on_progress)
        job.done.connect(self._on_done)
        job.failed.connect(lambda m: self._say(f"⚠ {for_app(m)}"))  # no CLI flag named in the app
        job.finished.connect(self._on_end)
        self.job, self.succeeded, self._result = job, False, None
        self._deliver, self._restore = on_done, restore
        self.what = what
        self.t0 = time.monotonic()
        self.run_btn.setEnabled(False)
        self.cancel_btn.setEnabled(True)
        self.progress.setVisible(True)
        self.progress.setRange(0, 0)
        self.began.emit(what)
        self._say(status)
        job.start()

    def _say(self, text: str) -> None:
        self.status.setText(text)
        self.said.emit(text)

    def cancel(self):
        if self.job is not None:
            self.job.cancelled = True
            self._say("cancelling…" + self.cancel_note)

    def shutdown(self):
        """Cancel and wait: no job may outlive the window."""
        if self.job is not None:
            self.job.cancelled = True
            self.job.wait()

    def _on_progress(self, done: int, total: int):
        self.progress.setRange(0, total)
        self.progress.setValue(done)
        left = (time.monotonic() - self.t0) / done * (total - done) if 0 < done < total else 0
        eta = f", about {left:.0f} s left" if left >= 1 else ""
        self._say(f"{done}/{total} {self.unit}{eta}")

    def _on_done(self, result):
        self.succeeded, self._result = True, result

    def _on_end(self):
        # the result is delivered only once the thread has ended and the controls are reset:
        # whoever reacts to it (a test, a chained run) may start the next job at once
        self.job = None
        self.run_btn.setEnabled(True)
        self.cancel_btn.setEnabled(False)
        self.progress.setVisible(False)
        result, self._result = self._result, None
        if self.succeeded:
            self._deliver(result)
        elif self._restore is not None:
            self._restore()
        self.stopped.emit()
