"""Figures and traces: SVG structure, PNG/PDF size, Perfetto validity, CSV round trip."""
import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from kvviz import load_scenario
from kvviz.cli import main
from kvviz.export.csv import csv_paths, read_trace_csv, trace_csv
from kvviz.export.perfetto import perfetto_events, sublanes
from kvviz.export.svg import timeline_svg
from kvviz.trace import TraceBuilder

from .conftest import BUNDLED, SCENARIOS

SVG_NS = "{http://www.w3.org/2000/svg}"
SEED = str(SCENARIOS / "rope_prefetch_16.toml")


@pytest.fixture
def seed_result(bundled):
    return bundled["rope_prefetch_16"]


def _spans_in_svg(svg: str) -> list:
    root = ET.fromstring(svg)
    return [r for r in root.iter(f"{SVG_NS}rect") if r.get("class") == "span"]


def test_svg_structure(seed_result):
    svg = timeline_svg(seed_result, width=960)
    root = ET.fromstring(svg)
    assert root.get("width") == "10in" and root.get("viewBox").startswith("0 0 960 ")
    assert len(_spans_in_svg(svg)) == len(seed_result.trace.spans)
    texts = [t.text for t in root.iter(f"{SVG_NS}text")]
    assert "time (µs)" in texts and "GPU · attention" in texts and seed_result.scenario.name in texts
    groups = {g.get("id") for g in root.iter(f"{SVG_NS}g")}
    assert {"spans-fetch", "spans-stall", "instants-hit", "instants-miss", "legend", "axis"} <= groups
    bg = root.find(f"{SVG_NS}rect")
    assert bg.get("id") == "background" and bg.get("fill") == "#ffffff"


def test_svg_time_range_keeps_only_spans_in_range(seed_result):
    svg = timeline_svg(seed_result, t0_ns=30_000, t1_ns=80_000)
    sp = seed_result.trace.spans
    in_range = ((sp["end"] >= 30_000) & (sp["start"] <= 80_000)).sum()
    assert len(_spans_in_svg(svg)) == in_range < len(sp)


def test_axis_labels_of_a_narrow_range_differ(seed_result):
    """A 3 ns window 30 µs in reads in ns (the unit of the range, as the app's timeline picks
    it: kvviz.export.axis.time_unit), its ticks 0.5 ns apart with one decimal."""
    svg = timeline_svg(seed_result, t0_ns=30_000, t1_ns=30_003)
    axis = ET.fromstring(svg).find(f".//{SVG_NS}g[@id='axis']")
    texts = [t.text for t in axis.iter(f"{SVG_NS}text")]
    labels = texts[:-1]  # the last is the unit
    assert len(labels) >= 3 and len(set(labels)) == len(labels) and labels[0] == "30000.0"
    assert "ns" in texts[-1]


@pytest.mark.parametrize("name", BUNDLED)
def test_every_bundled_scenario_exports(name, tmp_path, bundled_small):
    # each kind's lanes and marks, not its size: ShareGPT with 30 conversations (1,000 spans, and
    # coverage bars already) rather than 320,000 spans, whose Perfetto and CSV round trips alone
    # took ~10 s; the full run goes through every view in test_views
    r = bundled_small[name]
    svg = timeline_svg(r)
    merged = '<g class="coverage">' in svg  # many sub-pixel spans on a lane: coverage bars
    drawn = len(_spans_in_svg(svg))
    assert drawn == len(r.trace.spans) if not merged else 0 < drawn < len(r.trace.spans)
    doc = json.loads(json.dumps({"traceEvents": perfetto_events(r)}))
    assert any(e["ph"] == "M" for e in doc["traceEvents"])
    texts = trace_csv(r.trace)
    for table, path_ in csv_paths(tmp_path / "t").items():
        path_.write_text(texts[table])
    back = read_trace_csv(tmp_path / "t")
    for name in ("spans", "instants", "counters", "residency"):
        assert np.array_equal(getattr(back, name), getattr(r.trace, name)), name


def test_perfetto_is_clean(seed_result):
    ev = perfetto_events(seed_result)
    for e in ev:
        assert {"ph", "name", "pid"} | ({"tid"} if e["ph"] != "C" else set()) <= set(e)
        if e["ph"] in "XiC":
            assert isinstance(e["ts"], float)
    names = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    assert "GPU / GPU · attention" in names.values()
    xs = [e for e in ev if e["ph"] == "X" and "sources" not in e["args"]]  # the trace's spans
    assert len(xs) == len(seed_result.trace.spans) and all(e["tid"] in names for e in xs)
    for i, e in enumerate(ev):  # a child where flows land: inside the consumer written before it
        if e["ph"] == "X" and "sources" in e["args"]:
            p = ev[i - 1]
            assert p["tid"] == e["tid"] and p["ts"] < e["ts"] <= e["ts"] + e["dur"] <= p["ts"] + p["dur"] + 1e-9
    by_tid = {}
    for e in xs:
        by_tid.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_tid.values():
        spans.sort()
        assert all(b[0] >= a[1] - 1e-9 for a, b in zip(spans, spans[1:]))
    counters = [e["ts"] for e in ev if e["ph"] == "C"]
    assert counters == sorted(counters)


def test_overlapping_spans_get_sub_lanes():
    tb = TraceBuilder()
    lane = tb.lane("pool", "CXL")
    for s, e in [(0, 10), (2, 5), (3, 12), (6, 8), (12, 20)]:
        tb.span(lane, s, e, "fetch")
    tr = tb.build()
    assert sublanes(tr.spans["start"], tr.spans["end"]).tolist() == [0, 1, 2, 1, 0]

    class R:  # the smallest Result-like object the exporter needs
        trace, metrics = tr, {}
        scenario = load_scenario(SEED)
    ev = perfetto_events(R())
    threads = [e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"]
    assert threads == ["CXL / pool", "CXL / pool #2", "CXL / pool #3"]


@pytest.mark.gui  # PNG and PDF come from Qt's renderer (a child process)
def test_cli_png_pdf_size_and_match_svg(tmp_path, qapp):
    from PySide6.QtCore import QByteArray, QRectF
    from PySide6.QtGui import QColor, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    svg, png, pdf = tmp_path / "t.svg", tmp_path / "t.png", tmp_path / "t.pdf"
    assert main(["run", SEED, "--svg", str(svg), "--png", str(png), "--pdf", str(pdf),
                 "--width", "960", "--height", "300", "--dpi", "150"]) == 0
    img = QImage(str(png))
    assert (img.width(), img.height()) == (1500, 469)  # 10 in × 150 dpi; 300 px = 3.125 in
    assert pdf.read_bytes().startswith(b"%PDF")
    # Render the SVG ourselves at the same size: the PNG must be that picture.
    ref = QImage(img.width(), img.height(), QImage.Format_ARGB32)
    ref.fill(QColor("white"))
    p = QPainter(ref)
    p.setRenderHint(QPainter.Antialiasing)
    p.setRenderHint(QPainter.TextAntialiasing)
    QSvgRenderer(QByteArray(svg.read_bytes())).render(p, QRectF(0, 0, ref.width(), ref.height()))
    p.end()
    a = np.frombuffer(img.convertToFormat(QImage.Format_ARGB32).constBits(), np.uint8)
    b = np.frombuffer(ref.constBits(), np.uint8)
    assert np.mean(a != b) < 0.01


def test_bad_figure_args_write_nothing(tmp_path, capsys):
    png = tmp_path / "t.png"
    assert main(["run", SEED, "--png", str(png), "--from-us", "50", "--to-us", "10"]) == 2
    assert "--to-us" in capsys.readouterr().err and not png.exists()
    assert main(["run", SEED, "--svg", str(tmp_path / "x.svg"), "--width", "10"]) == 2
    assert not list(tmp_path.iterdir())


def test_figure_size_is_one_definition_for_cli_and_app():
    from kvviz.export.figure_size import FigureSize, parse_length
    assert parse_length("960") == 960 and parse_length("6.5in") == 624
    assert parse_length("25.4mm") == pytest.approx(96) and parse_length("72pt") == pytest.approx(96)
    size = FigureSize.parse("6.5in", None, "150")
    assert size.raster_px(624, 300) == (975, 469)  # inches × dpi
    with pytest.raises(ValueError) as e:
        FigureSize.parse("3in", "1cm")
    assert e.value.args[0] == "height"
    assert FigureSize(width_px=20_000).problem(raster=True)[0] == "dpi"  # 62,500 px: no PNG
    assert FigureSize(width_px=20_000).problem(raster=False) is None


@pytest.mark.parametrize("text, px", [("1_000", 1000), ("1e3", 1000), ("0x3C0", 960), ("6.5IN", 624),
                                     ("1.5 in", 144)])
def test_a_length_number_is_read_as_a_scenario_value(text, px):
    """Issue 23: --dpi 1_0_0 was read as TOML (100) while --width 1_000 was refused."""
    from kvviz.export.figure_size import parse_length
    assert parse_length(text) == px


@pytest.mark.parametrize("text", ["nan", "inf", "1e400", "1e308in", "1" * 400, "50%", "%", "in", "6.5inch", "true", "٣٠٠", "0x"])
def test_a_length_that_is_no_length_is_refused_at_its_flag(text, capsys):
    assert main(["run", SEED, "--svg", "/nonexistent/never.svg", "--width", text]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--width" in err[0]


def test_cli_takes_a_width_in_inches(tmp_path):
    svg = tmp_path / "t.svg"
    assert main(["run", SEED, "--svg", str(svg), "--width", "6.5in", "--height", "76.2mm"]) == 0
    head = svg.read_text()[:300]
    assert 'width="6.5in" height="3in" viewBox="0 0 624 288"' in head
