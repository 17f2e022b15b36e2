"""Counters (buffer fill, queue depth, bytes in a tier…) as step lines over time.

One small plot per unit — counters that share a unit and a scale share a plot and a y axis — stacked
vertically with their x axes linked, and the same time unit as the timeline. A counter holds
its value until its next sample, so every curve is drawn as steps, extended to the run's end. Hover a plot for every counter's value at that time (the values
held then); File → Export → Data as CSV writes the samples, as `kvviz run --csv`'s _counters.csv.
"""
from __future__ import annotations

import weakref

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QWidget

from kvviz.export.axis import time_unit
from kvviz.format import readable_bytes, readable_number
from kvviz.result import Result

from ._common import (
    LABEL_STYLE,
    LINE_COLOURS,
    NoteStack,
    caption_label,
    hover_tip,
    info_label,
    link_x_ranges,
    stack_vertically,
    style_plot,
    view_box_of,
)

AXIS_WIDTH = 64  # the same left-axis width on every plot, so their x axes line up


def step_xy(t: np.ndarray, v: np.ndarray, t_end: float) -> tuple[np.ndarray, np.ndarray]:
    """Vertices of a step line: each value holds from its sample time to the next one; the
    last holds to t_end. Samples must be in time order."""
    if not len(t):
        return np.zeros(0), np.zeros(0)
    x = np.append(np.repeat(t, 2)[1:], max(float(t_end), float(t[-1])))
    y = np.repeat(v, 2)
    return x, y


BYTE_UNITS = ("B", "byte", "bytes")
BYTE_PREFIXES = ((1e15, "PB"), (1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB"))
COUNT_SCALES = ((1e9, "billions"), (1e6, "millions"), (1e3, "thousands"))


def value_scale(unit: str, vmax: float) -> tuple[float, str]:
    """(divisor, axis label) so that tick values stay short: bytes in kB…PB (decimal), other
    units in thousands/millions/billions once they pass 100,000."""
    vmax = abs(float(vmax))
    if unit in BYTE_UNITS:
        for div, name in BYTE_PREFIXES:
            if vmax >= div:
                return div, name
        return 1.0, "B"
    label = unit or "value"
    if vmax >= 1e5:
        for div, name in COUNT_SCALES:
            if vmax >= div:
                return div, f"{label} ({name})"
    return 1.0, label


SPLIT_RATIO = 20  # a counter this many times smaller than its unit's largest gets its own plot


def unit_groups(names: tuple[str, ...], units: tuple[str, ...],
                peaks: list[float] | None = None) -> list[tuple[str, list[int]]]:
    """[(unit, [counter index, …]), …] in order of first appearance: one plot per unit, except
    that a counter under 1/SPLIT_RATIO of its plot's peak goes to a plot of its own (128 GB of
    DRAM drawn on a 10 TB SSD axis would be a flat line at zero)."""
    groups: list[tuple[str, list[int], float]] = []
    for i, _ in enumerate(names):
        unit = units[i] if i < len(units) else ""
        peak = abs(peaks[i]) if peaks else 0.0
        for g, (u, idx, top) in enumerate(groups):
            if u == unit and (not peaks or min(peak, top) == 0 or max(peak, top) <= SPLIT_RATIO * min(peak, top)):
                idx.append(i)
                groups[g] = (u, idx, max(top, peak))
                break
        else:
            groups.append((unit, [i], peak))
    return [(u, idx) for u, idx, _ in groups]


class CountersView(QWidget):
    """Counter line plots. `set_result` only reads the Result."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.layout_widget = pg.GraphicsLayoutWidget()
        self.layout_widget.setBackground("w")
        self.caption = caption_label()
        self.info = info_label()  # the counters' values at the time under the mouse
        self.layout_widget.scene().sigMouseMoved.connect(self._on_move)
        self.stack = NoteStack(stack_vertically(self.caption, self.layout_widget, self.info,
                                                stretch=self.layout_widget))
        stack_vertically(self.stack, stretch=self.stack, into=self)
        self.trace = None
        self.groups: list[list[int]] = []  # counter indices drawn in each plot
        self.plots: list[pg.PlotItem] = []
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.cursors: list[pg.InfiniteLine] = []
        self.unit, self.scale = "µs", 1e3
        self._link_target = None
        self._unlink = None

    def set_result(self, result: Result) -> None:
        tr = result.trace
        self.layout_widget.clear()
        self.plots, self.curves, self.cursors, self.groups, self.trace = [], {}, [], [], None
        self.info.setText(" ")
        if not len(tr.counters) or not tr.counter_names:
            self.stack.show_note("This run has no counters\n"
                                 "(no buffer fill, queue depth or occupancy was recorded over time).")
            return
        self.stack.show_content()
        t_end = max(int(tr.t_end), 1)
        self.unit, self.scale = time_unit(t_end)
        end = t_end / self.scale
        names = tr.counters["name"]
        peaks = [float(np.abs(tr.counters["value"][names == i]).max(initial=0)) for i in range(len(tr.counter_names))]
        groups = unit_groups(tr.counter_names, tr.counter_units, peaks)
        self.trace, self.groups = tr, [idx for _, idx in groups]
        self.caption.setText(f"<b>Counters</b> · {len(tr.counter_names)} over time, one plot per unit and "
                             f"scale · a value holds until the next sample")
        for g, (unit, idx) in enumerate(groups):
            pi = self.layout_widget.addPlot(row=g, col=0)
            last = g == len(groups) - 1
            style_plot(pi, bottom=f"time ({self.unit})" if last else None)
            pi.getAxis("left").setWidth(AXIS_WIDTH)
            if not last:
                pi.getAxis("bottom").setStyle(showValues=False)
            pi.setMouseEnabled(x=True, y=False)
            pi.addLegend(offset=(-8, 4), brush=pg.mkBrush(255, 255, 255, 220),
                         pen=pg.mkPen("#cccccc"), labelTextColor="#222222",
                         labelTextSize="9pt", verSpacing=-4)
            series = [tr.counters[names == i] for i in idx]
            vmax = max((float(np.abs(c["value"]).max()) for c in series if len(c)), default=0.0)
            div, label = value_scale(unit, vmax)
            pi.setLabel("left", label, **LABEL_STYLE)
            lo, hi = 0.0, 0.0
            for k, (i, c) in enumerate(zip(idx, series)):
                x, y = step_xy(c["t"] / self.scale, c["value"] / div, end)
                # earlier curves drawn wider, so a later one lying on top leaves them visible
                width = 1.6 + 1.4 * (len(idx) - 1 - k)
                curve = pi.plot(x, y, pen=pg.mkPen(LINE_COLOURS[i % len(LINE_COLOURS)], width=width),
                                name=tr.counter_names[i])
                curve.setDownsampling(auto=True, method="peak")
                curve.setClipToView(True)
                self.curves[tr.counter_names[i]] = curve
                if len(y):
                    lo, hi = min(lo, float(y.min())), max(hi, float(y.max()))
            span = hi - lo or 1.0
            # headroom above the highest value for the legend in the top-right corner
            pi.setYRange(lo - 0.04 * span, hi + (0.16 + 0.08 * len(idx)) * span, padding=0)
            pi.setLimits(xMin=-0.05 * end, xMax=1.05 * end)
            if self.plots:
                link_x_ranges(self.plots[0].getViewBox(), pi.getViewBox())
            cursor = pg.InfiniteLine(angle=90, movable=False,
                                     pen=pg.mkPen("#333333", width=1, style=pg.QtCore.Qt.DashLine))
            cursor.hide()
            pi.addItem(cursor, ignoreBounds=True)
            self.cursors.append(cursor)
            self.plots.append(pi)
        self.plots[0].setXRange(0, end, padding=0.02)
        self._relink()

    def link_x(self, plot_widget) -> None:
        """Share zoom and pan along time with another pyqtgraph plot (the timeline's)."""
        self._link_target = weakref.ref(view_box_of(plot_widget))
        self._relink()

    def _relink(self) -> None:
        if self._unlink is not None:
            self._unlink()
            self._unlink = None
        target = self._link_target() if self._link_target is not None else None
        if target is not None and self.plots:
            self._unlink = link_x_ranges(target, self.plots[0].getViewBox())

    def set_cursor(self, x: float | None) -> None:
        for c in self.cursors:
            if x is None:
                c.hide()
            else:
                c.setValue(float(x))
                c.show()

    def value_at(self, i: int, t_ns: float) -> float | None:
        """Counter i's value held at t_ns (its last sample at or before it), or None before its first."""
        c = self.trace.counters[self.trace.counters["name"] == i]
        k = int(np.searchsorted(c["t"], t_ns, side="right")) - 1
        return None if k < 0 else float(c["value"][k])

    def hover_text(self, plot: int, t_ns: float) -> str:
        """The hover line over plot `plot` at t_ns: each of its counters' value then."""
        tr = self.trace
        parts = [f"t = {t_ns / self.scale:,.6g} {self.unit}"]
        for i in self.groups[plot]:
            v = self.value_at(i, t_ns)
            unit = tr.counter_units[i] if i < len(tr.counter_units) else ""
            text = "–" if v is None else readable_bytes(v) + (f" ({readable_number(v)} B)" if abs(v) >= 1024 else "") \
                if unit in BYTE_UNITS else readable_number(v) + (f" {unit}" if unit else "")
            parts.append(f"{tr.counter_names[i]} = {text}")
        return " · ".join(parts)

    def _on_move(self, pos) -> None:
        for k, pi in enumerate(self.plots):
            vb = pi.getViewBox()
            if self.trace is not None and vb.sceneBoundingRect().contains(pos):
                text = self.hover_text(k, vb.mapSceneToView(pos).x() * self.scale)
                self.info.setText(text)
                hover_tip(self.layout_widget, pos, text)
                return
        hover_tip(self.layout_widget, pos, None)

    def data_rows(self) -> tuple[list[str], list[list]] | None:
        """Every counter sample (File → Export → Data as CSV), as `kvviz run --csv`'s _counters.csv."""
        tr = self.trace
        if tr is None:
            return None
        units = tr.counter_units
        return ["name", "unit", "t_ns", "value"], [
            [tr.counter_names[n], units[n] if n < len(units) else "", int(t), float(v)]
            for n, t, v in tr.counters[["name", "t", "value"]].tolist()]
