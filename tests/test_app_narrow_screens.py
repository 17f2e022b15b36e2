"""A laptop's 1366 x 768 and a desktop's 1920 x 1080 (issue 33, item 7): every tab reachable
(the bar scrolls; its menu lists every tab), and a field's error wraps under the field instead
of widening the form past the Parameters dock. Checked by geometry, on the drawn window."""
import pytest

pytest.importorskip("PySide6")
pytestmark = pytest.mark.gui

from app.shell.tab_reach import visible_span  # noqa: E402

SIZES = [(1366, 768), (1920, 1080)]
LONG = ("must be at most 1048576 (the workload's unique blocks in "
        "traces/a_rather_long_directory_name/mooncake_conversation_trace_2024_full.jsonl)")


def _settle(qtbot, win):
    qtbot.wait(50)  # the layout's posted events (dock fits, the bar's scroll) run
    win.grab()  # drawn: the geometry read below is what a screenshot shows


@pytest.mark.parametrize("size", SIZES)
def test_every_tab_is_reachable_from_the_bars_menu(window, qtbot, size):
    window.resize(*size)
    _settle(qtbot, window)
    assert window.width() == size[0]
    bar = window.tabs.tabBar()
    menu = window.tab_menu
    assert menu.isVisible() and menu.geometry().left() >= bar.geometry().right()  # beside the bar, not over it
    if size[0] == 1366:  # the names do not all fit here: the bar scrolls (else this test shows little)
        assert bar.sizeHint().width() > bar.width()
    for i in range(window.tabs.count()):
        menu.fill()
        act = menu.menu_.actions()[i]
        assert act.text() == window.tabs.tabText(i)
        assert act.isEnabled() == window.tabs.isTabEnabled(i)
        if not act.isEnabled():
            assert act.toolTip()  # the reason, as the tab's own tooltip says it
            continue
        act.trigger()
        _settle(qtbot, window)
        assert window.tabs.currentIndex() == i
        lo, hi = visible_span(bar)
        r = bar.tabRect(i)
        assert lo <= r.left() and r.right() < hi, (i, window.tabs.tabText(i), r, (lo, hi))


@pytest.mark.parametrize("size", SIZES)
def test_a_field_error_wraps_and_keeps_every_width(window, qtbot, size):
    window.resize(*size)
    _settle(qtbot, window)
    panel = window.panel
    scroll = panel._scroll
    before = (window.params_dock.width(), window.centralWidget().width(), window.metrics_dock.width())
    assert scroll.widget().width() <= scroll.viewport().width()
    field = "cache.slots"
    window.panel.mark_refused(field, LONG)
    _settle(qtbot, window)
    box = panel.widget_for(field).parentWidget()
    assert box.message.isVisible() and box.message.message().endswith(LONG)
    # wrapped: several lines, no wider than the field's box
    assert box.message.height() > 2 * box.message.fontMetrics().lineSpacing()
    assert box.message.geometry().right() <= box.width()
    # the form did not grow sideways (no editor cut at the dock's edge), nor did any dock or the plot
    assert scroll.widget().width() <= scroll.viewport().width()
    assert (window.params_dock.width(), window.centralWidget().width(), window.metrics_dock.width()) == before
    window.panel.clear_refused()
    _settle(qtbot, window)
    assert not box.message.isVisible()

