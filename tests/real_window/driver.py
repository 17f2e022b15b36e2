"""Drives the app in a real X window (run by tests/test_real_window.py under Xvfb, platform
xcb): opens every bundled scenario, hovers over every timeline lane, edits a field and zooms,
and prints what a person would see go wrong as JSON: dock widths, the narrowest editor
against its minimum, the window's width, the zoom after an edit.

Usage: python -m tests.real_window.driver SCENARIO... (one JSON object on stdout)."""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path


def main(paths: list[str]) -> int:
    from PySide6.QtCore import QPoint, QPointF, QSettings, Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication, QDockWidget, QMessageBox

    from app.shell.window import MainWindow

    app = QApplication.instance() or QApplication([])
    assert app.platformName() == "xcb", app.platformName()
    tmp = tempfile.mkdtemp()
    win = MainWindow(paths[0], settings=QSettings(str(Path(tmp) / "kvviz.ini"), QSettings.IniFormat))
    win.ask_unsaved = lambda: QMessageBox.Discard
    win.resize(1280, 800)
    win.show()
    QTest.qWaitForWindowExposed(win)
    params = win.findChild(QDockWidget, "dock-parameters")

    def settle(ms: int = 60):
        QTest.qWait(ms)

    def wait_result(old, timeout_s: float = 120):
        for _ in range(int(timeout_s * 20)):
            if win.result is not old and not win.runner.busy():
                return True
            QTest.qWait(50)
        return False

    def geometry() -> dict:
        narrowest = None
        for path in win.panel.field_paths():
            w = win.panel.widget_for(path)
            if w is None or not w.isVisible():
                continue
            short = w.minimumSizeHint().width() - w.width()
            if narrowest is None or short > narrowest[1]:
                narrowest = (path, short)
        return {"params": params.width(), "metrics": win.metrics_dock.width(), "window": win.width(),
                "squeezed_field": narrowest}

    out = {"platform": app.platformName(), "scenarios": []}
    for path in paths:
        # the window opened the first file itself: any result of it counts (the runner's child
        # forks in ~0.2 s, so it may have arrived while the window was being exposed)
        old = win.result if path != paths[0] else None
        if path != paths[0]:
            win.open(path)
        ok = wait_result(old)
        win.show_view("timeline")
        settle(200)
        entry = {"path": Path(path).name, "ran": ok, "before": geometry(), "after_hover": []}
        plot = win.view("timeline").plot
        vb = plot.getPlotItem().getViewBox()
        lanes = len(win.result.trace.lanes) if win.result is not None else 0
        (x0, x1), _ = vb.viewRange()
        for lane in range(lanes):
            for frac in (0.1, 0.3, 0.5, 0.7, 0.9):
                scene = vb.mapViewToScene(QPointF(x0 + frac * (x1 - x0), float(lane)))
                pos = plot.mapFromScene(scene)
                QTest.mouseMove(plot.viewport(), QPoint(int(pos.x()), int(pos.y())))
                settle(20)
            entry["after_hover"].append(geometry())
        entry["hover_text"] = win.view("timeline").info.text()
        out["scenarios"].append(entry)

    # an edit keeps the zoom (the first scenario again: the 16-token example when given first)
    old = win.result
    win.open(paths[0])
    wait_result(old)
    vb = win.view("timeline").plot.getPlotItem().getViewBox()
    (lo, hi), _ = vb.viewRange()
    span = hi - lo
    vb.setXRange(lo + 0.25 * span, lo + 0.5 * span, padding=0)
    settle()
    zoom = vb.viewRange()[0]
    old = win.result
    spin = next(f for f in win.panel.field_paths() if f.endswith("latency_us"))
    editor = win.panel.widget_for(spin)
    editor.setFocus()
    QTest.keyClick(editor, Qt.Key_Up)  # one step up, as a person would
    wait_result(old)
    settle(200)
    out["edit"] = {"field": spin, "reran": win.result is not old, "zoom_before": list(zoom),
                   "zoom_after": list(vb.viewRange()[0])}

    # a sweep of three axes in the Sweep tab: its chart, slider and status must not move the docks
    win.show_view("sweep")
    settle(200)
    before = geometry()
    win.view("sweep").configure([("cache.slots", "2,4,8"), ("prefetch.window", "1:3"), ("storage.latency_us", "25,50")],
                        "prefetch_stall_us")
    done = []
    win.view("sweep").finished.connect(done.append)
    win.view("sweep").run()
    for _ in range(1200):
        if done:
            break
        QTest.qWait(50)
    settle(200)
    out["sweep"] = {"ran": bool(done), "before": before, "after": geometry(), "status": win.view("sweep").status.text(),
                    "status_width": win.view("sweep").status.width()}
    win.close()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
