"""The timeline's graphics items: a layer of spans of one kind painted from numpy, the time axis
(grid blended as one tiled row; ticks in the unit of the visible span, optionally from a relative
origin) and the lane-name axis."""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from pyqtgraph.Qt.internals import PrimitiveArray
from PySide6.QtCore import QRect, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFontMetrics, QImage, QPaintEngine, QPainter, QPen, QPixmap, QTransform

from kvviz.export.axis import tick_decimals
from kvviz.level_of_detail import merge_to_pixels

BAR = 0.62  # bar height as a share of a lane row
MAX_LABELLED = 60  # label bars with text only when a trace has this few labelled spans


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

    clicked = Signal(float)  # a left click on the ruler, at this x (data units)

    def __init__(self, orientation: str = "bottom"):
        super().__init__(orientation)
        self._grid = []  # (pen, p1, p2) of the grid lines left out of pyqtgraph's cached picture
        self._tile = None  # (columns, row pixmap) of the last paint
        self.origin = 0.0  # data value that reads 0 (a relative origin: t = 0 at the cursor)

    def mouseClickEvent(self, ev):  # noqa: N802 (pyqtgraph's name)
        """A plain left click on the ruler says where (the timeline places its cursor there);
        anything else goes to the view, as pyqtgraph's axis does (a right click: its menu). With
        the grid on, the axis's bounds take in the plot: a click there is not on the ruler."""
        lv = self.linkedView()
        on_ruler = self.mapRectFromParent(self.geometry()).contains(ev.pos())
        if lv is not None and on_ruler and ev.button() == Qt.LeftButton and not ev.modifiers() and not ev.double():
            ev.accept()
            self.clicked.emit(lv.mapSceneToView(ev.scenePos()).x())
            return
        super().mouseClickEvent(ev)

    def set_origin(self, origin: float) -> None:
        self.origin = origin
        self.picture = None
        self.update()

    def tickValues(self, minVal, maxVal, size):  # noqa: N802 (pyqtgraph's name)
        """Round values counted from the origin, so a relative axis reads 0, 5, 10 from it."""
        o = self.origin
        return [(step, [v + o for v in vals]) for step, vals in super().tickValues(minVal - o, maxVal - o, size)]

    def tickSpacing(self, minVal, maxVal, size):
        """pyqtgraph's spacing, widened in 1-2-5 steps until each label fits between its ticks:
        zoomed far into a long run a label has ten digits, and they ran into each other."""
        levels = super().tickSpacing(minVal, maxVal, size)
        span = abs(maxVal - minVal)
        if not levels or span <= 0 or size <= 0:
            return levels
        digit = QFontMetrics(self.style.get("tickFont") or self.font()).horizontalAdvance("0")
        # pyqtgraph passes values already scaled to the axis's unit and counted from the origin
        biggest = max(abs(minVal), abs(maxVal))

        def fits(step):
            label = f"{biggest:.{tick_decimals(step)}f}"
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
        return [f"{(v - self.origin) * scale:.{places}f}" for v in values]

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
