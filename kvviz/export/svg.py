"""Timeline figure as true vector SVG, written directly from the Trace (no Qt).

Real <text> for labels, spans grouped per kind (<g id="spans-fetch">) so a user can recolour
a kind in an editor, a white background, lanes grouped as in the app, an axis with units.
"""
from __future__ import annotations

from html import escape

import numpy as np

from ..palette import instant_color, span_color
from ..result import Result
from ..trace import INSTANT_KINDS, SPAN_KINDS
from .axis import nice_ticks, time_unit

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
LANE_H, BAR_H, GROUP_H = 26, 16, 20
LEFT, RIGHT, TOP, BOTTOM = 220, 24, 64, 48


def _fmt(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".")


def _marker(kind: str, x: float, y: float) -> str:
    """A small shape per instant kind, centred at (x, y)."""
    if kind == "hit":
        return f'<circle cx="{_fmt(x)}" cy="{_fmt(y)}" r="3.5"/>'
    if kind == "miss":
        return f'<path d="M{_fmt(x - 4)},{_fmt(y - 3.5)}h8l-4,7z"/>'
    if kind == "evict":
        return f'<path d="M{_fmt(x - 3.5)},{_fmt(y - 3.5)}h7v7h-7z" fill-opacity="0.85"/>'
    return f'<path d="M{_fmt(x - 1)},{_fmt(y - 5)}h2v10h-2z"/>'


def timeline_svg(result: Result, width: int = 1200, t0_ns: int | None = None,
                 t1_ns: int | None = None, title: str | None = None) -> str:
    tr = result.trace
    t0 = 0 if t0_ns is None else int(t0_ns)
    t1 = tr.t_end if t1_ns is None else int(t1_ns)
    t1 = max(t1, t0 + 1)
    unit, scale = time_unit(t1 - t0)
    plot_w = width - LEFT - RIGHT

    # Lane rows, with a header row whenever the group changes.
    rows: list[tuple[str, str, float]] = []  # ("group"|"lane", text, y)
    lane_y: dict[int, float] = {}
    y = TOP
    last_group = None
    for i, (name, group) in enumerate(tr.lanes.tolist()):
        if group != last_group:
            rows.append(("group", group, y))
            y += GROUP_H
            last_group = group
        rows.append(("lane", name, y))
        lane_y[i] = y
        y += LANE_H
    plot_bottom = y
    height = int(plot_bottom + BOTTOM)

    def xof(t):
        return LEFT + (np.asarray(t, dtype=np.float64) - t0) * (plot_w / (t1 - t0))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="{FONT}">',
           f'<rect id="background" x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text x="{LEFT}" y="22" font-size="15" font-weight="bold" fill="#222">'
           f'{escape(title or result.scenario.name)}</text>']

    # Lane labels and guides.
    out.append('<g id="lanes" font-size="12" fill="#333">')
    for kind, text, ry in rows:
        if kind == "group":
            out.append(f'<text x="8" y="{_fmt(ry + 14)}" font-weight="bold" fill="#555">{escape(text)}</text>')
        else:
            out.append(f'<rect x="{LEFT}" y="{_fmt(ry)}" width="{plot_w}" height="{LANE_H}" fill="#f6f7f9"/>'
                       f'<text x="18" y="{_fmt(ry + 17)}">{escape(text)}</text>')
    out.append("</g>")

    # Spans, clipped to the range, one group per kind.
    sp = tr.spans[(tr.spans["end"] >= t0) & (tr.spans["start"] <= t1)]
    present_spans = []
    for k in np.unique(sp["kind"]):
        kind = SPAN_KINDS[k]
        present_spans.append(kind)
        s = sp[sp["kind"] == k]
        xs = xof(np.clip(s["start"], t0, t1))
        xe = xof(np.clip(s["end"], t0, t1))
        out.append(f'<g id="spans-{kind}" class="spans" fill="{span_color(kind)}" stroke="#ffffff" stroke-width="0.5">')
        for a, b, lane, lab, st, en in zip(xs, xe, s["lane"], s["label"], s["start"], s["end"]):
            ry = lane_y[int(lane)] + (LANE_H - BAR_H) / 2
            tip = f"{kind} {_fmt(st / scale)}–{_fmt(en / scale)} {unit}"
            if lab >= 0:
                tip += f": {tr.labels[lab]}"
            out.append(f'<rect x="{_fmt(a)}" y="{_fmt(ry)}" width="{_fmt(max(b - a, 0.5))}" '
                       f'height="{BAR_H}"><title>{escape(tip)}</title></rect>')
        out.append("</g>")

    # Instants as markers on the top edge of their lane.
    ins = tr.instants[(tr.instants["t"] >= t0) & (tr.instants["t"] <= t1)]
    present_inst = []
    for k in np.unique(ins["kind"]):
        kind = INSTANT_KINDS[k]
        present_inst.append(kind)
        s = ins[ins["kind"] == k]
        out.append(f'<g id="instants-{kind}" class="instants" fill="{instant_color(kind)}">')
        for x, lane in zip(xof(s["t"]), s["lane"]):
            out.append(_marker(kind, float(x), lane_y[int(lane)] + 5))
        out.append("</g>")

    # Time axis.
    out.append(f'<g id="axis" font-size="11" fill="#333" stroke="#333">'
               f'<line x1="{LEFT}" y1="{plot_bottom}" x2="{LEFT + plot_w}" y2="{plot_bottom}"/>')
    for tick in nice_ticks(t0 / scale, t1 / scale):
        x = float(xof(tick * scale))
        out.append(f'<line x1="{_fmt(x)}" y1="{plot_bottom}" x2="{_fmt(x)}" y2="{plot_bottom + 5}"/>'
                   f'<text x="{_fmt(x)}" y="{plot_bottom + 18}" text-anchor="middle" stroke="none">{_fmt(tick)}</text>')
    out.append(f'<text x="{LEFT + plot_w / 2}" y="{plot_bottom + 38}" text-anchor="middle" '
               f'stroke="none">time ({unit})</text></g>')

    # Legend: only the kinds that appear.
    out.append('<g id="legend" font-size="11" fill="#333">')
    x = LEFT
    for kind in present_spans:
        out.append(f'<rect x="{x}" y="36" width="14" height="10" fill="{span_color(kind)}"/>'
                   f'<text x="{x + 18}" y="45">{kind}</text>')
        x += 26 + 7 * len(kind)
    for kind in present_inst:
        out.append(f'<g fill="{instant_color(kind)}">{_marker(kind, x + 6, 41)}</g>'
                   f'<text x="{x + 14}" y="45">{kind}</text>')
        x += 22 + 7 * len(kind)
    out.append("</g></svg>")
    return "\n".join(out)
