"""Gantt timeline of a Result: one row per lane, spans coloured by kind, instants as markers.

Spans are drawn by one item per kind that paints only what is visible, merging spans that
fall within the same pixel column when zoomed out, so a million spans cost a few thousand
rectangles per repaint, never a million graphics items.
"""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from pyqtgraph.Qt.internals import PrimitiveArray
from PySide6.QtCore import QRect, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor, QFontMetrics, QImage, QPaintEngine, QPainter, QPen, QPixmap, QTransform
from PySide6.QtWidgets import QLabel, QWidget

from kvviz.export.axis import tick_decimals, time_unit
from kvviz.level_of_detail import merge_runs, merge_to_pixels, thin_marks  # noqa: F401  (merge_runs: the timeline's API)
from kvviz.palette import instant_color, instant_legend_name, span_color
from kvviz.result import Result
from kvviz.trace import INSTANT_KINDS, SPAN_KINDS

from ._common import hover_point, hover_tip, info_label, no_si_prefix, rehover, stack_vertically
from .time_range import SharedTimeRange

BAR = 0.62  # bar height as a share of a lane row
MIN_ROWS = 6  # rows of vertical space even when a trace has fewer lanes
CURSOR_STRIP = 0.5  # rows of room under the last lane, for the time cursor's label
MAX_LABELLED = 60  # label bars with text only when a trace has this few labelled spans
MARKS = {"hit": "●", "miss": "▼", "evict": "■", "issue": "▼", "land": "◆", "arrive": "★", "overflow": "✕"}

SYMBOLS = {"hit": "o", "miss": "t", "evict": "s", "issue": "arrow_down", "land": "d",
           "arrive": "star", "overflow": "x"}


class SpanLayer(pg.GraphicsObject):
    """All spans of one kind. Coordinates: x in display units from the trace start, y = lane row."""

    def __init__(self, color: str, lanes: np.ndarray, x0: np.ndarray, x1: np.ndarray,
                 labels: list[str] | None = None):
        super().__init__()
        order = np.lexsort((x0, lanes))  # by lane, then start: each lane is one sorted run
        self.lanes, self.x0, self.x1 = lanes[order], x0[order], x1[order]
        # Text inside bars only for small traces; painted when it fits the bar on screen.
        self.labels = [labels[i] for i in order] if labels and len(labels) <= MAX_LABELLED else None
        self.brush = QBrush(QColor(color))
        self.pen = QPen(QColor(255, 255, 255, 160))
        self.pen.setCosmetic(True)
        self.pen.setWidthF(0.8)
        self.lane_ids = np.unique(self.lanes)
        self.bounds = np.searchsorted(self.lanes, np.append(self.lane_ids, self.lane_ids[-1] + 1)) \
            if len(self.lanes) else np.array([0])
        # per-lane running max of ends, so the visible slice is found by binary search
        self.reach = np.empty_like(self.x1)
        for i in range(len(self.lane_ids)):
            a, b = self.bounds[i], self.bounds[i + 1]
            self.reach[a:b] = np.maximum.accumulate(self.x1[a:b])
        lo = float(self.x0.min()) if len(self.x0) else 0.0
        hi = float(self.x1.max()) if len(self.x1) else 1.0
        ymax = float(self.lanes.max()) + 1 if len(self.lanes) else 1.0
        self._rect = QRectF(lo, -0.5, max(hi - lo, 1e-9), ymax + 0.5)
        self.drawn = 0  # rectangles painted last time (for tests and benchmarks)
        self._rects = PrimitiveArray(QRectF, 4)
        self._view = None  # (lo, hi, px) the native array was last filled for

    def boundingRect(self) -> QRectF:
        return self._rect

    def visible_rects(self, lo: float, hi: float, px: float) -> np.ndarray:
        """(n, 4) array of x, y, width, height to paint for the view range [lo, hi] with `px`
        data units per pixel."""
        parts = []
        for i, lane in enumerate(self.lane_ids):
            a, b = self.bounds[i], self.bounds[i + 1]
            # first span whose running reach passes lo; last span starting before hi
            s = a + int(np.searchsorted(self.reach[a:b], lo, side="left"))
            e = a + int(np.searchsorted(self.x0[a:b], hi, side="right"))
            if e <= s:
                continue
            # zoomed out, spans merge per pixel column (as in the figures); each stays ≥ 1 px
            x0, x1 = merge_to_pixels(self.x0[s:e], self.x1[s:e], px)
            part = np.empty((len(x0), 4))
            part[:, 0], part[:, 1], part[:, 2], part[:, 3] = x0, float(lane) - BAR / 2, x1 - x0, BAR
            parts.append(part)
        return np.concatenate(parts) if parts else np.zeros((0, 4))

    def paint(self, p: QPainter, *args):
        vb = self.getViewBox()
        if vb is None:
            return
        (lo, hi), _ = vb.viewRange()
        view = (lo, hi, (hi - lo) / max(vb.width(), 1.0))
        if view != self._view:  # repaints of an unchanged range (hover, cursor, expose) reuse the array
            rects = self.visible_rects(*view)
            # One native QRectF array filled from numpy: no Python object per rectangle.
            self._rects.resize(len(rects))
            self._rects.ndarray()[:] = rects
            self.drawn, self._view = len(rects), view
        p.setPen(self.pen if self.drawn < 2000 else Qt.NoPen)
        p.setBrush(self.brush)
        if self.drawn:
            p.drawRects(*self._rects.drawargs())
        if self.labels:
            self._paint_labels(p, lo, hi)

    def _paint_labels(self, p: QPainter, lo: float, hi: float):
        """Labels in device pixels (the view's y axis is inverted), elided to the bar."""
        xf = p.transform()
        p.save()
        p.resetTransform()
        p.setPen(QColor("#111"))
        fm = p.fontMetrics()
        for lane, a, b, text in zip(self.lanes, self.x0, self.x1, self.labels):
            if not text or b < lo or a > hi:
                continue
            # only the part of the bar inside the view: a span that starts left of it must not
            # write its label over the lane names
            a, b = max(float(a), lo), min(float(b), hi)
            r = xf.mapRect(QRectF(a, float(lane) - BAR / 2, b - a, BAR)).adjusted(4, 0, -3, 0)
            shown = fm.elidedText(text, Qt.ElideRight, int(r.width()))
            if len(shown) >= min(len(text), 6):  # a stub like "q…" says nothing: skip it
                p.drawText(r, Qt.AlignVCenter | Qt.AlignLeft, shown)
        p.restore()


class GridAxis(pg.AxisItem):
    """Time axis whose grid lines are blended as one tiled row of pixels. Qt's raster engine
    blends a translucent 1-px vertical line pixel by pixel: a full grid took ~5 ms of every
    repaint, the tiled row takes ~0.1 ms. The pixels are the same: an aliased cosmetic line
    at device x covers column floor(x) and rows floor(y0)..floor(y1)."""

    def __init__(self, orientation: str = "bottom"):
        super().__init__(orientation)
        self._grid = []  # (pen, p1, p2) of the grid lines left out of pyqtgraph's cached picture
        self._tile = None  # (columns, row pixmap) of the last paint

    def tickSpacing(self, minVal, maxVal, size):
        """pyqtgraph's spacing, widened in 1-2-5 steps until each label fits between its ticks:
        zoomed far into a long run a label has ten digits, and they ran into each other."""
        levels = super().tickSpacing(minVal, maxVal, size)
        span = abs(maxVal - minVal)
        if not levels or span <= 0 or size <= 0:
            return levels
        digit = QFontMetrics(self.style.get("tickFont") or self.font()).horizontalAdvance("0")
        biggest = max(abs(minVal), abs(maxVal)) * self.scale

        def fits(step):
            label = f"{biggest:.{tick_decimals(step * self.scale)}f}"
            return step / span * size >= (len(label) + 2) * digit
        first = levels[0][0]
        if fits(first):
            return levels
        wider = (first * m * 10**e for e in range(12) for m in (2, 5, 10))
        return [(next((w for w in wider if fits(w)), span), 0)]  # one tick at worst, never an error

    def tickStrings(self, values, scale, spacing):
        """Decimals from the tick spacing at any magnitude. pyqtgraph switches to %g (six
        significant digits) from 10,000 on, so zoomed far into a long run two ticks read alike
        ("29040.9" twice)."""
        places = tick_decimals(spacing * scale)  # as the exported figures' axis
        return [f"{v * scale:.{places}f}" for v in values]

    def drawPicture(self, p, axisSpec, tickSpecs, textSpecs):
        # With a grid every tick is a grid line: paint() draws them after the labels, which sit
        # below the lines' ends, so the order makes no difference.
        if self.grid is not False:
            self._grid, tickSpecs = tickSpecs, []
        super().drawPicture(p, axisSpec, tickSpecs, textSpecs)

    def paint(self, p, *args):
        if self.picture is None:  # pyqtgraph regenerates it now, and with it the grid lines
            self._grid, self._tile = [], None
        super().paint(p, *args)
        if self._grid:
            self._paint_grid(p)

    def _paint_grid(self, p: QPainter):
        xf = p.transform()
        ends = {(xf.map(a).y(), xf.map(b).y()) for _, a, b in self._grid}
        fast = (p.paintEngine().type() == QPaintEngine.Raster  # SVG, PDF, OpenGL keep real lines
                and p.deviceTransform().type().value <= QTransform.TxTranslate.value  # not high DPI
                and len(ends) == 1
                and all(a.x() == b.x() and pen.isCosmetic() and pen.widthF() <= 1 and pen.style() == Qt.SolidLine
                        for pen, a, b in self._grid))
        if not fast:
            for pen, a, b in self._grid:
                p.setPen(pen)
                p.drawLine(a, b)
            return
        cols = tuple(math.floor(xf.map(a).x()) for _, a, _ in self._grid)
        left = min(cols)
        if self._tile is None or self._tile[0] != cols:
            row = QImage(max(cols) - left + 1, 1, QImage.Format_ARGB32_Premultiplied)
            row.fill(Qt.transparent)
            rp = QPainter(row)  # Qt premultiplies and blends each colour as it would on screen
            for (pen, _, _), c in zip(self._grid, cols):
                rp.fillRect(c - left, 0, 1, 1, pen.color())
            rp.end()
            self._tile = (cols, QPixmap.fromImage(row))
        y0, y1 = sorted(math.floor(y) for y in ends.pop())
        p.save()
        p.resetTransform()  # device pixels from here (the widget's offset in its window is whole pixels)
        p.drawTiledPixmap(QRect(left, y0, self._tile[1].width(), y1 - y0 + 1), self._tile[1])
        p.restore()


class LaneAxis(pg.AxisItem):
    """Left axis that names each lane row (and its group when the group changes)."""

    def __init__(self, names: list[str]):
        super().__init__("left")
        self.names = names
        self.wanted = 0  # px the names ask for (or Compare's shared width)
        self._room = 0  # the plot's width at the last fit (0: not laid out yet)
        self.setStyle(tickLength=0, autoExpandTextSpace=True)

    def set_names(self, names: list[str], width: int | None = None):
        """The lanes' names, in a column wide enough for the longest (or `width` px), within
        the share of the plot `fit` allows."""
        self.names = names
        self.wanted = width or int(8 + 7.2 * max((len(n) for n in names), default=4))
        self.fit(self._room)

    def fit(self, plot_width: int) -> None:
        """At most 30% of the plot (at least 120 px): AttentionStore's names ("PCIe · layer loads
        of turn 14623's iteration") took half a 610-px plot. Longer names are cut at the right,
        keeping the tier and the job; the hover line names the lane in full."""
        self._room = plot_width
        self.setWidth(min(self.wanted, max(120, int(0.3 * plot_width))) if plot_width > 0 else self.wanted)
        self.picture = None  # drop pyqtgraph's cached drawing
        self.update()

    def tickValues(self, minVal, maxVal, size):
        lo, hi = sorted((minVal, maxVal))  # the view is inverted (lane 0 on top)
        return [(1.0, [float(i) for i in range(len(self.names)) if lo - 1 <= i <= hi + 1])]

    def tickStrings(self, values, scale, spacing):
        fm = QFontMetrics(self.style.get("tickFont") or self.font())
        room = max(int(self.width()) - 12, 20)
        return [fm.elidedText(self.names[int(v)], Qt.ElideRight, room) if 0 <= int(v) < len(self.names) else ""
                for v in values]


class TimelineView(QWidget):
    """The Gantt timeline. `set_result` replaces what is shown; it never simulates."""

    hovered = Signal(str)
    picked = Signal(str, int)  # a span was double-clicked: (its lane's name, its ref)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.lane_axis = LaneAxis([])
        self.plot = pg.PlotWidget(background="w", axisItems={"left": self.lane_axis, "bottom": GridAxis()})
        self.legend = QLabel()
        self.legend.setTextFormat(Qt.RichText)
        self.legend.setWordWrap(True)  # many kinds wrap onto a second line, never widen the window
        self.legend.setStyleSheet("color:#222; padding:4px 8px; background:white;")
        self.info = info_label()  # a long hover line must never widen the window's centre
        stack_vertically(self.legend, self.plot, self.info, stretch=self.plot, into=self)
        self.result: Result | None = None
        self.pick_hint: tuple[str, str] | None = None  # (lane, what a double-click there does)
        self.layers: list[SpanLayer] = []
        self.time_cursor = pg.InfiniteLine(angle=90, movable=True, pen=pg.mkPen("#444", width=1, style=Qt.DashLine),
                                      label="{value:.2f}", labelOpts={"position": 0.97, "color": "#222",
                                                                     "fill": (255, 255, 255, 200)})
        self.plot.scene().sigMouseMoved.connect(self._on_move)
        self.plot.scene().sigMouseClicked.connect(self._on_click)
        # the window's timeline keeps its zoom across re-runs; Compare's two do not share one
        self.shared_range: SharedTimeRange | None = None
        self._building = False
        self._end = 1.0
        self.plot.getPlotItem().getViewBox().sigXRangeChanged.connect(self._range_moved)
        self.marks: list = []  # (scatter item, lanes, times) per instant kind, times sorted
        self._thin = QTimer(self)  # re-thin the marks once a zoom or pan settles
        self._thin.setSingleShot(True)
        self._thin.setInterval(40)
        self._thin.timeout.connect(self._thin_marks)
        self.plot.getPlotItem().getViewBox().sigXRangeChanged.connect(lambda *_: self._thin.start())

    def set_result(self, result: Result, span_ns: int | None = None):
        """Show `result`. `span_ns` picks the time unit (views that share an axis pass the
        longest of their runs so they agree on µs or ms). The x range is the shared one
        when there is one (the zoom before this re-run), else the whole run."""
        self._building = True
        try:
            self._set_result(result, span_ns)
        finally:
            self._building = False

    def show_whole_run(self) -> None:
        if self.result is not None:
            self.plot.getPlotItem().getViewBox().setXRange(0, self._end, padding=0.02)

    def resizeEvent(self, ev):  # noqa: N802 (Qt's name)
        super().resizeEvent(ev)
        if ev.size().width() != ev.oldSize().width():
            self.lane_axis.fit(ev.size().width())

    def _thin_marks(self, *_):
        """Instants in view, one per lane and pixel column (as spans merge when zoomed out):
        ~160,000 AttentionStore marks would otherwise be drawn on every repaint."""
        vb = self.plot.getPlotItem().getViewBox()
        (lo, hi), _ = vb.viewRange()
        px = (hi - lo) / max(vb.width(), 1.0)
        for item, lanes, x in self.marks:
            a, b = np.searchsorted(x, lo, "left"), np.searchsorted(x, hi, "right")
            keep = a + thin_marks(lanes[a:b], x[a:b], px)
            item.setData(x=x[keep], y=lanes[keep] - BAR / 2 - 0.08)

    def _range_moved(self, *_):
        # only the visible timeline holds the current result's units; a hidden one follows links
        if self.shared_range is not None and not self._building and self.result is not None and self.isVisible():
            self.shared_range.record(self.plot.getPlotItem().getViewBox(), self.scale, self._end)
        if self.isVisible() and not self._building and self.result is not None:
            rehover(self.plot, self._on_move)

    def _set_result(self, result: Result, span_ns: int | None):
        self.result = result
        self.info.setText(" ")  # the hover line described the previous run
        tr = result.trace
        unit, scale = time_unit(max(span_ns or tr.t_end, 1))
        self.unit, self.scale = unit, scale
        names = tr.lanes["name"].tolist()
        pi = self.plot.getPlotItem()
        pi.clear()
        self.layers = []
        # One axis for the view's life: replacing it on every result loses the inverted y
        # mapping in pyqtgraph, so only its names change.
        self.lane_axis.set_names(names)
        pi.showGrid(x=True, y=False, alpha=0.15)
        pi.setLabel("bottom", f"time ({unit})")
        self.time_cursor.label.setFormat("{value:.2f} " + unit)  # "0.00" alone said no unit
        pi.invertY(True)
        pi.setMouseEnabled(x=True, y=False)
        pi.getAxis("bottom").setPen("#333")
        no_si_prefix(pi.getAxis("bottom"))
        pi.getAxis("bottom").setTextPen("#222")
        pi.getAxis("left").setTextPen("#222")
        pi.getAxis("left").setPen("#333")
        entries = []
        sp = tr.spans
        for k in np.unique(sp["kind"]):
            s = sp[sp["kind"] == k]
            kind = SPAN_KINDS[k]
            layer = SpanLayer(span_color(kind), s["lane"].astype(np.int64),
                              s["start"] / scale, s["end"] / scale,
                              [tr.label(int(i)) for i in s["label"]] if len(s) <= MAX_LABELLED else None)
            pi.addItem(layer)
            self.layers.append(layer)
            entries.append(f'<span style="color:{span_color(kind)}; font-size:14px">■</span>&nbsp;{kind}')
        ins = tr.instants
        self.marks = []
        for k in np.unique(ins["kind"]):
            s = ins[ins["kind"] == k]
            kind = INSTANT_KINDS[k]
            item = pg.ScatterPlotItem(size=9, symbol=SYMBOLS.get(kind, "o"), pen=pg.mkPen("w", width=0.5),
                                      brush=instant_color(kind))
            order = np.argsort(s["t"], kind="stable")
            self.marks.append((item, s["lane"][order].astype(np.int64), s["t"][order] / scale))
            pi.addItem(item)
            name = instant_legend_name(kind, (SPAN_KINDS[k] for k in np.unique(sp["kind"])))
            entries.append(f'<span style="color:{instant_color(kind)}; font-size:13px">{MARKS.get(kind, "●")}</span>'
                           f'&nbsp;{name}')
        self.legend.setText("&nbsp;&nbsp; ".join(entries))  # the plain space lets the line wrap
        pi.addItem(self.time_cursor)
        end = max((span_ns or tr.t_end) / scale, 1e-9)  # linked views share one range
        self.time_cursor.setValue(0)
        rows = max(len(names), MIN_ROWS)  # few lanes: keep bars a sensible height
        # half a row under the last lane for the time cursor's label, which sat on its bars
        bottom = rows - 0.4 + (CURSOR_STRIP if len(names) >= MIN_ROWS else 0)
        pi.setLimits(xMin=-0.05 * end, xMax=end * 1.05, yMin=-1, yMax=bottom + 0.4)
        self._end = end
        if self.shared_range is not None:
            self.shared_range.apply(pi.getViewBox(), scale, end)
        else:
            pi.setXRange(0, end, padding=0.02)
        pi.setYRange(-0.6, bottom, padding=0)
        self._thin_marks()

    def zoom_to(self, lane_name: str, ref: int, margin: float = 0.15) -> bool:
        """Show the spans with this ref on this lane (e.g. one job), with a margin; False if none."""
        tr = self.result.trace if self.result is not None else None
        names = list(tr.lanes["name"]) if tr is not None else []
        if lane_name not in names:
            return False
        sp = tr.spans[(tr.spans["lane"] == names.index(lane_name)) & (tr.spans["ref"] == ref)]
        if not len(sp):
            return False
        lo, hi = sp["start"].min() / self.scale, sp["end"].max() / self.scale
        pad = (hi - lo) * margin or 1.0
        self.plot.getPlotItem().getViewBox().setXRange(lo - pad, hi + pad, padding=0)
        return True

    def visible_range_ns(self) -> tuple[int, int]:
        """The time range on screen, in ns from the trace start (for 'export what I see')."""
        (lo, hi), _ = self.plot.getPlotItem().getViewBox().viewRange()
        return max(0, int(lo * self.scale)), max(1, int(hi * self.scale))

    def _on_move(self, pos):
        pt = None if self.result is None else hover_point(self.plot, pos)
        if pt is None:
            return
        text = self.describe(pt.x(), pt.y())
        self.info.setText(text or " ")
        hover_tip(self.plot, pos, text if self.span_at(pt.x(), pt.y())[1] is not None else None)
        self.hovered.emit(text)

    def _on_click(self, ev):
        if not ev.double() or self.result is None:
            return
        pt = hover_point(self.plot, ev.scenePos())
        lane, span = self.span_at(pt.x(), pt.y()) if pt is not None else (None, None)
        if span is not None:
            self.picked.emit(lane, int(span["ref"]))

    def span_at(self, x: float, y: float):
        """(lane name or None, the span under the point or None); x in display units, y in rows."""
        tr = self.result.trace
        lane = int(round(y))
        if not 0 <= lane < len(tr.lanes) or abs(y - lane) > BAR / 2 + 0.1:
            return None, None
        t = x * self.scale
        sp = tr.spans[tr.spans["lane"] == lane]
        hit = sp[(sp["start"] <= t) & (sp["end"] >= t)]
        if not len(hit):
            # zoomed out, a bar drawn in a pixel column may be a span narrower than the column:
            # the nearest span within a pixel is the one under the mouse
            tol = self._ns_per_pixel()
            near = sp[(sp["start"] <= t + tol) & (sp["end"] >= t - tol)]
            if len(near):
                gap = np.maximum(near["start"] - t, t - near["end"])
                hit = near[[int(np.argmin(gap))]]
        return str(tr.lanes["name"][lane]), (hit[-1] if len(hit) else None)

    def _ns_per_pixel(self) -> float:
        vb = self.plot.getPlotItem().getViewBox()
        (lo, hi), _ = vb.viewRange()
        return (hi - lo) * self.scale / max(vb.width(), 1.0)

    def describe(self, x: float, y: float) -> str:
        """What is under the point (x in display units, y in lane rows): for hover text, with
        three decimals, or as many as one pixel of the current zoom needs."""
        tr = self.result.trace
        name, s = self.span_at(x, y)
        d = max(3, tick_decimals(self.plot.getPlotItem().getViewBox().viewPixelSize()[0]))
        if name is None:
            return f"t = {x:.{d}f} {self.unit}"
        if s is None:
            return f"{name}   t = {x:.{d}f} {self.unit}"
        hint = f"   · double-click: {self.pick_hint[1]}" if self.pick_hint and name == self.pick_hint[0] else ""
        label = tr.label(int(s["label"]))
        return (f"{name}: {SPAN_KINDS[s['kind']]} {s['start'] / self.scale:.{d}f}–{s['end'] / self.scale:.{d}f} "
                f"{self.unit} ({(s['end'] - s['start']) / self.scale:.{d}f} {self.unit})"
                + (f" — {label}" if label else "") + hint)
