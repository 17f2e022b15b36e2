"""The desktop window, headless (pytest-qt): open, edit, invalid input, compare, sweep,
cancel, unsaved-changes prompt, screenshots, and no worker outliving its window."""
import json
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PySide6")
pytestmark = pytest.mark.gui

from PySide6.QtWidgets import QApplication, QMessageBox  # noqa: E402

from app.main import main as gui_main  # noqa: E402
from app.shell.window import MainWindow  # noqa: E402
from app.tabs import TABS  # noqa: E402
from app.views.metrics import metric_rows  # noqa: E402
from app.views.timeline import SpanLayer, merge_runs  # noqa: E402
from kvviz.export.axis import tick_decimals  # noqa: E402

from .conftest import SCENARIOS, SLOW_TO_SIMULATE, exported, quicker_copy, wait_new_result  # noqa: E402

SEED = str(SCENARIOS / "rope_prefetch_16.toml")
BUNDLED = sorted(SCENARIOS.glob("*.toml"))


def test_window_shows_seed_result(window):
    assert window.result.metrics["speedup"] == 8.0
    rows = {r[0]: r[1:] for r in metric_rows(window.result.metrics_dict())}
    assert rows["stall_us"] == ("400.0", "50.0") and rows["round_trips"] == ("16", "2")
    axis = window.view("timeline").plot.getPlotItem().getAxis("left")
    assert axis.tickStrings([0, 1, 2], 1, 1) == ["GPU · attention", "flash · prefetch + demand",
                                                 "naive · serial demand fetch"]


def test_time_axis_labels_differ_when_zoomed_far_into_a_long_run(window):
    """Ticks 0.01 apart at 29,040 s: pyqtgraph's own labels read "29040.9" for both."""
    time_axis = window.view("timeline").plot.getPlotItem().getAxis("bottom")
    labels = time_axis.tickStrings([29040.91, 29040.92, 29040.93], 1, 0.01)
    assert labels == ["29040.91", "29040.92", "29040.93"]
    assert time_axis.tickStrings([0, 50, 100], 1, 50) == ["0", "50", "100"]


def test_time_axis_labels_never_run_into_each_other(window):
    """4 µs of a 972 s run on a 290-px axis: ten-digit labels need wider ticks than pyqtgraph's."""
    import pyqtgraph as pg
    from PySide6.QtGui import QFontMetrics
    time_axis = window.view("timeline").plot.getPlotItem().getAxis("bottom")
    lo, hi, px = 972.4131375, 972.4131415, 290
    (step, _), *_ = time_axis.tickSpacing(lo, hi, px)
    assert step > pg.AxisItem.tickSpacing(time_axis, lo, hi, px)[0][0]  # widened
    label = time_axis.tickStrings([lo], 1, step)[0]
    assert step / (hi - lo) * px >= len(label) * QFontMetrics(time_axis.font()).horizontalAdvance("0")
    assert time_axis.tickSpacing(0, 400, 500) == pg.AxisItem.tickSpacing(time_axis, 0, 400, 500)  # as before


@pytest.mark.parametrize("path", [pytest.param(p, id=p.stem, marks=[pytest.mark.slow] * (p.stem in SLOW_TO_SIMULATE))
                                  for p in BUNDLED])
def test_open_every_bundled_scenario(window, qtbot, path, tmp_path):
    path = quicker_copy(path, tmp_path)
    old = window.result
    assert window.open(str(path))
    qtbot.waitUntil(lambda: window.result is not old, timeout=180_000)
    r = window.result
    assert r.scenario.kind and window.metrics.scalars.rowCount() > 0
    if path.parent == tmp_path:
        from kvviz.executor import worth_a_pool
        from kvviz.mechanisms import mechanisms
        est = mechanisms()[r.scenario.kind].estimate(r.scenario)
        assert worth_a_pool([s for _, s in est.parts], 2, True, est.dispatch)  # the child's workers run it
    for name in (t.name for t in TABS):  # every view accepts every kind
        window.show_view(name)


def test_edit_through_widget_changes_metrics(window, qtbot):
    spin = window.panel.widget_for("cache.slots")
    old = window.result
    spin.setValue(4)
    r = wait_new_result(qtbot, window, old)
    assert r.scenario.cache.slots == 4 and r.metrics["positions_fetched"] != 11
    assert window.panel.is_dirty() and window.windowTitle().startswith("rope_prefetch_16.toml *")


def test_failed_checks_are_said_and_marked(window, qtbot):
    assert "7 checks pass" in window.status.text()
    old = window.result
    window.panel.set_value("storage.latency_us", 10)  # the seed's 400/50 µs no longer hold
    wait_new_result(qtbot, window, old)
    assert "⚠ 2 of 7 checks failed" in window.status.text()
    groups = window.metrics.groups  # a title label, then its table
    table = groups[[getattr(g, "text", str)() for g in groups].index("<b>checks</b>") + 1]
    failed = [r for r in range(7) if table.item(r, 3).text() == "no"]
    assert len(failed) == 2 and table.item(failed[0], 0).background().color().name() == "#f6d3c4"


def test_invalid_value_is_marked_and_never_simulated(window, qtbot):
    old = window.result
    window.panel.set_value("sequence.queries", [8, 99])
    qtbot.waitUntil(lambda: "sequence.queries" in window.status.text(), timeout=5_000)
    assert "outside the sequence" not in window.status.text()  # the message is said once, at the field
    with qtbot.assertNotEmitted(window.panel.edited):
        window.panel.flush()  # what the debounce would still emit, now: nothing may be submitted
    assert not window.runner.busy()
    assert window.result is old and window.panel.scenario() is None


def test_hover_describes_span(window):
    tl = window.view("timeline")
    text = tl.describe(10.0, 1.0)  # 10 µs on the flash lane
    # in the unit of the visible span, with the digits one pixel needs (issue 22)
    places = tick_decimals(tl.ns_per_pixel() / 1000)
    assert f"fetch {0:.{places}f}–{25:.{places}f} µs" in text and "5–11 (7)" in text
    assert "flash→HBM" in text  # the tiers it moved between


def test_hover_over_a_span_shows_a_tooltip(window, qtbot):
    from PySide6.QtCore import QPointF
    from PySide6.QtWidgets import QToolTip
    window.show_view("timeline")
    tl = window.view("timeline")
    vb = tl.plot.getPlotItem().getViewBox()
    tl.plot.scene().sigMouseMoved.emit(vb.mapViewToScene(QPointF(10.0, 1.0)))  # the flash fetch at 10 µs
    qtbot.waitUntil(QToolTip.isVisible, timeout=2000)
    assert re.search(r"fetch 0\.0*–25\.0* µs", QToolTip.text()) and QToolTip.text() == tl.info.text()
    tl.plot.scene().sigMouseMoved.emit(vb.mapViewToScene(QPointF(10.0, 1.5)))  # between lanes
    assert "fetch" not in tl.info.text()


def test_bad_file_shows_message_not_traceback(window, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('kind = "rope_window"\n[cache]\nslots = 0\n')
    window.open(str(bad))
    assert "cache.slots" in window.status.text()


def test_export_current_view_png_and_svg(window, tmp_path, qtbot):
    from PySide6.QtGui import QImage
    window.show_view("counters")
    from app.figure import CAPTION_H, _bounds, figure_plots
    box = _bounds(figure_plots(window.tabs.currentWidget()))  # the plots alone, under a caption line
    exported(qtbot, window, lambda: window.export_view("png", str(tmp_path / "v.png")))
    img = QImage(str(tmp_path / "v.png"))
    k = 3000 / box.width()  # 10 in at 300 dpi, the CLI's defaults; the view's proportions kept
    assert img.width() == 3000 and abs(img.height() - k * (box.height() + CAPTION_H)) <= 1
    exported(qtbot, window, lambda: window.export_view("svg", str(tmp_path / "v.svg")))
    svg = (tmp_path / "v.svg").read_text()
    assert svg.startswith("<?xml") and "<svg" in svg and "slots" in svg  # the axis label stays text
    (tmp_path / "a_file").write_text("x")
    exported(qtbot, window, lambda: window.export_view("svg", str(tmp_path / "a_file" / "v.svg")))  # its folder cannot exist
    assert "export failed" in window.status.text() and (tmp_path / "a_file").read_text() == "x"


def test_double_click_a_job_draws_its_layers(window, qtbot, tmp_path):
    # AttentionStore maps its GPU lane to serving.detail_job: picking a job's span re-runs with
    # that turn's layers drawn; a span on another lane changes nothing.
    f = tmp_path / "as.toml"
    f.write_text('kind = "attention_store"\npolicies = ["recompute", "scheduler_aware"]\n'
                 '[workload]\nconversations = 40\n[serving]\ncompare_truncation = false\n')
    old = window.result
    window.open(str(f))
    wait_new_result(qtbot, window, old)
    assert window.tabs.tabText(window.tabs.currentIndex()) == "Policies"  # a policy comparison opens there
    window.show_view("timeline")
    tl = window.view("timeline")
    from kvviz.mechanisms.attention_store import GPU_LANE
    tr = tl.result.trace
    gpu = list(tr.lanes["name"]).index(GPU_LANE)
    pre = tr.spans_of(GPU_LANE, "prefill")
    ref = int(pre["ref"][len(pre) // 2])  # a job of a prefill iteration in the middle of the run
    assert "double-click: draw this job's prefill iteration" in tl.describe(*_middle_of_span(tl, GPU_LANE, ref))
    old = window.result
    before = window.panel.data()
    tl.picked.emit(GPU_LANE, ref)
    # it said "showing draw this job's prefill iteration layer by layer for 1503"
    assert window.status.text() == (f"re-running with serving.detail_job = {ref} to draw this job's prefill "
                                    f"iteration layer by layer (a view: the scenario is unchanged)")
    wait_new_result(qtbot, window, old)
    # a view action (issue 22): the run draws the job, the scenario is not edited nor modified
    assert window.result.metrics["detail"]["turn_row"] == ref
    assert window.panel.data() == before and not window.panel.is_dirty()
    tr = tl.result.trace
    from kvviz.mechanisms.attention_store import LAYERS_LANE
    job = tr.spans_of(LAYERS_LANE.format(ref))  # the picked job's prefill iteration, layer by layer
    assert len(job) and len(tr.spans[(tr.spans["ref"] == ref) & (tr.spans["lane"] == gpu)])
    lo, hi = tl.plot.getPlotItem().getViewBox().viewRange()[0]
    assert lo * tl.scale < job["start"].min() and hi * tl.scale > job["end"].max()   # zoomed onto its layers,
    # not the whole run, nor all of the job's decode iterations (where the layers were a hairline)
    assert (hi - lo) * tl.scale < 2 * (job["end"].max() - job["start"].min()) + 2e6
    tl.picked.emit("SSD · eviction writes", 3)
    assert window.panel.data() == before and not window.runner.busy()
    old = window.result  # a later edit keeps the picked job in view
    window.panel.set_value("serving.compare_truncation", True)
    wait_new_result(qtbot, window, old)
    assert window.result.metrics["detail"]["turn_row"] == ref


def _middle_of_span(tl, lane_name, ref):
    tr = tl.result.trace
    lane = list(tr.lanes["name"]).index(lane_name)
    sp = tr.spans[(tr.spans["lane"] == lane) & (tr.spans["ref"] == ref)][0]
    return (sp["start"] + sp["end"]) / 2 / tl.scale, float(lane)


def test_compare_rows_reach_nested_metrics():
    from app.views.compare import metric_diff
    from kvviz.metric_paths import metric_value
    a = {"turns": 10, "policies": {"lru": {"hit_rate": 0.5}, "fifo": {"hit_rate": 0.4}}, "rungs": [{"pct": 72}]}
    b = {"turns": 10, "policies": {"lru": {"hit_rate": 0.6}, "fifo": {"hit_rate": 0.4}}, "rungs": [{"pct": 80}],
         "extra": [1, 2]}
    rows = {r[0]: r for r in metric_diff(a, b)}
    assert list(rows)[0] == "turns"  # top-level figures first
    assert rows["policies.lru.hit_rate"][1:] == ("0.5", "0.6", "0.1", "+20.0%")
    assert rows["rungs.0.pct"][3] == "8" and rows["extra.1"][1:3] == ("—", "2")
    assert metric_value(b, "rungs.0.pct") == 80 and metric_value(b, "policies.lru.hit_rate") == 0.6  # sweep's paths


def test_compare_shows_both_and_the_difference(window, qtbot):
    window.tab("compare").pin()
    old = window.result
    window.panel.set_value("storage.latency_us", 50.0)
    wait_new_result(qtbot, window, old)
    window.show_view("compare")
    table = window.view("compare").table
    rows = {table.item(r, 0).text(): [table.item(r, c).text() for c in range(1, 5)] for r in range(table.rowCount())}
    assert rows["naive_stall_us"][:3] == ["400.0", "800.0", "400.0"]
    assert window.view("compare").a.result.scenario.storage.latency_us == 25
    assert window.view("compare").b.result.scenario.storage.latency_us == 50


def test_sweep_view_runs_a_grid(window, qtbot):
    window.show_view("sweep")
    window.view("sweep").configure([("cache.slots", "2,4,8"), ("prefetch.window", "1:3")], "prefetch_stall_us")
    with qtbot.waitSignal(window.view("sweep").finished, timeout=60_000) as sig:
        window.view("sweep").run()
    res = sig.args[0]
    assert len(res.values) == 3 and len(res.values[0]) == 3 and res.values[2][2] == 50.0


def test_a_swept_ratio_reads_as_a_ratio(window, qtbot):
    """pyqtgraph scales a unit-less axis below 1 by 1000: a hit rate read "(x0.001)" 610…800."""
    window.show_view("sweep")
    window.view("sweep").configure([("cache.slots", "2,4,8")], "hit_rate")
    with qtbot.waitSignal(window.view("sweep").finished, timeout=60_000) as sig:
        window.view("sweep").run()
    assert window.view("sweep").plot.getPlotItem().getAxis("left").style["showValues"]  # drawn: numbered
    assert all(0 < v < 1 for v in sig.args[0].values)
    qtbot.wait(50)
    axis = window.view("sweep").plot.getPlotItem().getAxis("left")
    assert "(x" not in axis.labelString() and axis.autoSIPrefixScale == 1.0


def test_sweep_view_streams_points_and_names_a_bad_executor(window, qtbot):
    sw = window.view("sweep")
    window.show_view("sweep")
    sw.configure([("cache.slots", "2,4,8"), ("prefetch.window", "1:3")], "prefetch_stall_us")
    seen = []
    sw.grid.point.connect(lambda i, v: seen.append(i))
    with qtbot.waitSignal(sw.finished, timeout=60_000):
        sw.run()
    assert sorted(seen) == list(range(9))  # every point reached the view as it completed
    sw.run_on.setCurrentText("carrier-pigeon")
    with qtbot.waitSignal(sw.stopped, timeout=60_000):
        sw.run()
    assert "--executor: unknown executor 'carrier-pigeon'" in sw.status.text()


def test_sweep_view_tests_the_connection(window, qtbot, monkeypatch):
    sw = window.view("sweep")
    window.show_view("sweep")
    sw.run_on.setCurrentText("local")
    sw.run_on.test_connection()
    qtbot.waitUntil(lambda: not sw.run_on.testing, timeout=30_000)
    assert sw.status.text().startswith("✓ this computer:")
    monkeypatch.setenv("KVVIZ_CONNECT_TIMEOUT_S", "1")
    sw.run_on.setCurrentText("tcp://127.0.0.1:9")
    sw.run_on.test_connection()
    qtbot.waitUntil(lambda: not sw.run_on.testing, timeout=30_000)
    assert "⚠" in sw.status.text() and "cannot connect to the Dask scheduler at tcp://127.0.0.1:9" in sw.status.text()


def test_heat_map_figures_contrast_with_their_cells():
    import pyqtgraph as pg

    from app.views.sweep import cell_text_colour
    viridis, diverging = pg.colormap.get("viridis"), pg.ColorMap([0, 0.5, 1], [(213, 94, 0), (255, 255, 255), (0, 114, 178)])
    assert cell_text_colour(viridis, (0, 10), 0) == "#fff"     # dark purple
    assert cell_text_colour(viridis, (0, 10), 10) == "#111"    # yellow
    assert cell_text_colour(diverging, (-5, 5), 0) == "#111"   # white middle
    assert cell_text_colour(viridis, (0, 10), float("nan")) == "#111"


def test_sweep_view_slices_a_three_axis_grid_with_a_slider(window, qtbot):
    sw = window.view("sweep")
    window.show_view("sweep")
    sw.configure([("cache.slots", "2,4,8"), ("prefetch.window", "1:3"), ("storage.latency_us", "25,50")],
                 "prefetch_stall_us")
    with qtbot.waitSignal(sw.finished, timeout=60_000) as sig:
        sw.run()
    res = sig.args[0]
    assert len(res.axes) == 3 and len(res.values) == 18 and sw.status.text() == "18 runs done"
    slider, label = sw.sliders[0]
    assert label.text() == "storage.latency_us = 25"
    first = sw._slice(res).values
    slider.setValue(1)
    assert label.text() == "storage.latency_us = 50"
    second = sw._slice(res).values
    # slot-starved prefetch stalls scale with the storage latency: the slider picks the slice
    assert first != second and second[0] == [res.values[(0 * 3 + j) * 2 + 1] for j in range(3)]


def test_sweep_view_offers_nested_metrics_and_families(window, qtbot):
    sw = window.view("sweep")
    sw.set_scenario(window.panel.data(), "<t>", type(window.result.scenario),
                    {"speedup": 8.0, "ok": True, "policies": {"lru": {"hit_rate": 0.8}, "fifo": {"hit_rate": 0.9}}})
    items = [sw.metric_box.itemText(i) for i in range(sw.metric_box.count())]
    assert items == ["speedup", "policies.lru.hit_rate", "policies.fifo.hit_rate", "policies.*.hit_rate"]
    window.show_view("sweep")  # a family on the worked example: one line per query
    window.view("sweep").configure([("storage.latency_us", "10,25")], "queries.*.stall_us")
    sw.set_scenario(window.panel.data(), window.panel.path(), type(window.result.scenario),
                    window.result.metrics_dict())
    sw.metric_box.setCurrentText("queries.*.stall_us")
    with qtbot.waitSignal(sw.finished, timeout=60_000) as sig:
        sw.run()
    assert sig.args[0].series == ("0", "1") and len(sw.legend.items) == 2
    assert sw.status.text() == "2 runs done"  # grid points, not lines
    sw.metric_box.setCurrentText("speedup")
    with qtbot.waitSignal(sw.finished, timeout=60_000):
        sw.run()
    assert not sw.legend.isVisible()  # one line: no (empty) legend box over the data


def test_cancel_stops_a_long_run(window, qtbot):
    old = window.result
    window.panel.set_value("sequence.length", 8_000_000)
    qtbot.waitUntil(window.runner.busy, timeout=5_000)
    qtbot.waitUntil(window.cancel_btn.isVisible, timeout=5_000)
    window.cancel_btn.click()
    assert not window.runner.busy()
    # cancel joined the child's reader thread: whatever it sent is queued here by now
    with qtbot.assertNotEmitted(window.runner.finished):
        QApplication.processEvents()
    assert window.result is old  # the cancelled run never arrives
    window.panel.set_value("sequence.length", 16)  # and the runner still works
    assert wait_new_result(qtbot, window, old).scenario.sequence.length == 16


def test_close_with_unsaved_changes_prompts(window, qtbot):
    window.panel.set_value("cache.slots", 6)
    asked = []
    window.ask_unsaved = lambda: asked.append(1) or QMessageBox.Cancel
    window.close()
    assert asked and window.isVisible()  # Cancel keeps the window open
    window.ask_unsaved = lambda: QMessageBox.Discard
    window.close()
    assert not window.isVisible()


def test_recent_files_and_layout_are_remembered(qtbot, settings, tmp_path):
    other = tmp_path / "copy.toml"
    other.write_text((SCENARIOS / "rope_prefetch_16.toml").read_text())
    win = MainWindow(str(other), settings=settings)
    qtbot.addWidget(win)
    qtbot.waitUntil(lambda: win.result is not None, timeout=30_000)
    win.close()
    assert settings.value("recent")[0] == str(other) and settings.value("windowState") is not None


def test_every_view_screenshot_is_not_blank(window, qtbot):
    window.tab("compare").pin()
    for name in (t.name for t in TABS):
        window.show_view(name)
        qtbot.wait(50)
        img = window.tabs.currentWidget().grab().toImage()
        px = np.array([[img.pixelColor(x, y).lightness() for x in range(0, img.width(), 8)]
                       for y in range(0, img.height(), 8)])
        assert (px < 200).mean() > 0.001, name  # some dark ink: text, bars, or a note


def test_no_widget_attribute_shadows_a_qt_method(window):
    # `self.metric = QComboBox()` on a QWidget hides QPaintDevice::metric and segfaults on the
    # first paint (it happened twice): no attribute of any app object may reuse a Qt name.
    from PySide6.QtCore import QObject, SignalInstance
    checked = 0
    for obj in [window, *window.findChildren(QObject)]:
        cls = type(obj)
        if not cls.__module__.startswith("app."):
            continue
        qt_names = {n for base in cls.__mro__ if base.__module__.startswith("PySide6") for n in dir(base)}
        mine = {k for k, v in vars(obj).items() if not isinstance(v, SignalInstance)}  # PySide caches signals
        clash = sorted(mine & qt_names)
        assert not clash, f"{cls.__name__} attributes shadow Qt: {clash}"
        checked += 1
    assert checked >= 10


def test_span_layer_culls_and_merges():
    n = 1_000_000
    x0 = np.arange(n, dtype=float)
    layer = SpanLayer("#000", np.zeros(n, dtype=np.int64), x0, x0 + 0.5)
    assert len(layer.visible_rects(0, n, n / 1000)) <= 1001   # zoomed out: per pixel column
    assert len(layer.visible_rects(100, 110, 0.01)) == 11      # zoomed in: only what is visible


def test_span_layer_keeps_long_spans_that_start_before_the_view():
    # lane 0: one span over 0–1000 among 999 short ones; lane 1: one span ending before the view
    x0 = np.concatenate([[0.0], np.arange(1, 1000.0), [0.0]])
    x1 = np.concatenate([[1000.0], np.arange(1, 1000.0) + 0.1, [40.0]])
    lanes = np.array([0] * 1000 + [1])
    layer = SpanLayer("#000", lanes, x0, x1)
    zoomed_in = layer.visible_rects(500.2, 500.3, 0.001)  # between two short spans
    assert zoomed_in[:, :3].tolist() == [[0.0, -0.31, 1000.0]]
    zoomed_out = layer.visible_rects(400, 600, 1.0)  # > 64 spans: merged per pixel column
    assert zoomed_out[:, 0].tolist() == [0.0] and zoomed_out[0, 2] == 1000.0


def test_merge_runs():
    a, b = merge_runs(np.array([0., 1, 5, 6]), np.array([2., 3, 6, 9]))
    assert a.tolist() == [0, 5] and b.tolist() == [3, 9]


@pytest.mark.parametrize("view", ["timeline", "occupancy", "counters", "metrics", "ladder", "rope"])
def test_cli_screenshot_views(view, tmp_path):
    out = tmp_path / f"{view}.png"
    assert gui_main([SEED, "--screenshot", str(out), "--view", view, "--size", "1280x800"]) == 0
    from PySide6.QtGui import QImage
    assert QImage(str(out)).size().toTuple() == (1280, 800)  # the smallest layout fits


def test_cli_screenshot_compare_and_sweep(tmp_path):
    from PySide6.QtGui import QImage
    out = tmp_path / "c.png"
    assert gui_main([SEED, "--screenshot", str(out), "--view", "compare", "--set", "storage.latency_us=40"]) == 0
    assert QImage(str(out)).height() == 900
    out = tmp_path / "s.png"
    assert gui_main([SEED, "--screenshot", str(out), "--view", "sweep", "--sweep", "cache.slots=2,8",
                     "--metric", "hits"]) == 0
    assert out.exists()


@pytest.mark.slow  # the window, and a curve of 5 policies × 12 capacities
def test_cli_screenshot_replay(tmp_path, capsys):
    from PySide6.QtGui import QImage

    # 5,000 objects of 1 kB: every `auto` capacity (from 0.1% of the footprint) is past
    # libCacheSim's guard, so no point needs a guarded child process (the 9-request golden trace
    # took ~40 of them, 14 s; that guard has its own tests in test_replay_engines)
    trace = tmp_path / "trace.csv"
    trace.write_text("time,id,size\n" + "".join(f"{t},{t * 7919 % 5000},1000\n" for t in range(8000)))
    out = tmp_path / "r.png"
    assert gui_main([SEED, "--screenshot", str(out), "--view", "replay", "--replay", str(trace)]) == 0
    assert QImage(str(out)).height() == 900
    trace.write_text("time,id\n1,a\n")
    assert gui_main([SEED, "--screenshot", str(tmp_path / "bad.png"), "--view", "replay", "--replay", str(trace)]) == 2
    assert "line 1: missing column(s) size" in capsys.readouterr().err and not (tmp_path / "bad.png").exists()


def test_cli_screenshot_view_only(tmp_path):
    from PySide6.QtGui import QImage
    png, svg = tmp_path / "c.png", tmp_path / "c.svg"
    assert gui_main([SEED, "--screenshot", str(png), "--view", "counters", "--view-only", "--size", "1280x800"]) == 0
    w, h = QImage(str(png)).size().toTuple()
    assert w < 2 * 1280 and h < 2 * 800 and w % 2 == 0 and h % 2 == 0  # the tab alone, at twice its pixels
    assert gui_main([SEED, "--screenshot", str(svg), "--view", "counters", "--view-only"]) == 0
    assert svg.read_text().startswith("<?xml") and "slots" in svg.read_text()


def test_cli_screenshot_bad_input(tmp_path, capsys):
    assert gui_main([str(tmp_path / "missing.toml"), "--screenshot", str(tmp_path / "x.png")]) == 2
    assert "file not found" in capsys.readouterr().err and not (tmp_path / "x.png").exists()
    assert gui_main([SEED, "--screenshot", str(tmp_path / "x.png"), "--set", "cache.slots=0"]) == 2
    assert gui_main([SEED, "--screenshot", str(tmp_path / "x.png"), "--view", "sweep"]) == 2
    assert not (tmp_path / "x.png").exists()


def test_cli_screenshot_selects_and_measures(tmp_path, capsys):
    from app.main import marks_of
    # the rope example: the GPU lane's fetch at 10 µs selected, the cursors 0 → 27 µs
    out = tmp_path / "m.png"
    assert gui_main([SEED, "--screenshot", str(out), "--select", "GPU@10us", "--measure", "0us,27us", "--whole-run"]) == 0
    assert out.stat().st_size > 1000
    assert marks_of("GPU · x@1.5 ms", "0ns,2s", "timeline") == (("GPU · x", 1.5e6), (0.0, 2e9))
    for args, said in ((["--select", "no such lane@1us"], "--select: no lane is named"),
                       (["--select", "GPU@10"], "--select: expected a time"),
                       (["--measure", "1us"], "--measure: expected T1,T2"),
                       (["--select", "GPU@1us", "--view", "occupancy"], "with --view timeline")):
        bad = tmp_path / "bad.png"
        assert gui_main([SEED, "--screenshot", str(bad), *args]) == 2
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1 and not bad.exists()
    assert gui_main([SEED, "--select", "GPU@1us"]) == 2  # in the window one clicks instead
    assert "are for a --screenshot" in capsys.readouterr().err


def test_headless_job_writes_figure_and_metrics(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    assert gui_main(["--out", str(tmp_path)]) == 0
    assert "no display" in capsys.readouterr().out
    assert (tmp_path / "rope_prefetch_16.svg").read_text().startswith("<svg")
    assert json.loads((tmp_path / "rope_prefetch_16.json").read_text())["metrics"]["speedup"] == 8.0
    assert (tmp_path / "rope_prefetch_16.png").stat().st_size > 1000


def test_export_menu_writes_files(window, tmp_path, qtbot):
    for fmt, name in (("svg", "t.svg"), ("png", "t.png"), ("perfetto", "t.json"), ("csv", "t.csv")):
        assert exported(qtbot, window, lambda f=fmt, n=name: window.export(f, str(tmp_path / n)))
    assert (tmp_path / "t.svg").read_text().startswith("<svg")
    assert (tmp_path / "t.png").stat().st_size > 1000
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert (tmp_path / "t_spans.csv").exists()


def test_a_figure_export_leaves_the_menus_text_as_it_was(window, tmp_path, qtbot):
    """Painting the 300-dpi PNG once drew every menu's items at a quarter size, for the rest of
    the session (seen in a real window)."""
    from PySide6.QtWidgets import QMenu
    menu = QMenu()
    qtbot.addWidget(menu)
    for text in ("Home", "Reset Layout", "Show the Whole Run"):
        menu.addAction(text)
    menu.resize(menu.sizeHint())
    before = menu.grab().toImage()
    exported(qtbot, window, lambda: window.export("png", str(tmp_path / "t.png")))
    assert menu.grab().toImage() == before


def test_save_dialogs_open_where_the_last_export_went(window, tmp_path, qtbot):
    """They opened in the directory the app was started from: with `make run`, the source tree."""
    import os

    from app.save_dir import start_path
    first = start_path(window.settings, "t.svg")
    assert not first.startswith(os.getcwd() + os.sep) or os.getcwd() == str(Path.home())
    out = tmp_path / "figures"
    out.mkdir()
    exported(qtbot, window, lambda: window.export("svg", str(out / "t.svg")))
    assert start_path(window.settings, "u.png") == str(out / "u.png")
    assert start_path(window.view("replay").settings, "c.csv") == str(out / "c.csv")  # the Replay tab's Save CSV too


def test_metrics_groups_show_each_policy_and_query():
    from app.views.metrics import metric_groups
    groups = metric_groups({"policies": {"lru": {"hit_rate": 0.5}, "fifo": {"hit_rate": 0.4, "jobs": 3}},
                            "queries": [{"position": 8, "window": [5, 11]}], "formulas": {"L_pw": 2}})
    # a policy a row: all of them show in a narrow dock (one column each showed 1½ of 5 at 1280 × 800)
    assert groups[0] == ("policies", ["hit_rate", "jobs"], [("lru", ["0.5", ""]), ("fifo", ["0.4", "3"])])
    assert groups[1] == ("queries", ["position"], [("0", ["8"])])
    assert groups[2] == ("formulas", ["value"], [("L_pw", ["2"])])


def test_visible_range_export_keeps_only_what_is_on_screen(window, tmp_path, qtbot):
    window.view("timeline").plot.getPlotItem().setXRange(40, 80, padding=0)
    exported(qtbot, window, lambda: window.export("svg", str(tmp_path / "v.svg"), visible_range=True))
    svg = (tmp_path / "v.svg").read_text()
    assert svg.count('class="span"') < len(window.result.trace.spans)


def test_ladder_drag_edits_the_scenario_and_reruns(window, qtbot):
    old = window.result
    window.open(str(SCENARIOS / "ladder_seed.toml"))
    first = wait_new_result(qtbot, window, old)
    window.show_view("ladder")
    rungs = [dict(r) for r in window.tab("ladder").ladder.rungs()]
    rungs[0]["hbm_hit_pct"] = 75.0
    window.tab("ladder").ladder.rungs_edited.emit(rungs)
    r = wait_new_result(qtbot, window, first)
    assert r.metrics["rungs"][0]["hbm_hit_pct"] == 75.0
    # 0.75·100 + 0.25·0.9·200 + 0.25·0.1·25000 = 75 + 45 + 625 ns
    assert r.metrics["rungs"][0]["mean_latency_ns"] == pytest.approx(745.0)


def test_garbage_is_collected_on_the_gui_thread_only(qtbot):
    # A collection started on a worker thread destroyed Qt objects there and hung the app
    # (app/gui_gc.py): automatic collection is off and the GUI thread's timer collects.
    import gc
    import weakref

    from app.gui_gc import collect_on_gui_thread
    collect_on_gui_thread()
    assert not gc.isenabled()

    class Node:
        pass
    cycle = Node()
    cycle.me = cycle
    ref = weakref.ref(cycle)
    del cycle
    garbage = [[] for _ in range(gc.get_threshold()[0] + 1)]  # an automatic collection would be due
    assert ref() is not None  # nothing collects it off the event loop
    del garbage  # (the young count falls again: the timer must not depend on it)
    qtbot.waitUntil(lambda: ref() is None, timeout=5_000)


def test_a_new_scenarios_sweep_starts_from_a_metric_it_computes(qtbot, bundled_small):
    """The sweep's metric for a new scenario: the policies' hit rates (one line each) where the
    run compares policies, not the first numeric metric (AttentionStore's `conversations`, an input)."""
    from app.views.sweep import SweepView, default_metric
    view = SweepView()
    qtbot.addWidget(view)
    res = bundled_small["attention_store_sharegpt"]
    view.set_scenario({"kind": "attention_store"}, "<scenario>", type(res.scenario), res.metrics_dict(), new=True)
    assert view.metric_box.currentText() == "policies.*.hit_rate"
    assert not view.plot.getPlotItem().getAxis("left").style["showValues"]  # no sweep yet: no numbers
    assert default_metric(["conversations", "turns"]) == "conversations"  # nothing preferred: the first
