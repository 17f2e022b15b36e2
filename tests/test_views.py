"""The views in app/views, headless (pytest-qt): occupancy, counters, ladder, RoPE bound."""
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("PySide6")
pytestmark = pytest.mark.gui

import pyqtgraph as pg  # noqa: E402
from PySide6.QtCore import QPoint, QPointF, Qt  # noqa: E402
from PySide6.QtGui import QImage  # noqa: E402

from app.tabs import BarsTab, TabContext  # noqa: E402
from app.views import CountersView, LadderView, OccupancyView, PoliciesView, RopeBoundView  # noqa: E402
from app.views.counters import step_xy  # noqa: E402
from app.views.occupancy import EMPTY, LUT, MAX_COLS, MAX_ROWS, _lexsort, item_colour_index, item_rgba, occupancy_grid  # noqa: E402
from app.views.rung_table import PCT_COL  # noqa: E402
from app.views.timeline import TimelineView  # noqa: E402
from kvviz.export.axis import tick_decimals  # noqa: E402
from kvviz.palette import tier_color  # noqa: E402
from kvviz.result import Result  # noqa: E402
from kvviz.trace import RESIDENCY_DTYPE, TraceBuilder  # noqa: E402

from .conftest import BUNDLED, park_mouse  # noqa: E402

# the timeline too: the window opens a smaller ShareGPT run (test_app), so the full one is drawn here
VIEWS = (OccupancyView, CountersView, LadderView, PoliciesView, RopeBoundView, TimelineView)


@pytest.fixture
def results(bundled):
    return bundled  # by name, each simulated on first use, once a session (conftest.py)


def shown(qtbot, cls, result=None, size=(1200, 700)):
    v = cls()
    qtbot.addWidget(v)
    v.resize(*size)
    v.show()
    if result is not None:
        v.set_result(result)
    qtbot.wait(10)
    return v


def synthetic(trace) -> Result:
    return Result(scenario=SimpleNamespace(kind="synthetic", name="synthetic"), trace=trace, metrics={})


def tiny_trace():
    """2 slots over 100 ns: slot 0 holds item 7 for 0–46 ns then item 8; slot 1 holds item 3
    for 0–4 ns, nothing until 20 ns, then item 9."""
    tb = TraceBuilder(slots=2, item_name="token")
    tb.residency(0, 0, 46, 7)
    tb.residency(0, 46, 100, 8)
    tb.residency(1, 20, 100, 9)
    tb.residency(1, 0, 4, 3)
    return tb.build()


def rgb_array(widget) -> np.ndarray:
    img = widget.grab().toImage().convertToFormat(QImage.Format_RGBA8888)
    a = np.frombuffer(img.constBits(), dtype=np.uint8).reshape(img.height(), img.bytesPerLine() // 4, 4)
    return a[:, :img.width(), :3].copy()  # copy: the QImage owns the buffer


def plot_area(widget, graphics_view, view_box) -> np.ndarray:
    """The pixels of `widget` inside a view box (plot area, axes excluded)."""
    r = view_box.sceneBoundingRect()
    tl = graphics_view.viewport().mapTo(widget, graphics_view.mapFromScene(r.topLeft()))
    br = graphics_view.viewport().mapTo(widget, graphics_view.mapFromScene(r.bottomRight()))
    return rgb_array(widget)[tl.y() + 2:br.y() - 2, tl.x() + 2:br.x() - 2]


def has_colour(px: np.ndarray, hex_colour: str, tol: int = 12) -> bool:
    c = np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)])
    return bool((np.abs(px.astype(int) - c).max(axis=-1) <= tol).any())


def non_white_share(px: np.ndarray) -> float:
    return float((px.min(axis=-1) < 235).mean())


# --- every view, every bundled scenario -------------------------------------------------------

@pytest.mark.slow  # every bundled run as shipped: the ShareGPT one takes ~20 s (once a session)
def test_every_bundled_check_holds(results):
    # the seeds' claims the bundled scenarios check ([[expect]]), as `kvviz check scenarios/*.toml`
    checks = [(name, c) for name in BUNDLED for c in results[name].metrics.get("checks", ())]
    assert len(checks) >= 15 and [f"{n}: {c['metric']} = {c['actual']}" for n, c in checks if not c["ok"]] == []


@pytest.mark.slow  # every bundled run as shipped, once a session
@pytest.mark.parametrize("cls", VIEWS, ids=lambda c: c.__name__)
def test_each_view_accepts_every_bundled_result(qtbot, results, cls):
    v = shown(qtbot, cls)
    for name in BUNDLED:
        v.set_result(results[name])
        qtbot.wait(5)
    v.set_result(results[BUNDLED[0]])  # and again: redraws replace, they do not pile up


def test_views_say_when_a_run_has_nothing_for_them(qtbot, results):
    occ = shown(qtbot, OccupancyView, results["ladder_seed"])
    assert occ.stack.showing_note and "no residency records" in occ.stack.note.text()
    cnt = shown(qtbot, CountersView, results["ladder_seed"])
    assert cnt.stack.showing_note and "no counters" in cnt.stack.note.text()
    lad = shown(qtbot, LadderView, results["rope_prefetch_16"])
    assert lad.stack.showing_note and "ladder scenarios" in lad.stack.note.text()
    rb = shown(qtbot, RopeBoundView, results["engram_qwen3_32b_cxl"])
    assert rb.stack.showing_note and "rope_window and ladder" in rb.stack.note.text()
    # and the same views show content again for a run that has it
    occ.set_result(results["rope_prefetch_16"])
    rb.set_result(results["rope_prefetch_16"])
    assert not occ.stack.showing_note and not rb.stack.showing_note


# --- occupancy ------------------------------------------------------------------------------

def test_occupancy_grid_hand_checked():
    g = occupancy_grid(tiny_trace().residency, 2, 0, 100, max_cols=10)  # 10 ns bins
    # bin 4 (40–50 ns) of slot 0: item 7 for 6 ns, item 8 for 4 ns -> 7;
    # bin 0 of slot 1: item 3 for 4 of 10 ns, nothing else -> 3; bin 1: empty
    assert g.items.tolist() == [[7, 7, 7, 7, 7, 8, 8, 8, 8, 8],
                                [3, EMPTY, 9, 9, 9, 9, 9, 9, 9, 9]]
    assert g.block == 1 and g.bin_ns == 10


def test_occupancy_grid_ties_keep_their_order():
    """Two slots in one row (10 ns bins): of equal covers the record given later wins, full
    or part, and the one reaching further wins whatever the order — the picture as it was
    before the grid was vectorised. The packed sort gives np.lexsort's order, and falls back
    to it when the keys are too wide to pack."""
    r = np.array([(1, 0, 40, 5), (0, 0, 40, 6),    # bins 0-3, both whole: 6, the later
                  (1, 40, 80, 8), (0, 40, 60, 7),  # 8 reaches further than 7
                  (0, 80, 85, 1), (1, 85, 90, 2)], dtype=RESIDENCY_DTYPE)  # half of bin 8 each
    g = occupancy_grid(r, 2, 0, 100, max_cols=10, max_rows=1)
    assert g.items.tolist() == [[6, 6, 6, 6, 8, 8, 8, 8, 2, EMPTY]]
    assert (item_rgba(g.items) == LUT[item_colour_index(g.items)]).all()
    rng = np.random.default_rng(5)
    slot, start = rng.integers(0, 4, 1000), rng.integers(0, 30, 1000)
    for keys in ((start, slot), (start << 50, slot)):
        assert (_lexsort(keys) == np.lexsort(keys)).all()


def test_occupancy_view_image_matches_hand_checked_cells(qtbot):
    v = shown(qtbot, OccupancyView, synthetic(tiny_trace()))
    assert v.image.axisOrder == "row-major"
    assert v.grid.items.shape == (2, 100)  # 100 ns run: 1 ns bins, never finer
    expect = np.full((2, 100), EMPTY)
    expect[0, :46], expect[0, 46:] = 7, 8
    expect[1, :4], expect[1, 20:] = 3, 9
    assert (v.grid.items == expect).all()
    img = v.image.image
    assert img.shape == (2, 100, 4)
    assert (img[0, 10] == LUT[item_colour_index([7])[0]]).all()
    assert (img[1, 10] == LUT[0]).all()  # empty
    assert tuple(LUT[0][:3]) == (0xF2, 0xF2, 0xF2)
    # x in the timeline's unit (ns for a 100 ns run, as figures: kvviz.export.axis.time_unit),
    # y = slot rows centred on integers
    r = v.image.mapRectToParent(v.image.boundingRect())
    assert r.left() == pytest.approx(0) and r.right() == pytest.approx(100)
    assert r.top() == pytest.approx(-0.5) and r.bottom() == pytest.approx(1.5)
    # the digits one pixel needs (as on the timeline): ~104 ns over ~1,100 px, 2 places of ns
    assert v.fmt.unit == "ns" and v.fmt.places == 2
    assert v.describe(30, 1.0) == "slot 1, t = 30.00 ns, item = 9 (token)"
    assert v.describe(10, 1.1) == "slot 1, t = 10.00 ns, empty"
    assert v.describe(50, 0.0).endswith("item = 8 (token)")


def test_occupancy_colours_are_stable_per_item(qtbot):
    v = shown(qtbot, OccupancyView, synthetic(tiny_trace()))
    before = v.image.image[0, 10].copy()
    tb = TraceBuilder(slots=3)
    tb.residency(2, 0, 1000, 1)
    tb.residency(1, 0, 1000, 7)  # item 7 now elsewhere, among other items
    v.set_result(synthetic(tb.build()))
    assert (v.image.image[1, 0] == before).all()
    assert len({tuple(LUT[i]) for i in item_colour_index(np.arange(5, 16))}) == 11  # neighbours differ


def test_occupancy_shows_seed_residency_and_follows_timeline(qtbot, results):
    res = results["rope_prefetch_16"]
    occ = shown(qtbot, OccupancyView, res)
    assert occ.grid.shape == (8, 2000) and occ.unit == "µs"
    # token 12 enters slot 0 at 75 µs and stays to the end (400 µs)
    col = int(100_000 / occ.grid.bin_ns)
    assert occ.grid.items[0, col] == 12 and occ.grid.items[7].tolist() == [EMPTY] * 2000
    tl = TimelineView()
    qtbot.addWidget(tl)
    tl.set_result(res)
    occ.link_x(tl.plot)
    tl.plot.setXRange(100, 200, padding=0)
    (lo, hi), _ = occ.plot.getPlotItem().getViewBox().viewRange()
    assert (lo, hi) == pytest.approx((100, 200))
    occ.set_cursor(150.0)
    assert occ.time_cursor.isVisible() and occ.time_cursor.value() == 150.0
    occ.set_cursor(None)
    assert not occ.time_cursor.isVisible()
    # hover: a real mouse move over slot 2 at 150 µs (token 9 lives there from 25 µs on)
    vb = occ.plot.getPlotItem().getViewBox()
    qtbot.mouseMove(occ.plot.viewport(), occ.plot.mapFromScene(vb.mapViewToScene(QPointF(150, 2))))
    assert occ.info.text().startswith("slot 2, t = 150.") and occ.info.text().endswith("item = 9 (token position)")


def test_occupancy_rebins_when_zoomed(qtbot, results):
    occ = shown(qtbot, OccupancyView, results["engram_qwen3_32b_cxl"])
    assert occ.unit == "ms" and occ.grid.shape == (512, 2000)
    coarse = occ.grid.bin_ns
    occ.plot.setXRange(0.05, 0.2, padding=0)  # the first step's staging window
    qtbot.waitUntil(lambda: occ.grid.bin_ns < coarse / 20, timeout=2000)
    assert occ.grid.shape[1] <= MAX_COLS
    assert (occ.grid.items != EMPTY).mean() > 0.3


def test_occupancy_of_a_million_records_is_bounded(qtbot):
    """Speed sanity (not timed): the image never grows with the number of records."""
    n, slots = 1_000_000, 50_000
    rng = np.random.default_rng(1)
    block = np.zeros(n, dtype=RESIDENCY_DTYPE)
    block["slot"] = np.arange(n) % slots
    block["start"] = (np.arange(n) // slots) * 10_000 + rng.integers(0, 1000, n)
    block["end"] = block["start"] + 8000
    block["item"] = rng.integers(0, 10**9, n)
    tb = TraceBuilder(slots=slots)
    tb.add_block("residency", block)
    v = shown(qtbot, OccupancyView, synthetic(tb.build()))
    rows, cols = v.grid.shape
    assert rows <= MAX_ROWS and cols <= MAX_COLS and v.grid.block == 49
    assert v.image.image.shape[:2] == (rows, cols)
    assert (v.grid.items != EMPTY).mean() > 0.5
    assert "slot 7" in v.describe(0.005, 7)


# --- counters --------------------------------------------------------------------------------

def test_step_xy():
    x, y = step_xy(np.array([0.0, 25, 50, 75]), np.array([0.0, 7, 3, 7]), 400)
    assert x.tolist() == [0, 25, 25, 50, 50, 75, 75, 400]
    assert y.tolist() == [0, 0, 7, 7, 3, 3, 7, 7]


def test_counters_one_row_per_counter(qtbot, results):
    v = shown(qtbot, CountersView, results["rope_prefetch_16"])
    assert sorted(v.curves) == ["resident", "slots in use"] and len(v.plots) == 2  # a row each
    assert [p.titleLabel.text for p in v.plots] == ["slots in use", "resident"]
    assert [p.getAxis("left").labelText for p in v.plots] == ["slots", "slots"]
    # one unit and scale: one y range, so the rows compare
    assert v.plots[0].getViewBox().viewRange()[1] == v.plots[1].getViewBox().viewRange()[1]
    c = v.curves["resident"]
    assert c.xData.tolist() == [0, 25, 25, 50, 50, 75, 75, 400]  # µs, like the timeline
    assert c.yData.tolist() == [0, 0, 7, 7, 3, 3, 7, 7]

    tr = results["engram_qwen3_32b_cxl"].trace
    v.set_result(results["engram_qwen3_32b_cxl"])
    assert sorted(v.curves) == sorted(tr.counter_names) and len(v.plots) == 3
    assert [p.getAxis("left").labelText for p in v.plots] == ["reads", "reads", "rows"]
    assert v.plots[-1].getAxis("bottom").labelText == "time (ms)"
    v.plots[1].setXRange(1, 2, padding=0)  # plots share x
    assert v.plots[0].getViewBox().viewRange()[0] == pytest.approx([1, 2])
    tl = TimelineView()
    qtbot.addWidget(tl)
    tl.set_result(results["engram_qwen3_32b_cxl"])
    v.link_x(tl.plot)
    tl.plot.setXRange(3, 4, padding=0)
    assert v.plots[2].getViewBox().viewRange()[0] == pytest.approx([3, 4])


def test_counter_rows_never_overlap_and_scroll_when_they_do_not_fit(qtbot):
    # nine counters in the Counters tab's room at 1280 × 800 (about 640 × 600 px): each row
    # keeps its height, none lies on another, and the rows scroll
    from app.views.counters import ROW_MIN_PX
    tb = TraceBuilder()
    tb.span(tb.lane("gpu", "GPU"), 0, 1000, "compute")
    for k in range(9):
        tb.counter(f"c{k}", 0, float(k + 1), "jobs" if k % 2 else "B")
        tb.counter(f"c{k}", 500, float(2 * k + 1), "jobs" if k % 2 else "B")
    v = shown(qtbot, CountersView, synthetic(tb.build()), size=(640, 600))
    qtbot.wait(30)
    boxes = [p.sceneBoundingRect() for p in v.plots]
    assert len(boxes) == 9 and all(b.height() >= ROW_MIN_PX - 4 for b in boxes)
    assert all(not a.intersected(b).height() > 0.5 for a, b in zip(boxes, boxes[1:]))
    assert v.rows_area.verticalScrollBar().maximum() > 0  # more rows than room: they scroll
    v2 = shown(qtbot, CountersView, synthetic(tb.build()), size=(640, 1400))
    qtbot.wait(30)
    assert v2.rows_area.verticalScrollBar().maximum() == 0  # room enough: no scrolling


def test_counters_split_a_unit_when_scales_differ():
    from app.views.counters import unit_groups
    names, units = ("SSD", "DRAM", "queue", "DRAM2"), ("B", "B", "jobs", "B")
    # 128 GB beside 10 TB: its own plot; a 1 TB counter shares the 10 TB one (within 20×)
    assert unit_groups(names, units, [10e12, 128e9, 2000, 1e12]) == [("B", [0, 3]), ("B", [1]), ("jobs", [2])]
    assert unit_groups(names, units, [10e12, 1e12, 5, 2e12]) == [("B", [0, 1, 3]), ("jobs", [2])]
    assert unit_groups(names, units) == [("B", [0, 1, 3]), ("jobs", [2])]  # no peaks: by unit only
    assert unit_groups(names, units, [10e12, 0, 1, 0]) == [("B", [0, 1, 3]), ("jobs", [2])]  # all-zero: anywhere


# --- policies --------------------------------------------------------------------------------

def test_policy_rows_split_hits_by_tier():
    from app.views.policies import policy_rows
    rows = policy_rows({"recompute": {"hit_rate": 0.0, "dram_hit_share": None, "mean_prefill_ms": 157.0},
                        "lru": {"hit_rate": 0.8, "dram_hit_share": 0.25, "mean_prefill_ms": 176.0,
                                "prefill_speedup_vs_recompute": 0.89},
                        "tiers": {"hit_rate": 0.5, "hbm_hit_share": 0.2, "dram_hit_share": 0.6},
                        "broken": {"jobs": 3}})  # no hit rate: not a policy row
    assert [r["name"] for r in rows] == ["recompute", "lru", "tiers"]
    assert rows[0]["dram"] == rows[0]["ssd"] == 0.0
    assert rows[1]["dram"] == pytest.approx(0.2) and rows[1]["ssd"] == pytest.approx(0.6) and rows[1]["hbm"] == 0
    assert (rows[2]["hbm"], rows[2]["dram"], rows[2]["ssd"]) == pytest.approx((0.1, 0.3, 0.1))


def test_policies_view_and_bars_tab(qtbot, results, bundled_small):
    r = bundled_small["attention_store_sharegpt"]  # a policy comparison; its size does not matter here
    pol = r.metrics["policies"]
    v = shown(qtbot, PoliciesView, r)
    assert not v.stack.showing_note and [row["name"] for row in v.rows] == list(pol)
    sched = next(row for row in v.rows if row["name"] == "scheduler_aware")
    assert sched["hbm"] + sched["dram"] + sched["ssd"] == pytest.approx(pol["scheduler_aware"]["hit_rate"])
    assert sched["dram"] == pytest.approx(pol["scheduler_aware"]["hit_rate"] * pol["scheduler_aware"]["dram_hit_share"])
    bars = [i for i in v.time_plot.items if type(i).__name__ == "BarGraphItem"]
    assert len(bars) == len(v.rows)  # one prefill bar per policy
    # each ratio on a bar is named, and the GPU-time one is the Metrics dock's figure (an unnamed
    # 2.76× read as contradicting the dock's 2.69)
    labels = [i.toPlainText() for i in v.time_plot.items if type(i).__name__ == "TextItem"]
    said = next(t for t in labels if "shorter per job" in t and f"{pol['scheduler_aware']['mean_prefill_ms']:.4g} ms" in t)
    assert f"{pol['scheduler_aware']['prefill_speedup_vs_recompute']:.2f}× less GPU time" in said
    # the tab shows the ladder for ladder runs, the policies for policy comparisons
    tab = BarsTab(TabContext())
    qtbot.addWidget(tab.widget)
    assert tab.title(r) == "Policies" and tab.title(results["ladder_seed"]) == "Ladder"
    tab.set_result(results["ladder_seed"])
    assert tab.widget.currentWidget() is tab.ladder
    tab.set_result(r)
    assert tab.widget.currentWidget() is tab.policies
    # the same policies in another order: the axis names follow the bars (pyqtgraph caches axes)
    flipped = dict(reversed(list(pol.items())))
    v.set_result(Result(scenario=r.scenario, trace=r.trace, metrics={"policies": flipped}))
    names = [name for _, name in v.hit_plot.getAxis("left")._tickLevels[0]]
    assert names == list(flipped) == [row["name"] for row in v.rows]
    v.set_result(results["rope_prefetch_16"])
    assert v.stack.showing_note and "no placement policies" in v.stack.note.text()


# --- ladder ----------------------------------------------------------------------------------

def latency_text(v, i) -> str:
    return v.latency_texts[i].textItem.toPlainText()


def test_ladder_table_edit_recomputes_and_emits(qtbot, results):
    v = shown(qtbot, LadderView, results["ladder_seed"])
    assert latency_text(v, 3).startswith("280.6 ns")
    assert "flash tail: <b>0.3% of accesses, 42.3% of mean latency" in v.headline.text()
    with qtbot.waitSignal(v.rungs_edited) as sig:
        v.table.item(3, PCT_COL).setText("97")
    assert sig.args[0][3] == {"label": "step 4 (label ours)", "hbm_hit_pct": 97.0}
    assert [r["hbm_hit_pct"] for r in sig.args[0]] == [72, 80, 87, 97, 97]
    assert latency_text(v, 3).startswith("177.4 ns")           # hand-computed: 97 + 5.4 + 75
    assert v.table.item(3, 4).text() == "177.4 ns"
    assert v.table.item(3, 3).text() == "+10 pts" and v.table.item(4, 3).text() == "+0 pts"
    assert "+10 pts" in v.hit_texts[3].textItem.toPlainText()
    assert v.lat_bars["flash"].opts["width"][3] == pytest.approx(75.0)
    # bad input is refused at the cell, nothing emitted, nothing changes
    with qtbot.assertNotEmitted(v.rungs_edited):
        v.table.item(2, PCT_COL).setText("120")
    assert "0 to 100" in v.status.text() and v.table.item(2, PCT_COL).text() == "87"
    with qtbot.waitSignal(v.rungs_edited) as sig:
        v.table.item(0, 1).setText("plain cache")
    assert sig.args[0][0]["label"] == "plain cache" and v.axis.names[0] == "1. plain cache"


def test_a_typed_hit_rate_reaches_the_table_as_typed(qtbot, results):
    """Typed in a real window: the cell's spin box, limited to 100, dropped the last key of 150,
    and rung 4 became 15% with no message."""
    from PySide6.QtWidgets import QApplication
    v = shown(qtbot, LadderView, results["ladder_seed"])
    qtbot.wait(50)
    v.table.setFocus()

    def type_into(row, keys):
        v.table.setCurrentCell(row, PCT_COL)
        v.table.editItem(v.table.item(row, PCT_COL))
        editor = QApplication.focusWidget()  # the cell's editor, whatever it is
        editor.selectAll()
        qtbot.keyClicks(editor, keys)
        v.table.setCurrentCell(row, 0)  # the user moves on: the cell takes the text
    with qtbot.assertNotEmitted(v.rungs_edited):
        type_into(3, "150")
    assert "must be a number from 0 to 100 (got '150')" in v.status.text()
    assert v.table.item(3, PCT_COL).text() == "93"
    with qtbot.waitSignal(v.rungs_edited) as sig:
        type_into(3, "95.5")
    assert sig.args[0][3]["hbm_hit_pct"] == 95.5


def test_ladder_drag_snaps_clamps_and_emits(qtbot, results):
    v = shown(qtbot, LadderView, results["ladder_seed"])
    v.drag_rung(0, 96.26)
    assert v.pcts[0] == 96.5  # 0.5-point steps
    v.drag_rung(0, 150)
    assert v.pcts[0] == 100.0
    with qtbot.waitSignal(v.rungs_edited) as sig:
        v.drag_rung(0, -3, finish=True)
    assert sig.args[0][0]["hbm_hit_pct"] == 0.0


def test_ladder_mouse_drag_on_a_bar(qtbot, results):
    """A real mouse drag on rung 4's bar, from 93 % to 97 %: 177.4 ns."""
    v = shown(qtbot, LadderView, results["ladder_seed"])
    vb = v.hit_plot.getViewBox()
    gv = v.charts

    def at(x, y) -> QPoint:
        return gv.mapFromScene(vb.mapViewToScene(QPointF(x, y)))

    vp = gv.viewport()
    with qtbot.waitSignal(v.rungs_edited) as sig:
        qtbot.mousePress(vp, Qt.LeftButton, pos=at(50, 3))
        for x in (60, 80, 95, 97):
            qtbot.mouseMove(vp, at(x, 3))
        qtbot.mouseRelease(vp, Qt.LeftButton, pos=at(97, 3))
    assert sig.args[0][3]["hbm_hit_pct"] == 97.0
    assert latency_text(v, 3).startswith("177.4 ns")
    assert v.pcts[:3] + v.pcts[4:] == [72, 80, 87, 97]  # only the dragged rung changed


def test_ladder_simulated_side_by_side(qtbot, results):
    v = shown(qtbot, LadderView, results["ladder_simulated"])
    assert v.simulated is not None and v.table.columnCount() == 10
    assert v.table.item(0, 9).text() == "−31 pts"  # 40.9522 − 72
    assert "simulated 40.95%" in v.sim_hit_texts[0].textItem.toPlainText()
    assert v.sim_hit_bars.opts["width"][0] == pytest.approx(40.9522)
    v.set_hit_pct(0, 50.0)  # the model moves, the measurement does not
    assert v.table.item(0, 9).text() == "−9.05 pts" and v.sim_hit_bars.opts["width"][0] == pytest.approx(40.9522)


# --- RoPE bound ------------------------------------------------------------------------------

def test_rope_bound_envelope_starts_at_one_and_never_rises(qtbot, results):
    v = shown(qtbot, RopeBoundView, results["rope_prefetch_16"])
    _, y = v.envelope_curve.getData()
    assert y[0] == pytest.approx(1.0) and (np.diff(y) <= 1e-12).all()
    _, a = v.assumed_curve.getData()
    assert a[0] == pytest.approx(1.0)
    assert "proven:" in v.caption.text() and "assumed:" in v.caption.text()
    assert "not softmax mass" in v.caption.text()
    v.head_dim.setValue(64)
    v.base.setValue(500000)
    v.max_distance.setValue(512)
    v.redraw()
    x, y = v.envelope_curve.getData()
    assert len(x) == 513 and y[0] == pytest.approx(1.0) and (np.diff(y) <= 1e-12).all()
    v.log_y.setChecked(True)
    assert v.plot.getPlotItem().getAxis("left").logMode
    v.set_result(results["ladder_seed"])  # a modeled ladder: the walkthrough's stated assumption
    assert "RoPE walkthrough" in v.caption.text()


# --- timeline --------------------------------------------------------------------------------

def test_timeline_grid_and_spans_follow_the_range(qtbot, results):
    """The grid blended as one tiled row of pixels is pixel for pixel pyqtgraph's own lines, and
    the span rectangles kept between repaints are rebuilt when the range changes."""
    def grab(x_range, stock_axis=False):
        tl = TimelineView()
        qtbot.addWidget(tl)
        if stock_axis:
            tl.plot.getPlotItem().setAxisItems({"bottom": pg.AxisItem("bottom")})
        tl.resize(1003, 517)
        tl.show()
        tl.set_result(results["engram_qwen3_32b_rdma"])
        tl.plot.getPlotItem().setXRange(*x_range, padding=0)
        if stock_axis:  # in the unit of the visible span, as the timeline's own axis reads
            tl.plot.getPlotItem().getAxis("bottom").setScale(tl.time_axis.scale)
        img = tl.plot.grab().toImage()
        return tl, img.copy(1, 1, img.width() - 2, img.height() - 2)  # the frame's edge is undefined

    def drawn_is_current(tl):
        vb = tl.plot.getPlotItem().getViewBox()
        (lo, hi), _ = vb.viewRange()
        return all(layer.drawn == len(layer.visible_rects(lo, hi, (hi - lo) / vb.width())) for layer in tl.layers)

    for x_range in ((0, 15), (1.234, 1.9)):
        tl, img = grab(x_range)
        assert tl.plot.getPlotItem().getAxis("bottom")._tile is not None  # the tiled row was used
        assert img == grab(x_range, stock_axis=True)[1]
        assert drawn_is_current(tl)
    tl.plot.getPlotItem().setXRange(3.5, 3.7, padding=0)  # same view, new range
    tl.plot.grab()
    assert drawn_is_current(tl)


# --- screenshots ------------------------------------------------------------------------------

def test_screenshots_are_not_blank(qtbot, results):
    occ = shown(qtbot, OccupancyView, results["rope_prefetch_16"])
    px = plot_area(occ, occ.plot, occ.plot.getPlotItem().getViewBox())
    assert non_white_share(px) > 0.5
    assert has_colour(px, "#%02x%02x%02x" % tuple(LUT[item_colour_index([12])[0]][:3]))

    cnt = shown(qtbot, CountersView, results["engram_qwen3_32b_cxl"])
    px = plot_area(cnt, cnt.layout_widget, cnt.plots[-1].getViewBox())
    assert has_colour(px, cnt.colours["staging rows"], tol=40)  # the staging-rows line, drawn

    lad = shown(qtbot, LadderView, results["ladder_seed"])
    px = plot_area(lad, lad.charts, lad.lat_plot.getViewBox())
    assert has_colour(px, tier_color("ssd")) and has_colour(px, tier_color("hbm"))  # flash and HBM time
    assert non_white_share(px) > 0.2

    rb = shown(qtbot, RopeBoundView, results["rope_prefetch_16"])
    px = plot_area(rb, rb.plot, rb.plot.getPlotItem().getViewBox())
    assert has_colour(px, "#0072b2", tol=30) and has_colour(px, "#d55e00", tol=30)


def test_timeline_draws_one_instant_per_lane_and_pixel_column_when_zoomed_out(qtbot):
    # 50,000 hits 1 ns apart on each of two lanes (and a span so the run has a length): zoomed
    # out they fall into ~1 pixel column per lane; zoomed onto 20 ns, each is its own mark.
    tb = TraceBuilder()
    a, b = tb.lane("a", "GPU"), tb.lane("b", "GPU")
    tb.span(a, 0, 1_000_000, "compute")
    for t in range(50_000):
        tb.instant(a, t, "hit")
        tb.instant(b, t, "hit")
    tl = shown(qtbot, TimelineView, synthetic(tb.build()))
    vb = tl.plot.getPlotItem().getViewBox()
    drawn = sum(len(item.data) for item, *_ in tl.marks)
    columns = vb.width()
    assert 2 <= drawn <= 2 * (0.05 * columns + 2)  # 50 µs of a 1 ms run: 5% of the columns, per lane
    lo, hi = 10_000 / tl.scale, 10_019 / tl.scale
    vb.setXRange(lo, hi, padding=0)
    tl._thin_marks()
    xs = np.concatenate([item.data["x"] for item, *_ in tl.marks])
    assert len(xs) == 2 * 20 and xs.min() >= lo and xs.max() <= hi


def test_occupancy_hover_follows_a_view_that_moves_under_a_still_mouse(qtbot, results):
    """After Home the status still named the cell that had been under the mouse (real window)."""
    v = shown(qtbot, OccupancyView, results["rope_prefetch_16"])
    vb = v.plot.getPlotItem().getViewBox()
    vb.setXRange(0, 20, padding=0)
    qtbot.wait(60)
    at = vb.mapViewToScene(pg.Point(10, 0))
    park_mouse(qtbot, v.plot, at)
    v._on_move(at)
    before = v.info.text()
    assert before.startswith("slot 0, t = 10.0")
    vb.setXRange(100, 120, padding=0)  # the view moves; the mouse does not
    qtbot.wait(60)
    assert v.info.text().startswith("slot 0, t = 110.0")  # (to a pixel)


def test_the_ladder_charts_fit_a_narrow_tab(qtbot, results):
    """At the default window the latency chart ran past the tab's edge: pyqtgraph reset each
    title's minimum width to its text's on every layout pass."""
    v = shown(qtbot, LadderView, results["ladder_seed"], size=(650, 700))
    qtbot.wait(50)
    assert v.lat_plot.sceneBoundingRect().right() <= v.charts.width()
    assert v.hit_plot.sceneBoundingRect().right() <= v.lat_plot.sceneBoundingRect().left() + 1
    assert "flash is 75.0 of its 177.4 ns" in v.headline.text()


def test_ladder_bar_labels_never_run_over_the_axis(qtbot, results):
    """On ladder_simulated a simulated rate fitting neither inside its bar nor after it ran left
    over the axis; it is shortened instead."""
    v = shown(qtbot, LadderView, results["ladder_simulated"], size=(650, 700))
    qtbot.wait(50)
    left = v.hit_plot.getViewBox().sceneBoundingRect().left()
    for item, *_ in v._hit_labels:
        if item.isVisible() and item.textItem.toPlainText():
            assert item.sceneBoundingRect().left() >= left - 1, item.textItem.toPlainText()


def test_every_prefill_label_fits_its_chart(qtbot, results):
    """At 2.6× the longest bar, "1.12× less GPU time" ran past the chart's edge (real window)."""
    v = shown(qtbot, PoliciesView, results["attention_store_sharegpt"], size=(600, 700))
    qtbot.wait(50)
    right = v.time_plot.getViewBox().sceneBoundingRect().right()
    labels = [i for i in v.time_plot.items if type(i).__name__ == "TextItem"]
    assert labels and all(t.sceneBoundingRect().right() <= right + 1 for t in labels)


# --- time units from the view (issue 22 item 4: the timeline's rule on Occupancy and Counters) ---

def ten_ms_run() -> Result:
    """A 10 ms run with residency in 2 slots and a counter sampled every 5 µs."""
    tb = TraceBuilder(slots=2, item_name="token")
    tb.span(tb.lane("gpu", "GPU"), 0, 10_000_000, "compute")
    for k in range(100):  # 100 µs per record
        tb.residency(k % 2, k * 100_000, (k + 1) * 100_000, k)
    for k in range(2001):
        tb.counter("fill", k * 5_000, float(k % 7), "slots")
    return synthetic(tb.build())


def axis_reading(axis, vb) -> list[float]:
    """The tick labels `axis` draws for `vb`'s visible range, as numbers."""
    (lo, hi), _ = vb.viewRange()
    spacing, values = axis.tickValues(lo, hi, vb.width())[0]  # the major ticks
    return [float(t) for t in axis.tickStrings(values, axis.scale, spacing)]


@pytest.mark.parametrize("cls", [OccupancyView, CountersView])
def test_time_unit_follows_the_visible_span(qtbot, cls):
    v = shown(qtbot, cls, ten_ms_run())
    assert v.unit == "ms"  # data stay in the run's unit: linked views share ranges
    pi = v.plot.getPlotItem() if cls is OccupancyView else v.plots[-1]
    axis, vb = pi.getAxis("bottom"), pi.getViewBox()
    assert axis.labelText == "time (ms)"
    ticks = axis_reading(axis, vb)
    assert len(ticks) >= 2 and -0.3 <= min(ticks) and 5 <= max(ticks) <= 10.3  # ms (the whole run, padded)
    vb.setXRange(0.055, 0.075, padding=0)  # 55–75 µs: 20 µs
    assert axis.labelText == "time (µs)"
    ticks = axis_reading(axis, vb)
    assert len(ticks) >= 2 and 55 <= min(ticks) and max(ticks) <= 75  # µs, not 0.055…0.075
    places = tick_decimals(20_000 / vb.width() / 1000)  # the digits one pixel needs, in µs
    if cls is OccupancyView:
        assert v.describe(0.0625, 0) == f"slot 0, t = {62.5:.{places}f} µs, item = 0 (token)"
    else:
        assert v.hover_text(0, 62_500) == f"t = {62.5:.{places}f} µs · fill = 5 slots"
    vb.setXRange(0, 10, padding=0)  # zoomed out: ms again
    assert axis.labelText == "time (ms)"
    assert max(axis_reading(axis, vb)) >= 5
