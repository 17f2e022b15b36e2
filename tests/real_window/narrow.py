"""The app in a real X window on a 1366 x 768 screen (run by tests/test_real_window_narrow.py
under Xvfb, platform xcb): the window maximised, every tab brought to the front from the tab
bar's menu (is it then inside the bar's visible part?), and a long error marked on a field
(do the docks and the centre keep their widths?). Prints one JSON object.

Usage: python -m tests.real_window.narrow SCENARIO"""
from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

LONG = ("must be at most 1048576 (the workload's unique blocks in "
        "traces/a_rather_long_directory_name/mooncake_conversation_trace_2024_full.jsonl)")


def main(path: str) -> int:
    from PySide6.QtCore import QSettings
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication, QMessageBox

    from app.shell.tab_reach import visible_span
    from app.shell.window import MainWindow

    app = QApplication.instance() or QApplication([])
    assert app.platformName() == "xcb", app.platformName()
    tmp = tempfile.mkdtemp()
    win = MainWindow(path, settings=QSettings(str(Path(tmp) / "kvviz.ini"), QSettings.IniFormat))
    win.ask_unsaved = lambda: QMessageBox.Discard
    win.showMaximized()
    QTest.qWaitForWindowExposed(win)
    for _ in range(2400):
        if win.result is not None and not win.runner.busy():
            break
        QTest.qWait(50)
    QTest.qWait(300)
    bar = win.tabs.tabBar()

    lo, hi = visible_span(bar)
    at_first = [lo <= bar.tabRect(i).left() and bar.tabRect(i).right() < hi for i in range(win.tabs.count())]
    tabs = []
    for i in range(win.tabs.count()):
        win.tab_menu.fill()
        act = win.tab_menu.menu_.actions()[i]
        if act.isEnabled():
            act.trigger()
            QTest.qWait(120)
        lo, hi = visible_span(bar)
        r = bar.tabRect(i)
        tabs.append({"title": win.tabs.tabText(i), "enabled": act.isEnabled(), "current": win.tabs.currentIndex() == i,
                     "inside": lo <= r.left() and r.right() < hi, "inside_at_first": at_first[i],
                     "docks": [win.params_dock.width(), win.metrics_dock.width()]})
    widths = lambda: {"params": win.params_dock.width(), "centre": win.centralWidget().width(),  # noqa: E731
                      "metrics": win.metrics_dock.width(), "form": win.panel._scroll.widget().width(),
                      "form_room": win.panel._scroll.viewport().width()}
    win.show_view("timeline")
    QTest.qWait(200)
    before = widths()
    field = win.panel.field_paths()[3]
    win.panel.mark_refused(field, LONG)
    QTest.qWait(300)
    after = widths()
    shot = Path(tmp) / "narrow.png"
    win.grab().save(str(shot))
    out = {"platform": app.platformName(), "window": [win.width(), win.height()],
           "screen": [win.screen().availableGeometry().width(), win.screen().availableGeometry().height()],
           "bar_needs": bar.sizeHint().width(), "bar_has": bar.width(), "tabs": tabs,
           "field": field, "before": before, "after": after, "screenshot": str(shot)}
    win.close()
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
