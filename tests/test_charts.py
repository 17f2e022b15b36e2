"""Numbers from every chart (issue 22, item 5): hover readouts, Data as CSV through the tab
protocol, stable colours per policy, the heat map's colour map, ticks and threshold contour."""
from __future__ import annotations

import csv

import numpy as np
import pytest

from kvviz.export.colours import POLICY_COLOURS, heat_levels, series_colour, threshold_of, threshold_stop
from kvviz.format import readable_bytes, readable_number

from .conftest import exported


def test_series_colour_is_fixed_by_name_not_order():
    assert series_colour("lru") == POLICY_COLOURS["lru"]
    assert series_colour("lru (SHARDS R=0.01 stack distances)") == POLICY_COLOURS["lru"]
    assert series_colour("some_new_policy") == series_colour("some_new_policy")  # stable outside the table
    assert len(set(POLICY_COLOURS[p] for p in ("lru", "fifo", "belady", "s3fifo", "sieve", "arc"))) == 6


def test_thresholded_metric_is_centred_on_its_threshold():
    assert threshold_of("slack_us") == 0.0 and threshold_of("layers.3.slack_us") == 0.0
    assert threshold_of("hit_rate") is None
    assert heat_levels("slack_us", -40.05, 23.95) == (-40.05, 23.95)
    assert heat_levels("slack_us", 5.0, 23.0) == (0.0, 23.0)  # the threshold stays on the scale
    assert threshold_stop("slack_us", (-40.0, 3640.0)) == pytest.approx(40 / 3680)  # white at 0
    assert threshold_stop("hit_rate", (0.0, 1.0)) is None
    assert heat_levels("hit_rate", 0.2, 0.9) == (0.2, 0.9)


def test_contour_follows_the_sign_change_and_ticks_thin():
    from app.views.heat_map import contour_segments, thinned_ticks
    grid = np.array([[-1.0, 1.0], [-1.0, -1.0]])
    x, y = contour_segments(grid, 0.0)
    # one vertical edge between (0,0) and (0,1), one horizontal between (0,1) and (1,1)
    segs = {tuple(sorted(((x[k], y[k]), (x[k + 1], y[k + 1])))) for k in range(0, len(x), 2)}
    assert segs == {((0.5, -0.5), (0.5, 0.5)), ((0.5, 0.5), (1.5, 0.5))}
    ticks = thinned_ticks(list(range(62)), 600, 46)
    assert 5 <= len(ticks) <= 14 and ticks[0] == (0, "0")


def test_numbers_for_people():
    from kvviz.format import bytes_for_people, metric_text
    assert readable_number(1e8) == "100,000,000"
    assert readable_bytes(7_369_224_355_840) == "6.70 TiB" and readable_bytes(1536) == "1.50 KiB"
    assert readable_bytes(512) == "512 B" and readable_bytes(200 * 2 ** 20) == "200 MiB"
    assert bytes_for_people(7_369_224_355_840) == "6.70 TiB (7,369,224,355,840 B)"
    assert metric_text("cache_capacity", 1e8) == "100,000,000"  # not 1e+08
    assert metric_text("footprint_bytes", 7_369_224_355_840) == "6.70 TiB (7,369,224,355,840 B)"
    assert metric_text("bytes_per_s", 2e9) == "2,000,000,000"  # a rate is no byte count
    assert metric_text("p", 3.2e-7) == "3.20e-7" and metric_text("stall_us", 400.0) == "400.0"


@pytest.fixture
def swept(window, qtbot):
    window.show_view("sweep")
    sw = window.view("sweep")
    sw.configure([("cache.slots", "2,4,8"), ("prefetch.window", "1:3")], "prefetch_stall_us")
    with qtbot.waitSignal(sw.finished, timeout=60_000):
        sw.run()
    return sw


@pytest.mark.gui
def test_a_sweep_cells_hover_shows_its_value(swept):
    from PySide6.QtCore import QPointF
    res = swept.result
    vb = swept.plot.getPlotItem().getViewBox()
    i, j = 2, 1  # cache.slots = 8, prefetch.window = 2
    scene = vb.mapViewToScene(QPointF(j + 0.3, i - 0.2))  # anywhere inside the cell
    swept.plot.scene().sigMouseMoved.emit(scene)
    text = swept.info.text()
    assert "cache.slots = 8" in text and "prefetch.window = 2" in text
    assert text.endswith(f"prefetch_stall_us = {readable_number(res.values[i][j])}")


@pytest.mark.gui
def test_export_data_writes_the_sweep_grid_as_csv(window, swept, tmp_path, qtbot):
    out = tmp_path / "grid.csv"
    assert exported(qtbot, window, lambda: window.export_data(str(out)))
    rows = list(csv.reader(out.open()))
    assert rows[0] == ["cache.slots", "prefetch.window", "prefetch_stall_us"]
    assert len(rows) == 1 + 9
    got = {(int(r[0]), int(r[1])): float(r[2]) for r in rows[1:]}
    res = swept.result
    for i, slots in enumerate((2, 4, 8)):
        for j, window_ in enumerate((1, 2, 3)):
            assert got[(slots, window_)] == pytest.approx(res.values[i][j])


@pytest.mark.gui
def test_the_heat_map_is_vector_cells_with_thinned_ticks(swept):
    from app.views.heat_map import HeatCells
    items = swept.plot.getPlotItem().items
    cells = [it for it in items if isinstance(it, HeatCells)]
    assert len(cells) == 1 and cells[0].grid.shape == (3, 3)
    assert not any(type(it).__name__ == "ImageItem" for it in items)


@pytest.mark.gui
def test_a_policy_keeps_its_colour_when_another_is_ticked(qtbot):
    from app.views.replay import ReplayView
    from kvviz.replay.model import ReplayResult
    view = ReplayView()
    qtbot.addWidget(view)

    def curves(names):
        view.results = [ReplayResult(p, cap, 100, 100 - cap // 10 - k, 100, 50, "python")
                        for k, p in enumerate(names) for cap in (10, 100, 1000)]
        view._draw()
        return {p: c.opts["pen"].color().name().upper() for p, c in view.curves.items()}
    before = curves(["lru", "fifo", "sieve"])
    after = curves(["arc", "lru", "fifo", "sieve"])  # ticked, and listed first
    assert all(after[p] == before[p] for p in before)
    assert after["arc"] not in before.values()


@pytest.mark.gui
def test_a_replay_points_hover_names_policy_capacity_and_ratio(qtbot):
    from PySide6.QtCore import QPointF

    from app.views.replay import ReplayView
    from kvviz.replay.model import ReplayResult
    view = ReplayView()
    qtbot.addWidget(view)
    view.resize(900, 600)
    view.show()
    view.results = [ReplayResult("lru", cap, 100, m, 100, m, "python") for cap, m in ((10, 90), (1000, 40))]
    view._draw()
    qtbot.wait(50)
    vb = view.plot.getPlotItem().getViewBox()
    view.plot.scene().sigMouseMoved.emit(vb.mapViewToScene(QPointF(3.0, 0.40)))  # log10(1000)
    assert view.info.text().startswith("lru · capacity 1000 B · request miss ratio 0.4000")


@pytest.mark.gui
def test_cancel_clears_the_status_and_marks_the_shown_run(window, qtbot):
    shown = window.result
    cancelled = []

    def cancel_at_start(busy):
        if busy and not cancelled:
            cancelled.append(True)
            window.cancel_run()
    window.runner.busy_changed.connect(cancel_at_start)
    window.panel.set_value("cache.slots", 6)
    qtbot.waitUntil(lambda: bool(cancelled), timeout=10_000)
    assert not window.runner.busy()
    assert "simulating" not in window.status.text() and "cancelled" in window.status.text()
    assert not window.stale_note.isHidden() and "before the last edit" in window.stale_note.text()
    assert window.result is shown
    assert window.cancel_btn.focusPolicy() == 0  # Qt.NoFocus: hiding it never moves the focus


@pytest.mark.gui
def test_run_and_cancel_keep_their_place_when_a_run_starts(window, qtbot):
    window.show_view("sweep")
    sw = window.view("sweep")
    qtbot.wait(50)
    before = (sw.jobs.run_btn.geometry(), sw.jobs.cancel_btn.geometry())
    sw.jobs.progress.setVisible(True)  # as a run starting shows it
    sw.layout().activate()
    qtbot.wait(20)
    assert (sw.jobs.run_btn.geometry(), sw.jobs.cancel_btn.geometry()) == before


def test_change_from_a_negative_or_zero_base_is_absolute():
    from app.views.compare import change_text, metric_diff
    assert change_text(-40.05, 23.95) == "+64.00"  # not "+159.8%"
    assert change_text(0.0, 5.0) == "+5.00"
    assert change_text(50.0, 75.0) == "+50.0%"
    row = dict((r[0], r) for r in metric_diff({"slack_us": -40.05}, {"slack_us": 23.95}))["slack_us"]
    assert row[4] == "+64.00"


@pytest.mark.gui
def test_compare_shows_what_differs(window, qtbot):
    window.tab("compare").pin()
    old = window.result
    window.panel.set_value("cache.slots", 6)
    qtbot.waitUntil(lambda: window.result is not old, timeout=30_000)
    window.show_view("compare")
    view = window.view("compare")
    assert view.diff == [("cache.slots", "8", "6")]
    assert "cache.slots: 8 → <b>6</b>" in view.diff_label.text()
    assert "cache.slots = 8" in view.a_label.text() and "cache.slots = 6" in view.b_label.text()
    head, rows = window.current_tab().data_rows()
    assert head[0] == "metric" and rows


@pytest.mark.gui
def test_compare_opens_on_the_mechanisms_region(qtbot, bundled):
    from app.views.compare import CompareView
    from kvviz.mechanisms import mechanisms
    res = bundled["engram_qwen3_32b_cxl"]
    view = CompareView()
    qtbot.addWidget(view)
    view.pin(res)
    view.set_result(res)
    lo, hi = mechanisms()["engram_window"].initial_range(res)
    (x0, x1), _ = view.a.plot.getPlotItem().getViewBox().viewRange()
    assert x0 == pytest.approx(lo / view.a.scale) and x1 == pytest.approx(hi / view.a.scale)
    (b0, b1), _ = view.b.plot.getPlotItem().getViewBox().viewRange()
    assert (b0, b1) == pytest.approx((x0, x1))  # one time axis
    assert view.diff_label.text() == "A and B have the same parameters."


@pytest.mark.gui
def test_compare_timelines_are_instruments_too(qtbot, bundled):
    # click in A: its details; the panes open together so A's and B's times stay aligned;
    # Shift-click: Δt; Shift-drag in B: that range's statistics in B's pane
    from PySide6.QtCore import QPointF, Qt

    from app.views.compare import CompareView
    a_res = bundled["engram_qwen3_32b_cxl"]
    view = CompareView()
    qtbot.addWidget(view)
    view.resize(1000, 800)
    view.show()
    view.pin(a_res)
    view.set_result(bundled["engram_qwen3_32b_rdma"])
    qtbot.waitExposed(view)
    a, b = view.a, view.b
    assert not a.search.isVisible() and not b.search.isVisible()  # no find row here
    tr = a_res.trace
    lane = next(i for i, n in enumerate(tr.lanes["name"].tolist()) if n.startswith("CXL pool →"))
    f = tr.spans[(tr.spans["lane"] == lane) & (tr.spans["kind"] == 1)][0]
    a.viewbox.setXRange(f["start"] / a.scale * 0.98, f["end"] / a.scale * 1.02, padding=0)
    at = a.plot.mapFromScene(a.viewbox.mapViewToScene(QPointF((f["start"] + f["end"]) / 2 / a.scale, lane)))
    qtbot.mouseClick(a.plot.viewport(), Qt.LeftButton, pos=at)
    assert "CXL → HBM" in a.details_text() and f"{tr.facts_of(f)['bytes']:,} B" in a.details_text()
    assert not a.details_pane.isHidden() and not b.details_pane.isHidden()
    qtbot.wait(20)
    assert a.plot.width() == b.plot.width()  # one time axis, in pixels too
    a.place_cursor(f["start"], snap=False)
    a.place_second_cursor(f["end"], snap=False)
    assert a.delta_ns() == pytest.approx(f["end"] - f["start"])
    b._range_dragged(f["start"] / b.scale, f["end"] / b.scale, True)
    assert b.details_text().startswith("Range") and "busy" in b.details_text()
    b.close_details()
    assert a.details_pane.isHidden() and b.details_pane.isHidden() and a.selection is None


def test_cut_to_clips_trims_shapes_and_text_in_translated_groups():
    from xml.dom import minidom

    from app.figure_flatten import cut_to_clips, flatten_transforms
    svg = ('<svg xmlns="http://www.w3.org/2000/svg"><clipPath id="c"><path d="M10,0 L110,0 L110,50 L10,50 Z"/>'
           '</clipPath><g clip-path="url(#c)"><g transform="matrix(1,0,0,1,0,0)">'
           '<rect x="-20" y="5" width="50" height="10"/><rect x="120" y="5" width="5" height="5"/></g>'
           '<g transform="matrix(1,0,0,1,-30,20)"><text x="4" y="15">0.00 us</text>'
           '<polygon points="0,-11 52,-11 52,11 0,11 0,-11"/></g>'
           '<g transform="matrix(2,0,0,1,0,0)"><text x="30" y="9">kept</text></g>'
           '<polyline points="5,25 200,25"/></g></svg>')
    doc = minidom.parseString(cut_to_clips(flatten_transforms(svg)))
    rects = [(r.getAttribute("x"), r.getAttribute("width")) for r in doc.getElementsByTagName("rect")]
    assert rects == [("10", "20")]  # cut at the clip's left edge; the one right of it removed
    assert [t.firstChild.data for t in doc.getElementsByTagName("text")] == ["kept"]  # x = -26: gone
    assert doc.getElementsByTagName("polygon")[0].getAttribute("points") == "10,9 22,9 22,31 10,31 10,9"
    assert doc.getElementsByTagName("polyline")[0].getAttribute("points") == "10,25 110,25"
    assert doc.getElementsByTagName("clipPath")[0].getElementsByTagName("path")[0].getAttribute("stroke") == "none"


def _zoomed_timeline_figure(window, qtbot, tmp_path):
    window.show_view("timeline")
    tv = window.time_view
    tv.plot.getPlotItem().getViewBox().setXRange(20, 60, padding=0)  # µs: bars cross both edges
    qtbot.wait(50)
    # 5 in at 96 dpi: the PNG 480 px wide, the SVG 5 in wide (a renderer at 96 dpi: 480 px too)
    window.settings.setValue("figure/width", "5in")
    window.settings.setValue("figure/dpi", "96")
    svg = tmp_path / "view.svg"
    png = tmp_path / "view.png"
    exported(qtbot, window, lambda: window.export_view("svg", str(svg)))
    exported(qtbot, window, lambda: window.export_view("png", str(png)))
    return svg, png


@pytest.mark.gui
def test_current_view_svg_of_a_zoomed_timeline_is_clipped_and_has_no_widgets(window, qtbot, tmp_path):
    svg, _ = _zoomed_timeline_figure(window, qtbot, tmp_path)
    text = svg.read_text()
    assert "<clipPath" in text and 'clip-path="url(#p0-' in text
    for widget_text in ("Run sweep", "Cancel", "Pin as A", "Scenario"):
        assert widget_text not in text
    assert "rope_prefetch_16.toml" in text and "as in its file" in text  # the caption line
    assert 'width="5.000in"' in text  # the chosen physical size, in inches


@pytest.mark.gui
def test_current_view_png_has_the_chosen_inches_times_dpi(window, qtbot, tmp_path):
    from PySide6.QtGui import QImage
    _, png = _zoomed_timeline_figure(window, qtbot, tmp_path)  # 5 in at 96 dpi
    img = QImage(str(png))
    assert img.width() == 480 and round(img.dotsPerMeterX() * 0.0254) == 96
    window.settings.setValue("figure/dpi", "200")
    exported(qtbot, window, lambda: window.export_view("png", str(png)))
    img2 = QImage(str(png))
    assert img2.width() == 1000 and abs(img2.height() - img.height() * 200 / 96) <= 2  # proportions kept


def _diff_share(a, b) -> float:
    from PySide6.QtGui import QImage
    ia, ib = QImage(str(a)).convertToFormat(QImage.Format_Grayscale8), QImage(str(b)).convertToFormat(
        QImage.Format_Grayscale8)
    assert (ia.width(), ia.height()) == (ib.width(), ib.height())
    w, h = ia.width(), ia.height()
    pa = np.frombuffer(ia.constBits(), np.uint8).reshape(h, ia.bytesPerLine())[:, :w].astype(int)
    pb = np.frombuffer(ib.constBits(), np.uint8).reshape(h, ib.bytesPerLine())[:, :w].astype(int)
    return float((np.abs(pa - pb) > 64).mean())


@pytest.mark.gui
def test_the_svg_renders_as_the_png_in_qts_renderer(window, qtbot, tmp_path):
    from kvviz.export.qt_render import render_svg_bytes
    svg, png = _zoomed_timeline_figure(window, qtbot, tmp_path)
    out = tmp_path / "qt.png"
    out.write_bytes(render_svg_bytes(svg.read_bytes(), "png", 96)[0])
    assert _diff_share(out, png) < 0.03  # text antialiasing differs; a bar spilling over the names would not


@pytest.mark.gui
def test_the_svg_renders_as_the_png_in_librsvg(window, qtbot, tmp_path):
    import shutil
    import subprocess
    if shutil.which("rsvg-convert") is None:
        pytest.skip("rsvg-convert is not installed (ImageMagick's own MSVG renderer lacks clip paths)")
    svg, png = _zoomed_timeline_figure(window, qtbot, tmp_path)
    out = tmp_path / "rsvg.png"
    subprocess.run(["rsvg-convert", "-d", "96", "-p", "96", "-b", "white", "-o", str(out), str(svg)], check=True)
    assert _diff_share(out, png) < 0.03


@pytest.mark.gui
def test_the_figure_size_dialog_checks_as_the_cli_and_keeps_its_fields_still(window, qtbot):
    from PySide6.QtWidgets import QDialogButtonBox
    dialog = window.figure_size_dialog()
    qtbot.waitExposed(dialog)
    ok = dialog.buttons.button(QDialogButtonBox.Ok)
    width, dpi = dialog.fields["width"], dialog.fields["dpi"]
    assert width.text() == "10in" and dpi.text() == "300" and ok.isEnabled()  # the CLI's defaults
    before = (width.geometry(), dpi.geometry(), dialog.size())
    width.setText("1in")
    assert not ok.isEnabled() and dialog.message.text().startswith("width: a figure's width must be")
    dpi.setText("x")  # still one message: the first wrong value's
    assert dialog.message.text().count("must") == 1
    qtbot.wait(20)
    assert (width.geometry(), dpi.geometry(), dialog.size()) == before
    width.setText("165mm")
    dpi.setText("600")
    assert ok.isEnabled()
    ok.click()
    size = window.figure_size()
    assert size.width_px == pytest.approx(165 / 25.4 * 96, abs=0.01) and size.dpi == 600


def test_no_policy_wears_a_tier_colour():
    """A chart that splits a policy's bar by tier (Policies, Tiers) must not draw a policy in a
    tier's colour: every policy in the table, and every fallback, differs from every tier."""
    from kvviz.export.colours import EXTRA
    from kvviz.palette import tier_color
    tiers = {tier_color(t).upper() for t in ("hbm", "cxl", "dram", "ssd", "remote")}
    assert len(tiers) == 5
    assert not tiers & {c.upper() for c in POLICY_COLOURS.values()}
    assert not tiers & {c.upper() for c in EXTRA}
