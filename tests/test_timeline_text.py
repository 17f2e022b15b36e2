"""The timeline's words: labels stay inside the plot, the axis says its unit once, the legend
lists each kind once, the status bar counts in good English (issue 12, "Figures")."""
import numpy as np
import pyqtgraph as pg
import pytest

pytest.importorskip("PySide6")
pytestmark = pytest.mark.gui

from PySide6.QtCore import QRectF  # noqa: E402
from PySide6.QtGui import QFont, QFontMetrics, QTransform  # noqa: E402

from app.views.timeline import SpanLayer, TimelineView  # noqa: E402
from kvviz import load_scenario, simulate  # noqa: E402

from .conftest import SCENARIOS, park_mouse, wait_new_result  # noqa: E402


class _RecordingPainter:
    """What _paint_labels asks of a QPainter, recording where text goes."""

    def __init__(self, xf: QTransform):
        self.xf, self.rects = xf, []

    def transform(self):
        return self.xf

    def fontMetrics(self):  # noqa: N802
        return QFontMetrics(QFont())

    def drawText(self, rect, flags, text):  # noqa: N802
        self.rects.append((QRectF(rect), text))

    def save(self): pass
    def restore(self): pass
    def resetTransform(self): pass  # noqa: N802
    def setPen(self, pen): pass  # noqa: N802


def on_screen(qtbot, what=None, size=(900, 400)) -> TimelineView:
    """A TimelineView shown at `size`, showing `what`: a bundled scenario's name, or a result."""
    tl = TimelineView()
    qtbot.addWidget(tl)
    tl.resize(*size)
    tl.show()
    if what is not None:
        tl.set_result(simulate(load_scenario(SCENARIOS / f"{what}.toml")) if isinstance(what, str) else what)
        qtbot.wait(50)
    return tl


def test_a_label_of_a_span_starting_left_of_the_view_stays_in_the_view(qtbot):
    layer = SpanLayer("#0072B2", np.array([0]), np.array([0.0]), np.array([100.0]), ["a long span label"])
    xf = QTransform.fromScale(10, 20) * QTransform.fromTranslate(200, 0)  # data x 0 at device x 200
    p = _RecordingPainter(xf)
    layer._paint_labels(p, 40.0, 100.0)  # the view shows 40..100: device x 600..1200
    assert p.rects and all(r.left() >= 600 for r, _ in p.rects)


def test_the_time_axis_shows_its_unit_without_a_scale_factor(qtbot):
    tl = on_screen(qtbot, "engram_qwen3_32b_cxl")
    tl.plot.getPlotItem().getViewBox().setXRange(0.0, 0.002, padding=0)  # 2 µs of a ms axis
    qtbot.wait(20)
    assert "(x" not in tl.plot.getPlotItem().getAxis("bottom").labelString()


def test_a_kind_that_is_both_a_span_and_a_mark_is_listed_as_both_once(qtbot):
    tl = TimelineView()
    qtbot.addWidget(tl)
    tl.set_result(simulate(load_scenario(SCENARIOS / "engram_qwen3_32b_cxl.toml")))
    words = [w.split("</span>&nbsp;")[-1] for w in tl.legend.text().split("&nbsp;&nbsp; ")]
    assert "issue" in words and "issue mark" in words and len(words) == len(set(words))


def test_one_check_is_said_in_the_singular(window, qtbot, tmp_path):
    f = tmp_path / "one.toml"
    f.write_text('kind = "rope_window"\n[[expect]]\nmetric = "speedup"\nequals = 8.0\n')
    old = window.result
    window.open(str(f))
    wait_new_result(qtbot, window, old)
    assert window.status.text().endswith("; 1 check passes")


def _hairlines():
    from kvviz.trace import TraceBuilder
    tb = TraceBuilder()
    lane = tb.lane("GPU · jobs", "GPU")
    for k in range(1000):  # a 1 ns job every µs: zoomed out, each is far under a pixel
        tb.span(lane, k * 1000, k * 1000 + 1, "prefill", f"job {k}", ref=k)

    class R:
        trace, metrics = tb.build(), {}
        scenario = load_scenario(SCENARIOS / "rope_prefetch_16.toml")
    return R()


def test_hover_and_pick_find_a_span_narrower_than_the_pixel_it_is_drawn_in(qtbot):
    tl = on_screen(qtbot, _hairlines())
    x = 500.5  # µs: between job 500 (at 500.000) and job 501, within a pixel of job 500
    name, span = tl.span_at(x, 0.0)
    assert span is not None and int(span["ref"]) in (500, 501)
    tl.plot.getPlotItem().getViewBox().setXRange(500.0, 501.0, padding=0)  # zoomed in, a gap is a gap
    qtbot.wait(20)
    assert tl.span_at(x, 0.0)[1] is None


def test_the_time_axis_reads_in_its_unit_after_switching_runs(qtbot):
    """pyqtgraph worked out an SI scale for the unit-less axis from the previous run's range (a
    0.25-ms run: ×1000) and kept it: cxl's 0.11 ms read 20…120 'ms' in a real window."""
    tl = on_screen(qtbot)
    for name in ("rope_prefetch_16", "engram_qwen3_32b_rdma", "engram_qwen3_32b_cxl"):
        tl.set_result(simulate(load_scenario(SCENARIOS / f"{name}.toml")))
        qtbot.wait(20)
        axis = tl.plot.getPlotItem().getAxis("bottom")
        lo, hi = axis.range
        (spacing, values), *_ = axis.tickValues(lo, hi, axis.width())
        shown = [float(s) for s in axis.tickStrings(values, axis.autoSIPrefixScale * axis.scale, spacing)]
        assert shown and all(lo - spacing <= v <= hi + spacing for v in shown), (name, lo, hi, shown)
        tl.plot.getPlotItem().getViewBox().setXRange(0.05, 0.25, padding=0)  # as the app opens rdma: below 1
        qtbot.wait(20)


def test_the_hover_line_follows_a_view_that_moves_under_a_still_mouse(qtbot):
    """After Home the tooltip still named the span that had been under the mouse (real window)."""
    tl = on_screen(qtbot, "rope_prefetch_16")
    vb = tl.plot.getPlotItem().getViewBox()
    vb.setXRange(0, 25, padding=0)
    qtbot.wait(20)
    lane = tl.result.trace.lanes["name"].tolist().index("naive · serial demand fetch")
    at = vb.mapViewToScene(pg.Point(12, lane))
    park_mouse(qtbot, tl.plot, at)
    tl._on_move(at)
    before = tl.info.text()
    assert "pos 0" in before
    vb.setXRange(100, 125, padding=0)  # the view moves; the mouse does not
    qtbot.wait(20)
    assert tl.info.text() != before and "pos 4" in tl.info.text()


def test_the_time_cursors_label_sits_below_the_last_lanes_bars(qtbot):
    """With six lanes or more the '0.00' label was drawn over the last lane's bars."""
    from app.views.timeline import BAR
    tl = on_screen(qtbot, "ladder_simulated", size=(900, 500))
    last = len(tl.result.trace.lanes) - 1
    assert last + 1 >= 6
    vb = tl.plot.getPlotItem().getViewBox()
    bar_bottom = vb.mapViewToScene(pg.Point(0, last + BAR / 2)).y()
    assert tl.time_cursor.label.sceneBoundingRect().top() >= bar_bottom


def test_long_lane_names_take_at_most_a_third_of_the_plot(qtbot):
    """AttentionStore's lane names took half a 610-px plot; they are cut at the right now."""
    from kvviz.trace import TraceBuilder
    b = TraceBuilder()
    lane = b.lane("PCIe · layer loads of turn 14623's iteration, and then some more words", "PCIe")
    b.span(lane, 0, 1000, "fetch", "x")
    from types import SimpleNamespace

    from kvviz.result import Result
    tl = on_screen(qtbot, Result(scenario=SimpleNamespace(kind="synthetic", name="s"), trace=b.build(), metrics={}),
                   size=(640, 400))
    axis = tl.lane_axis
    assert axis.width() <= max(120, 0.3 * tl.width()) + 1
    (name,) = axis.tickStrings([0], 1, 1)
    assert "…" in name and QFontMetrics(axis.font()).horizontalAdvance(name) <= axis.width()


def test_a_current_view_figure_leaves_out_the_hover_line(qtbot):
    """The Timeline's "Current View as PNG" ended in the grey strip of the hover line, and its
    cursor label said "0.00" with no unit."""
    from PySide6.QtGui import QImage

    from app.exporting import render_widget
    tl = on_screen(qtbot, "engram_qwen3_32b_cxl", size=(700, 500))
    tl.info.setText("a hover line")
    img = QImage.fromData(render_widget(tl, "png"))
    bottom = {img.pixelColor(x, img.height() - 2).name() for x in range(0, img.width(), 7)}
    assert bottom == {"#ffffff"}, bottom  # the plot's white, down to the edge
    assert tl.info.isVisible() and tl.info.text() == "a hover line"  # back on screen
    assert tl.time_cursor.label.toPlainText().endswith(" ms")  # the unit of the visible span
