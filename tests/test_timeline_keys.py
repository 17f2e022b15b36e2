"""The timeline's keyboard and cursor as in Perfetto or Nsight (issue 33, item 4): Ctrl+F focuses
the search, Enter / Shift+Enter step through its hits and put the cursor on them, a click on the
time ruler places the cursor, W/S zoom and A/D pan, keys typed in the search box stay text."""
import pytest

pytest.importorskip("PySide6")
pytestmark = pytest.mark.gui

from PySide6.QtCore import QPointF, Qt  # noqa: E402

from .conftest import shown_timeline  # noqa: E402

shown = shown_timeline  # conftest's: the Timeline tab's view showing a result


def x_range(tl):
    return tuple(tl.viewbox.viewRange()[0])


def test_ctrl_f_focuses_the_timelines_search_from_another_tab(window, qtbot):
    tl = window.view("timeline")
    other = next(i for i in range(window.tabs.count()) if window.tabs.widget(i) is not tl
                 and window.tabs.isTabEnabled(i))
    window.tabs.setCurrentIndex(other)
    window.activateWindow()
    qtbot.waitActive(window)
    window.panel.setFocus()
    qtbot.keyClick(window, Qt.Key_F, Qt.ControlModifier)
    qtbot.waitUntil(lambda: tl.search.hasFocus())
    assert window.tabs.currentWidget() is tl


def test_enter_steps_to_the_next_hit_and_shift_enter_back(qtbot, bundled):
    r = bundled["rope_prefetch_16"]
    tr = r.trace
    tl = shown(qtbot, r)
    assert tl.focus_search()
    qtbot.keyClicks(tl.search, "pos 7")
    qtbot.keyClick(tl.search, Qt.Key_Return)
    assert len(tl.matches) >= 2
    first, second = tl.matches[0], tl.matches[1]
    assert tl.selection == first and tl.cursor_ns() == pytest.approx(first.start(tr))
    lo, hi = tl.visible_range_ns()
    assert lo <= first.start(tr) <= hi  # scrolled to it
    qtbot.keyClick(tl.search, Qt.Key_Return)
    assert tl.selection == second and tl.cursor_ns() == pytest.approx(second.start(tr))
    qtbot.keyClick(tl.search, Qt.Key_Return, Qt.ShiftModifier)
    assert tl.selection == first and tl.cursor_ns() == pytest.approx(first.start(tr))
    assert tl.match_label.text() == f"1 of {len(tl.matches):,}"
    qtbot.keyClick(tl.search, Qt.Key_Escape)  # clears the search
    assert tl.search.text() == "" and not tl.matches


def test_a_click_on_the_ruler_places_the_cursor_there(qtbot, bundled):
    tl = shown(qtbot, bundled["rope_prefetch_16"])
    tl.viewbox.setXRange(0, 60, padding=0)  # µs
    assert tl.cursor_ns() == 0
    axis = tl.time_axis.mapRectToScene(tl.time_axis.mapRectFromParent(tl.time_axis.geometry()))
    scene = QPointF(axis.left() + 0.37 * axis.width(), axis.top() + 0.3 * axis.height())
    want = tl.viewbox.mapSceneToView(scene).x() * tl.scale
    qtbot.mouseClick(tl.plot.viewport(), Qt.LeftButton, pos=tl.plot.mapFromScene(scene))
    assert abs(tl.cursor_ns() - want) <= tl.ns_per_pixel()
    assert tl.selection is None  # a click on the ruler selects nothing


def test_w_zooms_in_and_a_pans_left_s_and_d_back(qtbot, bundled):
    tl = shown(qtbot, bundled["rope_prefetch_16"])
    tl.viewbox.setXRange(40, 80, padding=0)
    tl.place_cursor(60_000, snap=False)
    tl.plot.setFocus()
    qtbot.keyClick(tl.plot, Qt.Key_W)
    lo, hi = x_range(tl)
    assert hi - lo < 40 and lo < 60 < hi  # narrower, around the cursor
    assert (60 - lo) / (hi - lo) == pytest.approx(0.5)  # the cursor stays where it was on screen
    qtbot.keyClick(tl.plot, Qt.Key_A)
    lo2, hi2 = x_range(tl)
    assert lo2 < lo and hi2 < hi and hi2 - lo2 == pytest.approx(hi - lo)
    qtbot.keyClick(tl.plot, Qt.Key_D)
    assert x_range(tl) == pytest.approx((lo, hi))
    qtbot.keyClick(tl.plot, Qt.Key_S)
    lo3, hi3 = x_range(tl)
    assert hi3 - lo3 == pytest.approx(40)


def test_keys_typed_in_the_search_box_do_not_zoom(qtbot, bundled):
    tl = shown(qtbot, bundled["rope_prefetch_16"])
    tl.viewbox.setXRange(40, 80, padding=0)
    before = x_range(tl)
    tl.focus_search()
    qtbot.keyClicks(tl.search, "wasd")
    assert tl.search.text() == "wasd" and x_range(tl) == pytest.approx(before)


def test_help_lists_the_shortcuts(window, qtbot):
    window.act_shortcuts.trigger()
    dlg = window.shortcuts_dialog
    qtbot.waitExposed(dlg)
    text = dlg.text.text()
    for keys in ("Ctrl+F", "W / S", "A / D", "Shift+Enter", "Escape", "time ruler"):
        assert keys in text
    dlg.close()
