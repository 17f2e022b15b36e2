"""The time unit of a view from its visible span, for every view with a time axis (Timeline,
Occupancy, Counters): the rule of exported figures (kvviz.export.axis.time_unit), ticks and
hover with the digits one pixel needs. Data stay in the run's unit (fixed while a result is
shown, so linked views share ranges); only the axes' scale and label follow the view."""
from __future__ import annotations

import pyqtgraph as pg

from .timeline_details import TimeFormat
from .timeline_items import GridAxis


def view_format(vb: pg.ViewBox, scale: float, origin_ns: float = 0.0) -> TimeFormat:
    """How times read in `vb` (x in data units of `scale` ns): unit from the visible span,
    places for one pixel, counted from `origin_ns`."""
    (lo, hi), _ = vb.viewRange()
    span_ns = (hi - lo) * scale
    return TimeFormat.for_view(span_ns, span_ns / max(vb.width(), 1.0), origin_ns)


def show_format(labelled: pg.AxisItem, title: str, axes: list[GridAxis], fmt: TimeFormat, scale: float) -> None:
    """Title `labelled` and have each of `axes` tick in `fmt`'s unit from its origin (data in
    units of `scale` ns). Only what changed is set: every set repaints the axis."""
    if labelled.labelText != title:
        labelled.setLabel(title)
    for axis in axes:
        if axis.scale != scale / fmt.ns:
            axis.setScale(scale / fmt.ns)
        if axis.origin != fmt.origin_ns / scale:
            axis.set_origin(fmt.origin_ns / scale)
