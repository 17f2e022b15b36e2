"""One launch of the app, timed from outside it (run by bench_app_start.py, one fresh process per
launch): `python benchmarks/start_probe.py T0 SCENARIO` runs `kvviz-gui SCENARIO` as app.main
does and prints one JSON line with the moments (time.monotonic(), a clock every process shares)
of the first paint of the main window, the first result drawn (a part of a run or a whole one)
and the whole first run drawn; T0 is the launcher's clock just before it started this process.

It changes nothing in the app: a QApplication made first (app.main takes the one that exists)
with an event filter that notes the main window's first Paint event (the moment after it, once
painted and flushed) and then connects to the window's result signals."""
from __future__ import annotations

import json
import os
import sys
import time


def main() -> int:
    sys.path.insert(0, os.getcwd())  # the checkout it is run in (its app/ and kvviz/), not benchmarks/
    t0, scenario = float(sys.argv[1]), sys.argv[2]
    from PySide6.QtCore import QEvent, QObject, QTimer
    from PySide6.QtWidgets import QApplication, QMainWindow, QMessageBox
    app = QApplication(sys.argv[:1])
    marks: dict[str, float] = {}

    def note(what: str):
        if what not in marks:
            marks[what] = time.monotonic()
        if "result" in marks:
            app.quit()

    def hook(win):
        """The window is painted: listen for its results (one may already be there)."""
        runner = getattr(win, "runner", None)
        if runner is not None:
            runner.partial.connect(lambda *_: note("partial"))
        win.result_ready.connect(lambda *_: note("result"))
        if getattr(win, "result", None) is not None:
            note("result")

    class FirstPaint(QObject):
        def eventFilter(self, obj, event):  # noqa: N802 (Qt's name)
            if event.type() == QEvent.Paint and isinstance(obj, QMainWindow) and "paint" not in marks:
                marks["paint"] = -1.0  # once
                QTimer.singleShot(0, lambda w=obj: (marks.__setitem__("paint", time.monotonic()), hook(w)))
            return False

    flt = FirstPaint()
    app.installEventFilter(flt)
    QTimer.singleShot(600_000, app.quit)  # a launch that never ends is reported, not waited for
    real_exec = QApplication.exec

    def exec_then_close(self=None):  # app.main's app.exec(): then close the window as a user would
        rc = real_exec()
        for w in app.topLevelWidgets():
            if isinstance(w, QMainWindow):
                w.ask_unsaved = lambda: QMessageBox.Discard
                w.close()
        return rc
    QApplication.exec = exec_then_close
    os.environ.setdefault("KVVIZ_WORKERS", str(os.cpu_count() or 1))  # as kvviz-gui (app.main.entry)
    import app.main as gui
    gui.main([scenario])
    out = {k: v - t0 for k, v in marks.items() if v > 0}
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
