"""Counters (buffer fill, queue depth, bytes in a tier…) as step lines over time.

One row per counter, as Perfetto's counter tracks (two counters in one plot hid each other, and
a legend hid the data), titled with its name; counters that share a unit and a scale share a y
range, so their rows compare at a glance. Rows are at least ROW_MIN_PX high and scroll when they
do not fit, so they never overlap. Their x axes are linked to each other and to the timeline's
(its zoom, kept across re-runs, and its cursor); axis and hover read in the unit of the visible span, as the timeline's. A counter holds its
value until its next sample, so every curve is drawn as steps, extended to the run's end. Hover a
row for its value at that time (the value held then); File → Export → Data as CSV writes the
samples, as `kvviz run --csv`'s _counters.csv.
"""
from __future__ import annotations

import weakref

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QCursor
from PySide6.QtWidgets import QFrame, QScrollArea, QWidget

from kvviz.export.axis import time_unit
from kvviz.format import readable_bytes, readable_number
from kvviz.mechanisms import time_axis_title
from kvviz.palette import tier_color_of
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
from .time_range import SharedTimeRange
from .time_units import show_format, view_format
from .timeline_details import TimeFormat
from .timeline_items import GridAxis

AXIS_WIDTH = 64  # the same left-axis width on every plot, so their x axes line up
ROW_MIN_PX = 96  # a counter's row: its title, a readable curve and three y ticks
TIME_AXIS_PX = 44  # the last row's time axis and its label


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
    """[(unit, [counter index, …]), …] in order of first appearance: the counters that share a
    y range. One group per unit, except that a counter more than SPLIT_RATIO times smaller or
    larger than any of its group's goes to another (128 GB of DRAM drawn on a 10 TB SSD axis
    would be a flat line at zero). An all-zero counter joins any group of its unit."""
    groups: list[tuple[str, list[int], float, float]] = []  # unit, members, smallest and largest peak
    for i, _ in enumerate(names):
        unit = units[i] if i < len(units) else ""
        peak = abs(peaks[i]) if peaks else 0.0
        for g, (u, idx, low, top) in enumerate(groups):  # low: the smallest peak above zero (or 0)
            lo, hi = min(low, peak) if low and peak else low or peak, max(top, peak)
            if u == unit and (not (low and peak) or hi <= SPLIT_RATIO * lo):
                idx.append(i)
                groups[g] = (u, idx, lo, hi)
                break
        else:
            groups.append((unit, [i], peak, peak))
    return [(u, idx) for u, idx, _, _ in groups]


class CountersView(QWidget):
    """Counter line plots, one row each. `set_result` only reads the Result."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.layout_widget = pg.GraphicsLayoutWidget()
        self.layout_widget.setBackground("w")
        self.layout_widget.ci.setSpacing(2)
        self.caption = caption_label()
        self.info = info_label()  # the counters' values at the time under the mouse
        self.layout_widget.scene().sigMouseMoved.connect(self._on_move)
        self.rows_area = QScrollArea()  # rows that do not fit scroll; they never squeeze onto each other
        self.rows_area.setWidget(self.layout_widget)
        self.rows_area.setWidgetResizable(True)
        self.rows_area.setFrameShape(QFrame.NoFrame)
        self.rows_area.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self.stack = NoteStack(stack_vertically(self.caption, self.rows_area, self.info, stretch=self.rows_area))
        stack_vertically(self.stack, stretch=self.stack, into=self)
        self.trace = None
        self.groups: list[list[int]] = []  # counter indices drawn in each plot (one each)
        self.plots: list[pg.PlotItem] = []
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.colours: dict[str, str] = {}  # counter name -> its line's colour
        self.cursors: list[pg.InfiniteLine] = []
        self.unit, self.scale = "µs", 1e3  # data units: the run's, fixed while it is shown
        self.fmt = TimeFormat()  # how times read: from the visible span, as on the timeline
        self.result: Result | None = None
        self.shared_range: SharedTimeRange | None = None  # the zoom kept across re-runs (the window's)
        self._building = False
        self._end = 1.0
        self._link_target = None
        self._unlink = None

    def set_result(self, result: Result) -> None:
        self._building = True
        try:
            self._set_result(result)
        finally:
            self._building = False
        self._units()

    def _units(self) -> None:
        """Every row's time axis and the hover in the unit of the visible span (the timeline's
        rule and code); the last row carries the label."""
        if self.trace is None or not self.plots:
            return
        self.fmt = view_format(self.plots[0].getViewBox(), self.scale)
        title = time_axis_title(self.result.scenario.kind, self.fmt.unit, self.result.scenario)
        show_format(self.plots[-1].getAxis("bottom"), title, [p.getAxis("bottom") for p in self.plots],
                    self.fmt, self.scale, self.plots[0].getViewBox())

    def _set_result(self, result: Result) -> None:
        tr = result.trace
        self.result = result
        self.layout_widget.clear()
        self.plots, self.curves, self.cursors, self.groups, self.trace = [], {}, [], [], None
        self.colours: dict[str, str] = {}  # counter name -> its line's colour
        self.info.setText(" ")
        if not len(tr.counters) or not tr.counter_names:
            self.stack.show_note("This run has no counters\n"
                                 "(no buffer fill, queue depth or occupancy was recorded over time).")
            return
        self.stack.show_content()
        t_end = max(int(tr.t_end), 1)
        self.unit, self.scale = time_unit(t_end)
        end = self._end = t_end / self.scale
        names = tr.counters["name"]
        peaks = [float(np.abs(tr.counters["value"][names == i]).max(initial=0)) for i in range(len(tr.counter_names))]
        n = len(tr.counter_names)
        self.trace, self.groups = tr, [[i] for i in range(n)]
        self.caption.setText(f"<b>Counters</b> · {n}, one row each · one unit and scale, one y range · "
                             f"a value holds until its next sample")
        self.layout_widget.setMinimumHeight(n * ROW_MIN_PX + TIME_AXIS_PX)
        rows: dict[int, pg.PlotItem] = {}
        for unit, idx in unit_groups(tr.counter_names, tr.counter_units, peaks):
            series = [tr.counters[names == i] for i in idx]
            vmax = max((float(np.abs(c["value"]).max()) for c in series if len(c)), default=0.0)
            div, label = value_scale(unit, vmax)
            lo, hi = 0.0, 0.0
            for i, c in zip(idx, series):
                x, y = step_xy(c["t"] / self.scale, c["value"] / div, end)
                pi = pg.PlotItem(axisItems={"bottom": GridAxis()})  # ticks in the view's unit
                style_plot(pi, left=label)
                # a tier's counter ("dram occupancy") in the tier's colour (kvviz.palette), as in
                # every view; any other counter by its place, in a colour no tier wears
                colour = tier_color_of(tr.counter_names[i]) or LINE_COLOURS[i % len(LINE_COLOURS)]
                self.colours[tr.counter_names[i]] = colour
                pi.setTitle(tr.counter_names[i], color=colour, size="9pt", justify="left")
                pi.getAxis("left").setWidth(AXIS_WIDTH)
                pi.setMouseEnabled(x=True, y=False)
                curve = pi.plot(x, y, pen=pg.mkPen(colour, width=1.6))
                curve.setDownsampling(auto=True, method="peak")
                curve.setClipToView(True)
                self.curves[tr.counter_names[i]] = curve
                if len(y):
                    lo, hi = min(lo, float(y.min())), max(hi, float(y.max()))
                rows[i] = pi
            span = hi - lo or 1.0
            # one y range for the rows of one unit and scale, with room past both ends for half a
            # tick label: pyqtgraph drops a label that would cross the plot's edge, and a counter
            # that holds one value all run then showed no label at its own value
            for i in idx:
                rows[i].setYRange(lo - 0.12 * span, hi + 0.15 * span, padding=0)
        for i in range(n):
            pi = rows[i]
            last = i == n - 1
            self.layout_widget.addItem(pi, row=i, col=0)
            if last:
                pi.setLabel("bottom", " ", **LABEL_STYLE)  # the words: _units, from the view
            else:
                pi.getAxis("bottom").setStyle(showValues=False)
            pi.setLimits(xMin=-0.05 * end, xMax=1.05 * end)
            if self.plots:
                link_x_ranges(self.plots[0].getViewBox(), pi.getViewBox())
            cursor = pg.InfiniteLine(angle=90, movable=False,
                                     pen=pg.mkPen("#333333", width=1, style=Qt.DashLine))
            cursor.hide()
            pi.addItem(cursor, ignoreBounds=True)
            self.cursors.append(cursor)
            self.plots.append(pi)
        first = self.plots[0].getViewBox()
        first.sigXRangeChanged.connect(self._range_moved)
        self._relink()  # the timeline's range (it may be a stale run's: the kept range follows)
        if self.shared_range is not None:
            self.shared_range.apply(first, self.scale, end)
        else:
            first.setXRange(0, end, padding=0.02)

    def _range_moved(self, *_):
        """Zoom or pan here is the window's kept range too (as on the timeline and Occupancy)."""
        self._units()
        if self._building or self.trace is None or not self.isVisible():
            return
        if self.shared_range is not None and self.plots:
            self.shared_range.record(self.plots[0].getViewBox(), self.scale, self._end)
        view = self.layout_widget  # the view moved under a still mouse: say what is under it now
        at = view.mapFromGlobal(QCursor.pos())
        if view.rect().contains(at):
            self._on_move(view.mapToScene(at))

    def show_whole_run(self) -> None:
        if self.plots:
            self.plots[0].setXRange(0, self._end, padding=0.02)

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
        parts = [f"t = {self.fmt.at(t_ns)}"]
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
