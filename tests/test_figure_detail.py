"""Figures of big runs stay readable and small: sub-pixel spans merge into coverage bars, marks
thin to one per pixel column, the legend wraps inside the canvas, no two kinds share a colour
(issue 12, "Figures of big runs that tell the truth")."""
import re
import xml.etree.ElementTree as ET

import numpy as np

from kvviz import load_scenario
from kvviz.export.svg import timeline_svg
from kvviz.level_of_detail import merge_to_pixels, thin_marks
from kvviz.palette import all_instant_colors, all_span_colors
from kvviz.trace import INSTANT_KINDS, SPAN_DTYPE, SPAN_KINDS, TraceBuilder

from .conftest import SCENARIOS

SVG_NS = "{http://www.w3.org/2000/svg}"


def _busy_result(n: int = 300_000):
    """A run shaped like the bundled AttentionStore one: hundreds of thousands of short spans
    of several kinds on a few lanes, and a mark per span."""
    tb = TraceBuilder()
    lanes = [tb.lane(name, group) for name, group in (("GPU · jobs", "GPU"), ("PCIe · loads", "PCIe"),
                                                      ("SSD · reads", "SSD"))]
    rng = np.random.default_rng(1)
    start = np.sort(rng.integers(0, 16_000_000_000_000, n))
    block = np.zeros(n, dtype=SPAN_DTYPE)
    block["lane"] = np.array(lanes)[np.arange(n) % 3]
    block["start"], block["end"] = start, start + rng.integers(1_000_000, 50_000_000, n)
    block["kind"] = [SPAN_KINDS.index(k) for k in ("prefill", "decode", "load", "save", "fetch", "prefetch")
                     for _ in range(1)] * (n // 6) + [SPAN_KINDS.index("stall")] * (n % 6)
    block["label"], block["ref"] = -1, np.arange(n)
    tb.add_block("spans", block)
    for i in range(0, n, 10):
        tb.instant(lanes[i % 3], int(start[i]), INSTANT_KINDS[i // 10 % len(INSTANT_KINDS)])
    tr = tb.build()

    class R:
        trace, metrics = tr, {}
        scenario = load_scenario(SCENARIOS / "attention_store_sharegpt.toml", ["workload.conversations=10"])
    return R()


def test_a_figure_of_300000_spans_is_small_and_has_no_white_outlines():
    svg = timeline_svg(_busy_result(), width=960)
    assert len(svg.encode()) < 2_000_000
    root = ET.fromstring(svg)
    cover = [g for g in root.iter(f"{SVG_NS}g") if g.get("class") == "coverage"]
    assert cover and all(g.get("stroke") is None for g in cover)
    # coverage bars sit on whole pixel columns of the 960-px canvas: at most one per column and lane
    assert all(len(list(g)) <= 3 * 960 for g in cover)


def test_the_legend_wraps_inside_the_canvas():
    svg = timeline_svg(_busy_result(30_000), width=600)
    root = ET.fromstring(svg)
    legend = next(g for g in root.iter(f"{SVG_NS}g") if g.get("id") == "legend")
    xs = [float(t.get("x")) + 7.4 * len(t.text) for t in legend.iter(f"{SVG_NS}text")]
    ys = {t.get("y") for t in legend.iter(f"{SVG_NS}text")}
    assert max(xs) <= 600 and len(ys) > 1
    lanes = next(g for g in root.iter(f"{SVG_NS}g") if g.get("id") == "lanes")
    first_band = min(float(r.get("y")) for r in lanes.iter(f"{SVG_NS}rect"))
    assert first_band > max(float(y) for y in ys)  # the plot starts below the last legend row


def test_a_few_spans_keep_their_outlines_and_tooltips():
    svg = timeline_svg(_busy_result(60), width=960)
    root = ET.fromstring(svg)
    assert '<g class="coverage">' not in svg
    outlined = [g for g in root.iter(f"{SVG_NS}g") if g.get("class") == "spans"]
    assert outlined and all(g.get("stroke") == "#ffffff" for g in outlined)
    assert len(re.findall("<title>", svg)) == 60


def test_merge_to_pixels_and_thin_marks():
    x0 = np.arange(100, dtype=float) * 0.1  # 100 spans in 10 pixels, touching
    a, b = merge_to_pixels(x0, x0 + 0.05, 1.0)
    assert a.tolist() == [0.0] and b.tolist() == [10.0]
    a, b = merge_to_pixels(np.array([0.0, 5.0]), np.array([0.2, 9.0]), 1.0)  # few: kept, ≥ 1 px
    assert a.tolist() == [0.0, 5.0] and b.tolist() == [1.0, 9.0]
    keep = thin_marks(np.array([0, 0, 1, 0]), np.array([0.2, 0.7, 0.5, 3.0]), 1.0)
    assert keep.tolist() == [0, 2, 3]


def test_no_two_kinds_share_a_colour():
    spans, instants = all_span_colors(), all_instant_colors()
    assert len(set(spans.values())) == len(spans) and len(set(instants.values())) == len(instants)
