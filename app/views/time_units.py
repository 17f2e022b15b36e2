"""The time unit of a view from its visible span, for every view with a time axis (Timeline,
Occupancy, Counters): the rule of exported figures (kvviz.export.axis.time_unit), ticks and
hover with the digits one pixel needs. Data stay in the run's unit (fixed while a result is
shown, so linked views share ranges); only the axes' scale and label follow the view."""
from __future__ import annotations

import math

import pyqtgraph as pg

from .timeline_details import TimeFormat
from .timeline_items import GridAxis


def view_format(vb: pg.ViewBox, scale: float, origin_ns: float = 0.0) -> TimeFormat:
    """How times read in `vb` (x in data units of `scale` ns): unit from the visible span,
    places for one pixel, counted from `origin_ns`; with none, far into a long run, from the
    ruler's base (ruler_base), so a hover or a details pane reads as the ticks do."""
    (lo, hi), _ = vb.viewRange()
    span_ns = (hi - lo) * scale
    fmt = TimeFormat.for_view(span_ns, span_ns / max(vb.width(), 1.0), origin_ns)
    if not origin_ns:
        base, words = ruler_base(vb, scale, fmt)
        if base:
            fmt.origin_ns, fmt.since = base, words.removeprefix(", from ")
    return fmt


# Zoomed into a long run, ticks counted from the run's start read "972410 972415 972420 ms":
# six digits of which the first four never change. Once the view starts this many spans into
# the run (and its ticks would need four digits or more), the ruler counts from a round time
# just before the view, stated once in the axis title, as Perfetto's and Nsight's rulers do.
BASE_AFTER_SPANS = 20


def ruler_base(vb: pg.ViewBox, scale: float, fmt: TimeFormat) -> tuple[float, str]:
    """(origin in ns, words for the axis title) of the ruler: `fmt`'s own origin where one is
    set (t = 0 at the cursor) or where the run's start is near; else a round time at or before
    the view's left edge (a multiple of the power of ten at least the visible span), so ticks
    read 10, 15, 20 ms "from 16 min 12.4 s"."""
    if fmt.origin_ns:
        return fmt.origin_ns, ""
    (lo, hi), _ = vb.viewRange()
    lo_ns, span_ns = lo * scale, (hi - lo) * scale
    if span_ns <= 0 or lo_ns < BASE_AFTER_SPANS * span_ns or lo_ns / fmt.ns < 1000:
        return 0.0, ""
    step = 10.0 ** math.ceil(math.log10(span_ns))
    base = math.floor(lo_ns / step) * step
    return base, f", from {readable_time(base, step)}"


def readable_time(t_ns: float, step_ns: float) -> str:
    """A time since the run's start in seconds with the places `step_ns` needs, and in hours,
    minutes and seconds too once it is a minute or more: "972.4 s (16 min 12.4 s)"."""
    places = max(0, -math.floor(math.log10(step_ns / 1e9) + 1e-9))
    secs = t_ns / 1e9
    text = f"{secs:,.{places}f} s"
    if secs < 60:
        return text
    h, rest = divmod(secs, 3600)
    m, s = divmod(rest, 60)
    clock = (f"{int(h)} h " if h else "") + f"{int(m)} min {s:.{places}f} s"
    return f"{text} ({clock})"


def show_format(labelled: pg.AxisItem, title: str, axes: list[GridAxis], fmt: TimeFormat, scale: float,
                vb: pg.ViewBox | None = None) -> None:
    """Title `labelled` and have each of `axes` tick in `fmt`'s unit from its origin (data in
    units of `scale` ns); given the view box, from the ruler's base when the view is far into
    a long run (ruler_base: said in the title). Only what changed is set: every set repaints."""
    origin, words = ruler_base(vb, scale, fmt) if vb is not None else (fmt.origin_ns, "")
    title += f", from {fmt.since}" if fmt.since else words
    if labelled.labelText != title:
        labelled.setLabel(title)
    for axis in axes:
        if axis.scale != scale / fmt.ns:
            axis.setScale(scale / fmt.ns)
        if axis.origin != origin / scale:
            axis.set_origin(origin / scale)
