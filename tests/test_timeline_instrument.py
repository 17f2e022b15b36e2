"""The timeline as an instrument (issue 22): hover and click any mark or span for its fields,
measure Δt between two cursors that snap to event edges, select a range, find a job, read
times in the unit of the visible span, keep the cursor across re-runs."""
import numpy as np
import pytest

pytest.importorskip("PySide6")
pytestmark = pytest.mark.gui

from PySide6.QtCore import QPointF, Qt  # noqa: E402

from app.views.timeline_query import Event, find, nearest_edge, range_stats  # noqa: E402
from kvviz.export.axis import tick_decimals  # noqa: E402
from kvviz.trace import TraceBuilder  # noqa: E402

from .conftest import shown_timeline, wait_new_result  # noqa: E402


class _Result:  # what the timeline reads of a Result
    def __init__(self, trace):
        self.trace, self.metrics = trace, {}
        self.scenario = type("Scenario", (), {"kind": "a test's"})()  # no mechanism: plain "time (unit)"


shown = shown_timeline  # conftest's: the Timeline tab's view showing a result


def scene_at(tl, x_ns, y):
    return tl.viewbox.mapViewToScene(QPointF(x_ns / tl.scale, y))


def test_hovering_a_mark_names_its_position(qtbot, bundled):
    tl = shown(qtbot, bundled["rope_prefetch_16"])
    tl.viewbox.setXRange(20, 30, padding=0)  # µs: the reads at 26 and 27 µs
    gpu = 0
    tl.plot.scene().sigMouseMoved.emit(scene_at(tl, 26_000, gpu - 0.35))  # on the bar's top edge
    places = tick_decimals(tl.ns_per_pixel() / 1000)  # µs, with the digits one pixel needs
    assert tl.info.text() == f"GPU · attention: hit · pos 7 at {26:.{places}f} µs"


def test_hovering_an_attention_store_mark_names_its_session(qtbot, bundled_small):
    r = bundled_small["attention_store_sharegpt"]
    tl = shown(qtbot, r)
    tr = r.trace
    hit = tr.instants_of("hit")[3]
    t = int(hit["t"])
    tl.viewbox.setXRange((t - 50_000_000) / tl.scale, (t + 50_000_000) / tl.scale, padding=0)
    tl.plot.scene().sigMouseMoved.emit(scene_at(tl, t, int(hit["lane"]) - 0.35))
    facts = tr.facts_of(hit)
    assert f"job {facts['job']} turn {facts['turn']}" in tl.info.text()


def test_clicking_a_span_shows_its_bytes_and_tiers(qtbot, bundled):
    r = bundled["engram_qwen3_32b_cxl"]
    tl = shown(qtbot, r)
    tr = r.trace
    lane = next(i for i, n in enumerate(tr.lanes["name"].tolist()) if n.startswith("CXL pool →"))
    f = tr.spans[(tr.spans["lane"] == lane) & (tr.spans["kind"] == 1)][0]  # its first fetch
    tl.viewbox.setXRange(f["start"] / tl.scale, f["end"] / tl.scale * 1.02 + 1e-6, padding=0.05)
    pos = tl.plot.mapFromScene(scene_at(tl, (f["start"] + f["end"]) / 2, lane))
    assert not tl.details_pane.isVisible()  # the plot has the whole width until there is something to show
    qtbot.mouseClick(tl.plot.viewport(), Qt.LeftButton, pos=pos)
    assert tl.details_pane.isVisible()
    assert tl.selection is not None and tl.selection.table == "spans"
    text = tl.details_text()
    facts = tr.facts_of(f)
    assert f"{facts['bytes']:,} B" in text and "CXL → HBM" in text
    assert "feeds compute on GPU · layers" in text  # the layer that reads these rows
    qtbot.keyClick(tl, Qt.Key_Escape)
    assert tl.selection is None and not tl.details_pane.isVisible()


def test_the_issue_mark_is_the_legends_triangle(qtbot, bundled):
    tl = shown(qtbot, bundled["rope_prefetch_16"])
    item = next(it for it, _, _ in tl.marks if it.opts["symbol"] == "t" and it.opts["brush"].color().name()
                == pg_colour("issue"))
    assert item.opts["size"] >= 9  # a ▼ as the legend draws it, not a 1–2 px sliver


def pg_colour(kind):
    from PySide6.QtGui import QColor

    from kvviz.palette import instant_color
    return QColor(instant_color(kind)).name()


def test_delta_t_between_two_cursors_is_the_events_difference(qtbot, bundled):
    r = bundled["rope_prefetch_16"]
    tl = shown(qtbot, r)
    tl.viewbox.setXRange(0, 60, padding=0)
    px = tl.ns_per_pixel()
    tl.place_cursor(0 + 3 * px)                 # near the first fetch's start: snaps to 0
    tl.place_second_cursor(27_000 - 2.5 * px)   # near the second read step at 27 µs
    assert tl.delta_ns() == 27_000
    places = tick_decimals(px / 1000)
    assert tl.cursor_b.label.toPlainText() == f"Δt = +{27:.{places}f} µs"
    assert nearest_edge(r.trace, 12_345, 10) == 12_345  # nothing near: stays


def test_a_range_counts_spans_busy_time_and_bytes():
    tb = TraceBuilder()
    a = tb.lane("link", "PCIe")
    tb.span(a, 0, 10, "load", bytes=100)
    tb.span(a, 5, 20, "load", bytes=50)   # overlaps the first: busy counts 0..20 once
    tb.span(a, 30, 40, "load")
    tb.instant(a, 35, "land")
    stats = range_stats(tb.build(), 8, 35)
    assert [(s.spans, s.marks, s.busy_ns, s.bytes) for s in stats] == [(3, 1, 12 + 5, 150)]


def test_a_search_for_a_job_jumps_to_it(qtbot, bundled_small):
    r = bundled_small["attention_store_sharegpt"]
    tl = shown(qtbot, r)
    tr = r.trace
    job = int(tr.instants_of("hit")[-1]["ref"])
    tl.search.setText(f"job {job}")
    qtbot.keyClick(tl.search, Qt.Key_Return)
    assert tl.matches and tl.selection == tl.matches[0]
    assert all(tr.facts_of(e.record(tr))["job"] == job for e in tl.matches)
    t0, t1 = tl.matches[0].start(tr), tl.matches[0].end(tr)
    lo, hi = tl.visible_range_ns()
    assert lo <= t0 and t1 <= hi and hi - lo < tr.t_end / 10  # in view, and zoomed to it
    assert f"job (session)\n{job:,}" in tl.details_text()
    assert tl.match_label.text() == f"1 of {len(tl.matches):,}"
    assert find(tr, "SESSION " + str(job)) == tl.matches  # the same key, any case
    assert find(tr, "save new") and not find(tr, "no such label")


def test_axis_unit_follows_the_visible_span(qtbot):
    tb = TraceBuilder()
    lane = tb.lane("gpu", "GPU")
    for i in range(20):
        tb.span(lane, i * 100_000_000_000, i * 100_000_000_000 + 7_000, "compute")  # 2,000 s run
    tl = shown(qtbot, _Result(tb.build()))
    axis = tl.plot.getPlotItem().getAxis("bottom")
    tl.viewbox.setXRange(0, 1000e9 / tl.scale, padding=0)
    assert axis.labelText == "time (s)" and tl.fmt.unit == "s"
    tl.viewbox.setXRange(0, 10_000 / tl.scale, padding=0)  # 10 µs
    assert axis.labelText == "time (µs)"
    tl.plot.scene().sigMouseMoved.emit(scene_at(tl, 3_000, 0))
    places = tick_decimals(tl.ns_per_pixel() / 1000)  # the digits one pixel needs
    assert places >= 2 and tl.info.text() == f"gpu: compute {0:.{places}f}–{7:.{places}f} µs ({7:.{places}f} µs)"
    strings = axis.tickStrings([0, 5_000 / tl.scale], axis.scale, 5_000 / tl.scale)
    assert strings == ["0", "5"]
    tl.place_cursor(4_000, snap=False)  # t = 0 at the cursor
    tl.relative.setChecked(True)
    assert axis.labelText == "time (µs) from the cursor"
    assert tl.time_cursor.label.toPlainText() == f"{0:.{places}f} µs"
    tl.plot.scene().sigMouseMoved.emit(scene_at(tl, 3_000, 0))
    assert tl.info.text() == f"gpu: compute {-4:.{places}f}–{3:.{places}f} µs ({7:.{places}f} µs)"


def test_the_cursor_keeps_its_time_across_a_rerun(window, qtbot):
    tl = window.view("timeline")
    tl.place_cursor(26_000, snap=False)
    old = window.result
    window.panel.set_value("storage.latency_us", 30.0)
    wait_new_result(qtbot, window, old)
    assert tl.result is window.result and tl.cursor_ns() == pytest.approx(26_000)


def test_events_of_the_query_module_report_their_fields(bundled):
    tr = bundled["rope_prefetch_16"].trace
    ev = Event("spans", int(np.flatnonzero(tr.spans["kind"] == 1)[0]))
    assert ev.kind(tr) == "fetch" and ev.start(tr) == 0 and ev.end(tr) == 25_000


def test_the_view_follows_a_moved_region_of_interest_unless_zoomed():
    """An edit that moves the mechanism's region of interest takes the kept view with it; once
    the user has zoomed, the zoom stays."""
    from app.views.time_range import SharedTimeRange

    class VB:  # the one thing `record` asks of a ViewBox
        def __init__(self, lo, hi):
            self.r = (lo, hi)

        def viewRange(self):  # noqa: N802
            return [self.r, (0, 1)]

    kept = SharedTimeRange()
    kept.follow((100, 200))
    assert kept.ns == (100, 200)
    kept.record(VB(100, 200), 1.0, 1000)  # the same range drawn again: no user move
    kept.follow((300, 400))  # the region moved (an edit): the view goes with it
    assert kept.ns == (300, 400)
    kept.record(VB(310, 330), 1.0, 1000)  # the user zooms
    kept.follow((500, 600))
    assert kept.ns == (310, 330)  # kept
    kept.follow((500, 600))
    assert kept.ns == (310, 330)


def test_a_typed_lane_and_time_name_one_event():
    from app.views.timeline_query import event_on, lane_named
    tb = TraceBuilder()
    a, b = tb.lane("CXL pool → GPU · L2 rows", "CXL"), tb.lane("GPU · layers", "GPU")
    tb.span(a, 100, 300, "fetch")
    tb.instant(a, 100, "issue")
    tb.instant(a, 300, "land")
    tb.span(b, 0, 500, "compute")
    tr = tb.build()
    assert lane_named(tr, "l2 rows") == a and lane_named(tr, "GPU · layers") == b  # a part, any case; the whole
    assert "2 lanes" in lane_named(tr, "gpu") and "no lane" in lane_named(tr, "ssd")
    fetch = int(np.flatnonzero(tr.spans["lane"] == a)[0])
    land = int(np.flatnonzero(tr.instants["t"] == 300)[0])
    assert event_on(tr, a, 150, 60) == Event("spans", fetch)   # the span holding t, not the mark 50 ns off
    assert event_on(tr, a, 320, 30) == Event("instants", land)  # after the span: the land mark near it
    assert event_on(tr, a, 400, 30) is None                    # nothing that close


def test_show_at_selects_a_fetch_and_measures_the_slack(qtbot, bundled):
    # the Engram CXL run: Δt from the fetch's land to layer 2's start is its slack
    r = bundled["engram_qwen3_32b_cxl"]
    tl = shown(qtbot, r)
    tl.viewbox.setXRange(0, 143_000 / tl.scale, padding=0)  # the first decode step's window
    assert tl.show_at(("L2 rows", 57_000), (58_000, 112_500)) is None
    tr = r.trace
    sel = tl.selection
    assert sel is not None and sel.kind(tr) == "fetch" and "L2 rows" in tr.lanes["name"][sel.lane(tr)]
    assert tl.cursor_ns() == sel.end(tr)  # 58 µs snapped to the land at the fetch's end
    assert tl.delta_ns() == pytest.approx(r.metrics["slack_us"] * 1000)
    text = tl.details_text()
    fetch_us = (sel.end(tr) - sel.start(tr)) / 1000
    assert f"{fetch_us:g} µs" in text  # 1.839 µs to the ns, not the view's one decimal
    assert tl.cursor_b.label.toPlainText() == f"Δt = +{r.metrics['slack_us']:g} µs"
    assert "no lane" in tl.show_at(("no such lane", 0), None)


def test_a_lane_of_marks_alone_draws_them_on_its_centre_line(qtbot):
    # marks sit on the top edge of a lane's bars; a lane with no bars has them on its label's line
    from app.views.timeline import MARK_ON_BAR
    tb = TraceBuilder()
    bars, marks = tb.lane("bars", "GPU"), tb.lane("marks only", "dram")
    tb.span(bars, 0, 1000, "compute")
    tb.instant(bars, 500, "hit", pos=3)
    tb.instant(marks, 400, "hit", job=7, items=2)
    tl = shown(qtbot, _Result(tb.build()))
    tl._thin_marks()
    item = next(item for item, _, _ in tl.marks)
    ys = dict(zip(item.data["x"].tolist(), item.data["y"].tolist()))
    assert ys[500 / tl.scale] == pytest.approx(bars + MARK_ON_BAR) and ys[400 / tl.scale] == pytest.approx(marks)
    tl.plot.scene().sigMouseMoved.emit(scene_at(tl, 400, marks))  # on the label's line: the mark
    assert tl.info.text().startswith("marks only: hit · job 7")
    ev = tl.mark_at(400 / tl.scale, marks)
    tl.select(ev)
    assert "job (session)\n7" in tl.details_text()


def test_the_lane_names_get_their_room_back_when_the_pane_closed_on_a_hidden_tab(qtbot, bundled):
    """Seen at 1366 px: the details pane open (the names' column narrowed with the plot), then
    another scenario opened while another tab was in front (the pane closed there); back on the
    Timeline the plot had its whole width again but the names kept the narrow column."""
    from PySide6.QtWidgets import QTabWidget, QWidget

    from app.views.timeline import TimelineView
    r = bundled["attention_store_mooncake"]
    tabs = QTabWidget()
    qtbot.addWidget(tabs)
    tl = TimelineView(instrument=True)
    tabs.addTab(tl, "Timeline")
    tabs.addTab(QWidget(), "other")
    tabs.resize(1000, 500)
    tabs.show()
    tl.set_result(r)
    qtbot.waitExposed(tl)
    qtbot.wait(50)
    wide = tl.lane_axis.width()
    tl.show_pane(True)
    qtbot.waitUntil(lambda: tl.lane_axis.width() < wide)  # the plot narrowed: so did the names
    tabs.setCurrentIndex(1)
    tl.show_pane(False)  # (a new scenario closes it) while the Timeline is not in front
    qtbot.wait(50)
    tabs.setCurrentIndex(0)
    qtbot.waitUntil(lambda: tl.lane_axis.width() == wide, timeout=2000)
