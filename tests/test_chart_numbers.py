"""Numbers from the Policies, Ladder and Counters charts (issue 22, item 5): a hover line names
the row or time under the mouse with its values, and Data as CSV writes what the chart draws."""
from __future__ import annotations

import re

import pytest
from PySide6.QtCore import QPointF

from kvviz.export.colours import series_colour

from .conftest import shown


def _hover(view_box, scene, x, y):
    scene.sigMouseMoved.emit(view_box.mapViewToScene(QPointF(x, y)))


@pytest.fixture
def policies(qtbot, bundled_small):
    from app.views.policies import PoliciesView
    res = bundled_small["attention_store_sharegpt"]
    view = shown(qtbot, PoliciesView(), 1000, 700, res, 30)
    return view, res.metrics_dict()["policies"]


@pytest.mark.gui
def test_a_policy_rows_hover_names_its_numbers(policies):
    view, metrics = policies
    i = 1
    name = view.rows[i]["name"]
    _hover(view.time_plot.getViewBox(), view.charts.scene(), 0.1, i + 0.2)  # anywhere on its row
    text = view.info.text()
    assert text.startswith(f"{name} · hit rate {metrics[name]['hit_rate']:.2%}")
    assert f"prefill {metrics[name]['mean_prefill_ms']:,.4g} ms per job" in text
    _hover(view.hit_plot.getViewBox(), view.charts.scene(), 0.1, i + 1.0)  # the next row, other chart
    assert view.info.text().startswith(view.rows[i + 1]["name"] + " ·")


@pytest.mark.gui
def test_policies_export_their_bars_and_colour_a_policy_by_name(policies):
    import pyqtgraph as pg
    view, metrics = policies
    head, rows = view.data_rows()
    assert head[:2] == ["policy", "hit_rate"] and [r[0] for r in rows] == [r["name"] for r in view.rows]
    for r in rows:
        assert r[1] == pytest.approx(metrics[r[0]]["hit_rate"])
        assert r[2] + r[3] + r[4] == pytest.approx(r[1])  # HBM + DRAM + SSD parts make the hit rate
    bars = [it for it in view.time_plot.items if isinstance(it, pg.BarGraphItem)]
    assert [b.opts["brush"].color().name().upper() for b in bars] == [series_colour(r["name"]).upper()
                                                                      for r in view.rows]


@pytest.mark.gui
@pytest.mark.parametrize("name", ["ladder_seed", "ladder_simulated"])
def test_a_rungs_hover_and_the_ladder_data(qtbot, bundled, name):
    from app.views.ladder import LadderView
    res = bundled[name]
    view = shown(qtbot, LadderView(), 1100, 700, res, 30)
    rungs = res.metrics["rungs"]
    _hover(view.lat_plot.getViewBox(), view.charts.scene(), 1.0, 1.1)  # rung 2's row, latency chart
    f = view.figures[1]
    text = view.status.text()
    assert text.startswith(f"rung 2. {rungs[1]['label']} · HBM hit rate {rungs[1]['hbm_hit_pct']:.4g}%")
    assert f"mean {f['mean_latency_ns']:,.1f} ns" in text
    head, rows = view.data_rows()
    assert len(rows) == len(rungs) and head[2] == "hbm_hit_pct"
    col = dict(zip(head, rows[1]))
    # the tiers' parts of the mean latency add up to it, and the access shares to 100%
    assert sum(col[f"{t}_latency_ns"] for t in ("hbm", "cxl", "flash")) == pytest.approx(col["mean_latency_ns"])
    assert sum(col[f"{t}_access_pct"] for t in ("hbm", "cxl", "flash")) == pytest.approx(100.0)
    assert ("simulated_hbm_hit_pct" in head) == (name == "ladder_simulated")


@pytest.mark.gui
def test_counters_hover_reads_the_value_held_then(qtbot, bundled):
    from app.views.counters import CountersView
    res = bundled["rope_prefetch_16"]
    view = shown(qtbot, CountersView(), 900, 600, res, 30)
    tr = res.trace
    # hand-read from the trace: counter 1 ('resident') is 7 at 25,000 ns and 3 from 50,000 ns
    c1 = tr.counters[tr.counters["name"] == 1]
    assert list(c1["t"][:3]) == [0, 25_000, 50_000] and list(c1["value"][1:3]) == [7.0, 3.0]
    k = next(k for k, idx in enumerate(view.groups) if 1 in idx)
    _hover(view.plots[k].getViewBox(), view.layout_widget.scene(), 60.0, 1.0)  # 60 µs
    # the time with the digits one pixel needs (the view's rule): 60 or 60.0 µs at this width
    assert re.search(r"t = 60(\.0+)? µs", view.info.text()) and "resident = 3 slots" in view.info.text()
    _hover(view.plots[k].getViewBox(), view.layout_widget.scene(), 49.9, 1.0)
    assert "resident = 7 slots" in view.info.text()
    head, rows = view.data_rows()
    assert head == ["name", "unit", "t_ns", "value"] and len(rows) == len(tr.counters)
    assert ["resident", "slots", 50_000, 3.0] in rows


@pytest.mark.gui
def test_the_metrics_dock_reads_for_people_with_full_paths(qtbot, bundled):
    from PySide6.QtCore import Qt

    from app.views.metrics import MetricsView
    res = bundled["attention_store_mooncake"]
    view = shown(qtbot, MetricsView(), 320, 700, res, 20)
    m = res.metrics_dict()
    texts = {view.scalars.item(r, 0).text(): r for r in range(view.scalars.rowCount())}
    assert view.scalars.textElideMode() == Qt.ElideRight
    tables = dict(zip([g.text() for g in view.groups[0::2]], view.groups[1::2]))
    formulas = tables["<b>formulas</b>"]
    rows = {formulas.verticalHeaderItem(r).text(): r for r in range(formulas.rowCount())}
    r = rows["S_kv_bytes"]
    kv = m["formulas"]["S_kv_bytes"]  # 7.93e+08 as format_value wrote it
    assert formulas.item(r, 0).text() == f"{kv / 2 ** 20:.0f} MiB ({kv:,.0f} B)"
    assert "e+" not in formulas.item(rows["CCpUT_bytes_per_s"], 0).text()  # 4,432,430,000-ish, not 4.43e+09
    assert formulas.item(r, 0).toolTip() == "formulas.S_kv_bytes"
    assert formulas.verticalHeader().textElideMode() == Qt.ElideRight
    policies = tables["<b>policies</b>"]
    col = [policies.horizontalHeaderItem(c).text() for c in range(policies.columnCount())].index("hit_rate")
    prow = [policies.verticalHeaderItem(k).text() for k in range(policies.rowCount())].index("lru")
    assert policies.item(prow, col).toolTip() == "policies.lru.hit_rate"
    assert policies.horizontalHeaderItem(col).toolTip() == "policies.*.hit_rate"  # a column: the family
    assert policies.verticalHeaderItem(prow).toolTip() == "policies.lru"
    assert texts  # the scalar table is filled; its rows' tooltips are their paths
    name = next(iter(texts))
    assert view.scalars.item(texts[name], 2).toolTip() == name


@pytest.mark.gui
def test_a_paired_rows_tooltip_names_both_metrics(qtbot, bundled):
    from app.views.metrics import MetricsView
    view = MetricsView()
    qtbot.addWidget(view)
    view.set_result(bundled["rope_prefetch_16"])
    r = [view.scalars.item(k, 0).text() for k in range(view.scalars.rowCount())].index("stall_us")
    assert view.scalars.item(r, 0).toolTip() == "naive_stall_us (baseline) · prefetch_stall_us"


@pytest.mark.gui
def test_at_1280_by_800_the_metrics_dock_shows_every_policy(window, qtbot, tmp_path):
    from .conftest import SCENARIOS, quicker_copy
    old = window.result
    window.open(str(quicker_copy(SCENARIOS / "attention_store_sharegpt.toml", tmp_path)))
    qtbot.waitUntil(lambda: window.result is not old and window.result.scenario.kind == "attention_store",
                    timeout=60_000)
    qtbot.wait(100)
    assert (window.width(), window.height()) == (1280, 800)
    m = window.metrics
    tables = dict(zip([g.text() for g in m.groups[0::2]], m.groups[1::2]))
    t = tables["<b>policies</b>"]
    names = list(window.result.metrics_dict()["policies"])
    assert len(names) == 5 and [t.verticalHeaderItem(r).text() for r in range(t.rowCount())] == names
    view = t.viewport().rect()
    for r in range(t.rowCount()):  # each policy's row wholly inside the table's viewport
        assert view.top() <= t.rowViewportPosition(r) and t.rowViewportPosition(r) + t.rowHeight(r) <= view.bottom() + 1
    m.ensureWidgetVisible(t)
    qtbot.wait(50)
    window.grab().save(str(tmp_path / "policies_1280x800.png"))


def test_the_ladder_timeline_says_its_bars_are_1000_accesses(bundled):
    from kvviz.export.svg import timeline_svg
    from kvviz.mechanisms import time_axis_title
    assert time_axis_title("ladder", "µs") == "time of 1,000 accesses (µs) = ns per access"
    assert time_axis_title("ladder", "ms") == "time of 1,000 accesses (ms) = µs per access"
    assert time_axis_title("rope_window", "µs") == "time (µs)"  # plain time elsewhere
    assert ">time of 1,000 accesses (µs) = ns per access</text>" in timeline_svg(bundled["ladder_seed"])
    assert ">time (µs)</text>" in timeline_svg(bundled["rope_prefetch_16"])


@pytest.mark.gui
def test_a_name_value_table_keeps_no_blank_strip_for_a_scroll_bar(qtbot, bundled):
    """A one-column group (arrivals: rule → interleaved) stretches to the dock and never scrolls
    sideways: its height is its header and rows (a scroll bar's height under them read as an
    empty row at 1366 px); tables of items keep room for theirs."""
    from PySide6.QtCore import Qt

    from app.views.metrics import MetricsView
    view = shown(qtbot, MetricsView(), 320, 700, bundled["attention_store_mooncake"], 20)
    tables = dict(zip([g.text() for g in view.groups[0::2]], view.groups[1::2]))
    arrivals, policies = tables["<b>arrivals</b>"], tables["<b>policies</b>"]
    rows = arrivals.verticalHeader().defaultSectionSize() * arrivals.rowCount()
    assert arrivals.height() == arrivals.horizontalHeader().sizeHint().height() + rows + 6
    assert arrivals.horizontalScrollBarPolicy() == Qt.ScrollBarAlwaysOff
    assert policies.height() > policies.horizontalHeader().sizeHint().height() + \
        policies.verticalHeader().defaultSectionSize() * policies.rowCount() + 6


def test_a_list_whose_items_carry_their_own_index_shows_it_once():
    """A cluster's per_instance rows are numbered 0, 1, … and each carried index 0, 1, … too: a
    column repeating the row numbers (seen in a real window) is left out; an index that is not
    the row's number stays."""
    from app.views.metrics import metric_groups
    groups = {g[0]: g for g in metric_groups({"per_instance": [{"index": 0, "role": "prefill"},
                                                               {"index": 1, "role": "decode"}],
                                              "picked": [{"index": 7, "x": 1}]})}
    assert groups["per_instance"][1] == ["role"] and groups["per_instance"][2][1] == ("1", ["decode"])
    assert groups["picked"][1] == ["index", "x"]


@pytest.mark.gui
def test_the_hit_rate_axis_labels_its_zero(policies):
    """pyqtgraph drops a tick label that would cross the plot's edge: the hit-rate axis started
    exactly at 0, and its "0%" was never drawn (seen in a real window)."""
    from PySide6.QtGui import QImage, QPainter
    view, _ = policies
    image = QImage(8, 8, QImage.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = view.hit_plot.getAxis("bottom").generateDrawSpecs(painter)
    finally:
        painter.end()
    labels = [text for _rect, _flags, text in specs[2]]
    assert "0%" in labels and "100%" in labels, labels
    painter = QPainter(image)
    try:
        specs = view.time_plot.getAxis("bottom").generateDrawSpecs(painter)
    finally:
        painter.end()
    assert "0" in [text for _rect, _flags, text in specs[2]]  # the prefill times' axis too
