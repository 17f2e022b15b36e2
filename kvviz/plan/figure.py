"""The plan's figure: every mix run, cost per hour against the first target's metric, the
cost-latency front joined, the best mix ringed, and the region that misses the target shaded."""
from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .planner import RatePlan

FRONT, RUN, BEST, MISS = "#1f77b4", "#9a9a9a", "#d62728", "#fbe3e3"


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    step = 10 ** math.floor(math.log10((hi - lo) / n))
    for m in (1, 2, 5, 10):
        if (hi - lo) / (step * m) <= n:
            step *= m
            break
    first = math.ceil(lo / step) * step
    return [first + k * step for k in range(int((hi - first) / step) + 1)]


def figure_svg(rate_plans: Sequence[RatePlan], title: str) -> str:
    """One panel per rate."""
    esc = html.escape
    W, PW, PH, L, T, B = 760, 640, 330, 90, 56, 100  # width, panel, left margin, top, below a panel
    H = T + len(rate_plans) * (PH + B) + 10
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W / 96:.2f}in" height="{H / 96:.2f}in" '
           f'viewBox="0 0 {W} {H}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{L}" y="22" font-size="15">{esc(title)}</text>']
    for k, rp in enumerate(rate_plans):
        out += _panel(rp, T + k * (PH + B), L, PW, PH)
    out.append("</svg>")
    return "\n".join(out)


def _panel(rp: RatePlan, y0: float, L: float, PW: float, PH: float) -> list[str]:
    esc = html.escape
    out: list[str] = []
    t = rp.targets[0]
    measured = ((float(rp.grid.cost[i]), v.get(t.metric)) for i, v in rp.outcome.values.items())
    pts: list[tuple[float, float]] = [(c, v) for c, v in measured if v is not None and math.isfinite(v)]
    front = rp.front()
    head = f"{t}" + (f" · rate {rp.rate:g}" if rp.rate is not None else "")
    head += f" · {rp.outcome.runs} of {len(rp.grid)} mixes run"
    out.append(f'<text x="{L}" y="{y0 - 8}" font-size="12">{esc(head)}</text>')
    xs = [c for c, _ in pts] or [float(rp.grid.cost.min()), float(rp.grid.cost.max())]
    ys = [v for _, v in pts] + [t.value]
    xlo, xhi = min(xs), max(xs)
    ylo, yhi = min(0.0, min(ys)), max(ys) * 1.08
    if xhi <= xlo:
        xlo, xhi = xlo - 0.5, xhi + 0.5

    def X(c: float) -> float:
        return L + (c - xlo) / (xhi - xlo) * PW

    def Y(v: float) -> float:
        return y0 + PH - (v - ylo) / (yhi - ylo) * PH
    ty = Y(t.value)
    if t.op == "<=":  # above the target misses it
        out.append(f'<rect x="{L}" y="{y0}" width="{PW}" height="{max(0.0, ty - y0):.1f}" fill="{MISS}"/>')
    else:
        out.append(f'<rect x="{L}" y="{ty:.1f}" width="{PW}" height="{max(0.0, y0 + PH - ty):.1f}" fill="{MISS}"/>')
    out.append(f'<text x="{L + PW - 4}" y="{(y0 + 14) if t.op == "<=" else (y0 + PH - 6)}" text-anchor="end" '
               f'fill="#a33">misses the target</text>')
    out.append(f'<line x1="{L}" x2="{L + PW}" y1="{ty:.1f}" y2="{ty:.1f}" stroke="#a33" stroke-dasharray="5,3"/>')
    out.append(f'<rect x="{L}" y="{y0}" width="{PW}" height="{PH}" fill="none" stroke="#444"/>')
    for v in _ticks(ylo, yhi):
        out.append(f'<text x="{L - 6}" y="{Y(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
        out.append(f'<line x1="{L - 3}" x2="{L}" y1="{Y(v):.1f}" y2="{Y(v):.1f}" stroke="#444"/>')
    for c in _ticks(xlo, xhi):
        out.append(f'<text x="{X(c):.1f}" y="{y0 + PH + 16}" text-anchor="middle">{c:g}</text>')
    out.append(f'<text x="{L + PW / 2}" y="{y0 + PH + 36}" text-anchor="middle">cost per hour (USD)</text>')
    out.append(f'<text transform="translate({L - 62},{y0 + PH / 2}) rotate(-90)" text-anchor="middle">'
               f'{esc(t.metric)}</text>')
    for c, v in pts:
        out.append(f'<circle cx="{X(c):.1f}" cy="{Y(v):.1f}" r="3" fill="{RUN}"/>')
    on_front = ((float(rp.grid.cost[i]), rp.outcome.values[i].get(t.metric)) for i in front)
    fp = [(c, v) for c, v in on_front if v is not None]  # each has one: the front is of measured values
    if len(fp) > 1:
        path = " ".join(f"{X(c):.1f},{Y(v):.1f}" for c, v in fp)
        out.append(f'<polyline points="{path}" fill="none" stroke="{FRONT}" stroke-width="2"/>')
    for c, v in fp:
        out.append(f'<circle cx="{X(c):.1f}" cy="{Y(v):.1f}" r="4" fill="{FRONT}"/>')
    if rp.outcome.best is not None:
        b = rp.outcome.best
        c, v = float(rp.grid.cost[b]), rp.outcome.values[b][t.metric]  # the best met every target: it has each
        out.append(f'<circle cx="{X(c):.1f}" cy="{Y(v):.1f}" r="8" fill="none" stroke="{BEST}" stroke-width="2"/>')
        out.append(f'<text x="{X(c) + 10:.1f}" y="{Y(v) + 20:.1f}" fill="{BEST}">cheapest meeting it: '
                   f'${c:.3f}/h</text>')
    else:
        out.append(f'<text x="{L + 8}" y="{y0 + PH - 8}" fill="{BEST}">no mix on the grid meets it: the points '
                   f'are the runs made, the grid\'s top the closest</text>')
    legend = (f'<circle cx="{L + 8}" cy="{y0 + PH + 54}" r="3" fill="{RUN}"/>'
              f'<text x="{L + 16}" y="{y0 + PH + 58}">mix run</text>'
              f'<circle cx="{L + 90}" cy="{y0 + PH + 54}" r="4" fill="{FRONT}"/>'
              f'<text x="{L + 98}" y="{y0 + PH + 58}">cost-latency front (of the mixes run)</text>')
    out.append(legend)
    return out
