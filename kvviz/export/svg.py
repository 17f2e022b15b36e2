"""Timeline figure as true vector SVG, written directly from the Trace (no Qt).

- Real <text> for every label; a white background rectangle that editors keep.
- Spans grouped per kind (<g id="spans-fetch">, each bar class="span") so a user can recolour
  a kind in Inkscape; instants grouped per kind too.
- Physical size: layout units are CSS px (1/96 in); width/height attributes are in inches,
  so a 960-px-wide figure is 10 in wide and a 300-dpi PNG of it is 3000 px wide.
- A time range [t0, t1] shows only what overlaps it, clipped to the plot.
- Readable at any span count: on a lane with many spans of a kind in view, spans merge per
  pixel column into coverage bars, and marks closer than a pixel into one
  (kvviz.level_of_detail, as the app's timeline draws them); the legend wraps.
"""
from __future__ import annotations

import html
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from ..format import printable
from ..level_of_detail import MERGE_ABOVE, coverage, split_narrow, thin_marks
from ..mechanisms import time_axis_title
from ..palette import instant_color, instant_legend_name, span_color, tier_color, tier_key
from ..result import Result
from ..trace import INSTANT_KINDS, SPAN_KINDS, Rows, Trace
from .axis import nice_ticks, tick_labels, time_unit
from .figure_size import DEFAULT_WIDTH_PX, PX_PER_IN


def escape(text: str) -> str:
    """Text for the figure: XML-escaped, and a name's control characters shown escaped (XML
    forbids most of them: a title holding ESC made the whole SVG unreadable)."""
    return html.escape(printable(text))


FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
LANE_H, GROUP_H = 28, 22
RIGHT, TOP, BOTTOM = 24, 70, 52
CHAR_W = 7.4  # average glyph width at 13 px, for sizing the label column and the legend
LABEL_CHAR_W = 6.6  # the same at 11 px, for labels inside bars
MAX_LABELLED = 400  # write labels inside bars only for figures with this few spans
LEGEND_ROW = 18  # px between wrapped legend rows
TIER_BAND_OPACITY = 0.15  # a tier lane's band (the app's timeline: alpha 38/255)
MAX_TOOLTIPS = 5000  # hover titles per bar only up to this many (they triple the file size)


def _f(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".")


def marker(kind: str, x: float, y: float) -> str:
    """A small shape per instant kind, centred at (x, y)."""
    if kind == "hit":
        return f'<circle cx="{_f(x)}" cy="{_f(y)}" r="3.5"/>'
    if kind == "miss":
        return f'<path d="M{_f(x - 4)},{_f(y - 3.5)}h8l-4,7z"/>'
    if kind == "evict":
        return f'<path d="M{_f(x - 3.5)},{_f(y - 3.5)}h7v7h-7z"/>'
    return f'<path d="M{_f(x - 1)},{_f(y - 5)}h2v10h-2z"/>'


def _bar_labels(tr: Trace, sp: Rows, xof: Callable[[npt.ArrayLike], npt.NDArray[np.float64]],
                lane_y: dict[int, float], lane_h: float, t0: int, t1: int) -> list[str]:
    """Span labels as text inside their bars, only where the whole label fits."""
    out = ['<g id="bar-labels" font-size="11" fill="#111">']
    for s in sp:
        if s["label"] < 0:
            continue
        text = tr.labels[s["label"]]
        a, b = float(xof(max(s["start"], t0))), float(xof(min(s["end"], t1)))
        if b - a - 8 < LABEL_CHAR_W * len(text):
            continue
        y = lane_y[int(s["lane"])] + lane_h / 2 + 4
        out.append(f'<text x="{_f(a + 4)}" y="{_f(y)}">{escape(text)}</text>')
    out.append("</g>")
    return out


# a row of the lanes' column: ("group" or "lane", its text, its y, the tier it names or None)
LaneRow = tuple[str, str, float, "str | None"]


def _layout(lanes: Rows, lane_h: float, top: float) -> tuple[list[LaneRow], dict[int, float], float]:
    """Rows (group headers and lanes, each with the tier it names or None) from the top of the
    plot; lane index -> y."""
    rows: list[LaneRow] = []
    lane_y: dict[int, float] = {}
    y, last = float(top), None
    for i, (name, group) in enumerate(lanes.tolist()):
        if group != last:
            rows.append(("group", group, y, tier_key(group)))
            y += GROUP_H
            last = group
        rows.append(("lane", name, y, tier_key(group) or tier_key(name)))
        lane_y[i] = y
        y += lane_h
    return rows, lane_y, y


def timeline_svg(result: Result, width: int = DEFAULT_WIDTH_PX, height: int | None = None,
                 t0_ns: int | None = None, t1_ns: int | None = None, title: str | None = None) -> str:
    tr = result.trace
    t0 = 0 if t0_ns is None else int(t0_ns)
    t1 = tr.t_end if t1_ns is None else int(t1_ns)
    t1 = max(t1, t0 + 1)
    unit, scale = time_unit(t1 - t0)
    left = int(24 + CHAR_W * max((len(n) for n in tr.lanes["name"]), default=8))
    plot_w = width - left - RIGHT
    groups = len(set(tr.lanes["group"].tolist()))
    sp = tr.spans[(tr.spans["end"] >= t0) & (tr.spans["start"] <= t1)]
    ins = tr.instants[(tr.instants["t"] >= t0) & (tr.instants["t"] <= t1)]
    present_spans = [SPAN_KINDS[k] for k in np.unique(sp["kind"])]
    present_inst = [INSTANT_KINDS[k] for k in np.unique(ins["kind"])]
    legend, legend_rows = _legend(present_spans, present_inst, left, width - RIGHT)
    top = TOP + LEGEND_ROW * (legend_rows - 1)  # a wrapped legend pushes the plot down
    lane_h = float(LANE_H)
    if height is not None:  # fit the lanes to the asked height
        lane_h = max(8.0, (height - top - BOTTOM - groups * GROUP_H) / max(len(tr.lanes), 1))
    rows, lane_y, plot_bottom = _layout(tr.lanes, lane_h, top)
    height = int(height if height is not None else plot_bottom + BOTTOM)
    bar_h = lane_h * 0.62

    def xof(t: npt.ArrayLike) -> npt.NDArray[np.float64]:
        return left + (np.asarray(t, dtype=np.float64) - t0) * (plot_w / (t1 - t0))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" '
           f'width="{width / PX_PER_IN:.4g}in" height="{height / PX_PER_IN:.4g}in" '
           f'viewBox="0 0 {width} {height}" font-family="{FONT}">',
           f'<rect id="background" x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text x="{left}" y="24" font-size="16" font-weight="bold" fill="#222">'
           f'{escape(title or result.scenario.name)}</text>',
           f'<defs><clipPath id="plot"><rect x="{left}" y="{top}" width="{plot_w}" '
           f'height="{_f(plot_bottom - top)}"/></clipPath></defs>']

    out.append('<g id="lanes" font-size="13" fill="#333">')
    for kind, text, ry, tier in rows:
        if kind == "group":
            fill = tier_color(tier) if tier else "#555"  # a tier's name in its colour, as in every view
            out.append(f'<text x="8" y="{_f(ry + 16)}" font-weight="bold" fill="{fill}">{escape(text)}</text>')
        elif tier:  # a tier's lane: a pale band of the tier's colour (kvviz.palette), as in the app
            out.append(f'<rect class="lane-band tier-band" data-tier="{tier}" x="{left}" y="{_f(ry)}" '
                       f'width="{plot_w}" height="{_f(lane_h)}" fill="{tier_color(tier)}" '
                       f'fill-opacity="{TIER_BAND_OPACITY}"/>'
                       f'<text x="18" y="{_f(ry + lane_h / 2 + 4.5)}">{escape(text)}</text>')
        else:
            out.append(f'<rect class="lane-band" x="{left}" y="{_f(ry)}" width="{plot_w}" height="{_f(lane_h)}" '
                       f'fill="#f5f6f8"/><text x="18" y="{_f(ry + lane_h / 2 + 4.5)}">{escape(text)}</text>')
    out.append("</g>")

    tooltips = len(sp) <= MAX_TOOLTIPS
    out.append('<g id="spans" clip-path="url(#plot)">')
    for kind in present_spans:
        s = sp[sp["kind"] == SPAN_KINDS.index(kind)]
        s = s[np.lexsort((s["start"], s["lane"]))]
        xs, xe = xof(np.clip(s["start"], t0, t1)) - left, xof(np.clip(s["end"], t0, t1)) - left
        narrow = split_narrow(xs, xe, 1.0)
        for lane in np.unique(s["lane"][narrow]).tolist():  # a few narrow spans on a lane stay separate
            on = narrow & (s["lane"] == lane)
            if on.sum() <= MERGE_ABOVE:
                narrow &= ~on
        out.append(f'<g id="spans-{kind}" fill="{span_color(kind)}">')
        # spans under 2 px merge per lane into coverage bars, without the white outlines that
        # would paint a dense lane white; wider ones are drawn one by one, outlined
        lanes = s["lane"][narrow]
        if len(lanes):
            out.append('<g class="coverage">')
            for lane in np.unique(lanes).tolist():
                on = narrow & (s["lane"] == lane)
                y = lane_y[int(lane)] + (lane_h - bar_h) / 2
                for x0, x1 in zip(*coverage(xs[on], xe[on], 1.0)):
                    out.append(f'<rect class="span" x="{_f(left + x0)}" y="{_f(y)}" width="{_f(x1 - x0)}" '
                               f'height="{_f(bar_h)}"/>')
            out.append("</g>")
        wide = s[~narrow]
        out.append('<g class="spans" stroke="#ffffff" stroke-width="0.4">')
        if len(wide):
            ys = np.array([lane_y[int(i)] for i in wide["lane"]]) + (lane_h - bar_h) / 2
            for x0, x1, y, lab, st, en in zip(xs[~narrow].tolist(), xe[~narrow].tolist(), ys.tolist(),
                                              wide["label"].tolist(), wide["start"].tolist(), wide["end"].tolist()):
                rect = (f'<rect class="span" x="{_f(left + x0)}" y="{_f(y)}" width="{_f(max(x1 - x0, 0.5))}" '
                        f'height="{_f(bar_h)}"')
                if not tooltips:
                    out.append(rect + "/>")
                    continue
                tip = f"{kind} {_f(st / scale)}–{_f(en / scale)} {unit}" + (f": {tr.labels[lab]}" if lab >= 0 else "")
                out.append(f"{rect}><title>{escape(tip)}</title></rect>")
        out.append("</g></g>")
    out.append("</g>")
    if len(sp) <= MAX_LABELLED:
        out.extend(_bar_labels(tr, sp, xof, lane_y, lane_h, t0, t1))

    # a mark sits on its lane's bars' top edge, or on the centre line of a lane without bars (as
    # in the app's timeline)
    barred = set(np.unique(tr.spans["lane"]).tolist())
    for kind in present_inst:
        s = ins[ins["kind"] == INSTANT_KINDS.index(kind)]
        s = s[thin_marks(s["lane"], xof(s["t"]), 1.0)]  # one mark per lane and pixel column
        out.append(f'<g id="instants-{kind}" fill="{instant_color(kind)}">')
        out.extend(marker(kind, x, lane_y[lane] + ((lane_h - bar_h) / 2 - 1 if lane in barred else lane_h / 2))
                   for x, lane in zip(xof(s["t"]).tolist(), s["lane"].tolist()))
        out.append("</g>")

    out.append(f'<g id="axis" font-size="12" fill="#333" stroke="#333">'
               f'<line x1="{left}" y1="{_f(plot_bottom)}" x2="{left + plot_w}" y2="{_f(plot_bottom)}"/>')
    ticks = nice_ticks(t0 / scale, t1 / scale)
    for tick, label in zip(ticks, tick_labels(ticks)):
        x = float(xof(tick * scale))
        out.append(f'<line x1="{_f(x)}" y1="{_f(plot_bottom)}" x2="{_f(x)}" y2="{_f(plot_bottom + 5)}"/>'
                   f'<text x="{_f(x)}" y="{_f(plot_bottom + 19)}" text-anchor="middle" stroke="none">{label}</text>')
    out.append(f'<text x="{_f(left + plot_w / 2)}" y="{_f(plot_bottom + 40)}" text-anchor="middle" '
               f'stroke="none">{escape(time_axis_title(result.scenario.kind, unit, result.scenario))}</text></g>')

    out.extend(legend)
    out.append("</svg>")
    return "\n".join(out)


def _legend(spans: list[str], instants: list[str], left: float, right: float) -> tuple[list[str], int]:
    """The legend's SVG, wrapped onto as many rows as the width needs, and the row count."""
    items = [("span", k, k, 32 + CHAR_W * len(k)) for k in spans]
    items += [("mark", k, name, 28 + CHAR_W * len(name))
              for k, name in ((k, instant_legend_name(k, spans)) for k in instants)]
    out, x, row = ['<g id="legend" font-size="12" fill="#333">'], float(left), 0
    for what, kind, name, w in items:
        if x > left and x + w - 12 > right:  # (the last item's trailing gap may overhang)
            x, row = float(left), row + 1
        y = 50 + LEGEND_ROW * row
        if what == "span":
            out.append(f'<rect class="legend-swatch" x="{_f(x)}" y="{y - 10}" width="14" height="11" '
                       f'fill="{span_color(kind)}"/><text x="{_f(x + 19)}" y="{y}">{escape(name)}</text>')
        else:
            out.append(f'<g fill="{instant_color(kind)}">{marker(kind, x + 6, y - 4.5)}</g>'
                       f'<text x="{_f(x + 15)}" y="{y}">{escape(name)}</text>')
        x += w
    out.append("</g>")
    return out, row + 1
