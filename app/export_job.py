"""File → Export in the background: one export at a time, the window repainting meanwhile.

A run's export (Perfetto, the timeline figures, CSV, JSON) is rendered in a child process
(app.export_render.child, started by the simulator's fork server: no Qt in it, a fork in
milliseconds): building the flagship's ~180 MB Perfetto trace is pure Python for ~14 s, which a
thread would share the interpreter with the window for, and which no thread could stop. The
child sends back the bytes; a thread here writes them through kvviz's output guard
(kvviz.outputs: checked, then written atomically as one set). Cancel ends the child's process
group at once; the files are written only when the bytes arrived and the export was not
cancelled, so a cancelled export leaves no file, or the previous one as it was.

A view's figure or table (Current View, Data as CSV) is drawn on the GUI thread (widgets can
only be drawn there) and then formatted and written by the same thread here.
"""
from __future__ import annotations

import os
import signal
import threading
import time
from typing import Callable

from PySide6.QtCore import QObject, Signal

from kvviz.errors import ScenarioError
from kvviz.outputs import check_outputs, write_outputs

from .export_render import child, said


class ExportJobs(QObject):
    """The window's exports: `render` or `write` starts one (False, said, while one runs);
    `ended(ok, message)` tells how it went (message: the files written, or why not)."""

    started = Signal(str)  # what is being exported (for the status bar)
    stage = Signal(str)    # what it does now ("writing 178 MB")
    ended = Signal(bool, str)
    target = staticmethod(child)  # the child's function (a test's stands in for a slow render)

    def __init__(self, parent=None):
        super().__init__(parent)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._proc = None
        self._cancelled = threading.Event()
        self.what = ""
        self.t0 = 0.0
        self._active = False
        self.ended.connect(self._ended)  # first: busy() is False for every slot after it

    def busy(self) -> bool:
        """From the start until `ended` has been delivered here (the GUI thread)."""
        return self._active

    def _ended(self, *_):
        self._active = False

    def render(self, result, fmt: str, path: str, time_range_ns, size, inputs, what: str) -> bool:
        """Export `result` as `fmt` to `path` (a run's export: rendered in a child process)."""
        from .worker import child_context
        ctx = child_context()

        def work():
            parent, end = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=self.target, args=(end, result, fmt, path, time_range_ns, size),
                               daemon=True, name="kvviz-export")
            with self._lock:
                if self._cancelled.is_set():
                    return None
                self._proc = proc
                proc.start()  # (pickles the result, here rather than on the GUI thread)
            end.close()
            try:
                head = parent.recv()
                if head[0] != "ok":
                    raise ScenarioError(head[1])
                items = []
                for p, n in head[1]:
                    data, got = bytearray(n), 0
                    while got < n:  # piece by piece: the interpreter is never held for the whole copy
                        got += parent.recv_bytes_into(data, got)
                    self.stage.emit(f"writing {_size(n)}")
                    items.append((p, data))
                return items
            except (EOFError, OSError):
                if self._cancelled.is_set():
                    return None
                raise ScenarioError(f"the export process ended without the {said(fmt)} "
                                    f"(exit code {proc.exitcode})") from None
            finally:
                parent.close()
                proc.join(5)
        return self._start(work, fmt, inputs, what)

    def write(self, make_items: Callable[[], list[tuple[str, str | bytes]]], fmt: str, inputs, what: str) -> bool:
        """Write what `make_items()` returns (run in the thread: formatting a table included)."""
        return self._start(make_items, fmt, inputs, what)

    def _start(self, work, fmt: str, inputs, what: str) -> bool:
        if self.busy():
            return False
        self._cancelled = threading.Event()
        self.what, self.t0 = what, time.monotonic()

        def outcome(cancelled) -> tuple[bool, str]:
            try:
                items = work()
                if items is None or cancelled.is_set():  # the last moment a cancel stops it
                    return False, f"{what} cancelled: nothing written"
                check_outputs([(f"the {fmt} export", p, said(fmt)) for p, _ in items], inputs)
                write_outputs(items)
            except (ScenarioError, OSError, ValueError) as e:
                return False, f"export failed: {e}"
            except Exception as e:  # a bug: one line, never a traceback dialog
                return False, f"export failed: internal error: {e!r}"
            return True, ", ".join(p for p, _ in items)

        def run(cancelled=self._cancelled):
            ok, message = outcome(cancelled)
            with self._lock:
                self._proc = None
            self.ended.emit(ok, message)  # the thread's last act: the next export may start at once

        self._active = True
        self._thread = threading.Thread(target=run, daemon=True, name="kvviz-export")
        self.started.emit(what)
        self._thread.start()
        return True

    def cancel(self) -> None:
        """Stop the export before it writes: its child ends now (the thread then ends at once)."""
        if not self.busy():
            return
        self._cancelled.set()
        with self._lock:
            proc = self._proc
        if proc is not None and proc.pid is not None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)  # the child and a rasteriser it started
            except (AttributeError, OSError):
                proc.terminate()

    def shutdown(self) -> None:
        """Cancel and wait (window close, test teardown): no export outlives the window."""
        self.cancel()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._active = False  # (its `ended`, queued for a window closing, is never delivered)


def _size(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 1e5 else f"{n / 1e3:,.0f} kB"
