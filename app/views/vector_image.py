"""Bitmaps that export as vectors: on screen an image is drawn as one bitmap (fast at any
size), but painted into an SVG (pyqtgraph's exporter, File → Export → Current View as SVG,
`kvviz-gui --screenshot X.svg --view-only`) it is drawn as filled rectangles instead, one per
run of equal colour along a row, over one rectangle of the commonest colour: a figure that
stays sharp when scaled and small (a 2000-column occupancy grid is a few thousand rectangles,
not 2000 × rows cells). PNG export paints the bitmap, at whatever scale the figure asks.

VectorImageItem: pyqtgraph's ImageItem so (the Occupancy view). vector_colour_bar: a
ColorBarItem whose gradient (a 1 × 256 pixmap) does the same (the Sweep and Capacity views)."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QImage, QPaintEngine, QPainter
from PySide6.QtWidgets import QGraphicsPixmapItem


def to_svg(p: QPainter) -> bool:
    """Whether `p` paints into an SVG generator (an export), not a screen or an image."""
    engine = p.paintEngine()
    return engine is not None and engine.type() == QPaintEngine.Type.SVG


def colour_runs(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Runs of equal value along each row of a 2-D array: (row, first column, end column
    (exclusive), value) per run, row by row, left to right. No Python loop over cells."""
    cells = np.asarray(cells)
    rows, cols = cells.shape
    if not cells.size:
        e = np.zeros(0, dtype=np.intp)
        return e, e, e, cells.ravel()
    start = np.ones((rows, cols), dtype=bool)
    start[:, 1:] = cells[:, 1:] != cells[:, :-1]
    r, c0 = np.nonzero(start)  # row-major order: by row, then column
    c1 = np.empty_like(c0)
    c1[:-1] = c0[1:]
    c1[-1] = cols
    last = np.ones(len(r), dtype=bool)  # the last run of its row ends at the row's end
    last[:-1] = r[1:] != r[:-1]
    c1[last] = cols
    return r, c0, c1, cells[r, c0]


def rgba_cells(img: QImage) -> np.ndarray:
    """(h, w) uint32 of a QImage's pixels, each one RGBA8888 word (its bytes r, g, b, a)."""
    img = img.convertToFormat(QImage.Format.Format_RGBA8888)
    h, w = img.height(), img.width()
    buf = np.frombuffer(img.constBits(), dtype=np.uint8, count=img.sizeInBytes())
    return buf.reshape(h, img.bytesPerLine())[:, :4 * w].copy().view(np.uint32).reshape(h, w)


def _qcolor(word: int) -> QColor:
    r, g, b, a = np.array([word], dtype=np.uint32).view(np.uint8)
    return QColor(int(r), int(g), int(b), int(a))


def paint_cells_as_rects(p: QPainter, cells: np.ndarray, target: QRectF, layered: bool = False) -> int:
    """Paint `cells` ((h, w) RGBA words, as rgba_cells) into `target` as rectangles: one of
    the colour covering most cells, then one per run of any other colour, grouped by colour (one
    fill each in the SVG). Returns how many. `layered`, for a smooth gradient (every cell its
    own colour, so nothing to group): one per run in reading order, each reaching to the end of
    its row and to the bottom, so the next ones overlap it and no renderer shows a hairline seam
    of background between two neighbours."""
    h, w = cells.shape
    if not cells.size:
        return 0
    sx, sy = target.width() / w, target.height() / h
    r, c0, c1, v = colour_runs(cells)
    if layered:
        return _paint_layered(p, r, c0, v, target, sx, sy)
    colours, inverse = np.unique(v, return_inverse=True)
    area = np.bincount(inverse, weights=c1 - c0)
    base = int(np.argmax(area))
    p.save()
    try:
        p.setPen(Qt.PenStyle.NoPen)
        n = 0
        if _qcolor(int(colours[base])).alpha():
            p.setBrush(_qcolor(int(colours[base])))
            p.drawRect(target)
            n += 1
        x0, y0 = target.left(), target.top()
        for k, word in enumerate(colours):
            if k == base:
                continue
            colour = _qcolor(int(word))
            if colour.alpha() == 0:
                continue
            p.setBrush(colour)
            pick = np.flatnonzero(inverse == k)
            p.drawRects([QRectF(x0 + float(c0[i]) * sx, y0 + float(r[i]) * sy, float(c1[i] - c0[i]) * sx, sy)
                         for i in pick])
            n += len(pick)
    finally:
        p.restore()
    return n


def _paint_layered(p: QPainter, r, c0, v, target: QRectF, sx: float, sy: float) -> int:
    p.save()
    try:
        p.setPen(Qt.PenStyle.NoPen)
        for row, col, word in zip(r, c0, v):
            p.setBrush(_qcolor(int(word)))
            p.drawRect(QRectF(target.left() + float(col) * sx, target.top() + float(row) * sy,
                              target.width() - float(col) * sx, target.height() - float(row) * sy))
    finally:
        p.restore()
    return len(r)


class VectorImageItem(pg.ImageItem):
    """An ImageItem that paints itself as merged rectangles into an SVG (see the module)."""

    def paint(self, p: QPainter, *args):
        if not to_svg(p) or self.image is None:
            return super().paint(p, *args)
        if self._renderRequired:
            self.render()
        if self.qimage is None:
            return None
        paint_cells_as_rects(p, rgba_cells(self.qimage), QRectF(0, 0, self.qimage.width(), self.qimage.height()))
        return None


class VectorPixmapItem(QGraphicsPixmapItem):
    """A QGraphicsPixmapItem that paints itself as rectangles into an SVG (a colour bar's
    gradient: layered, see paint_cells_as_rects)."""

    def paint(self, p: QPainter, *args):
        pm = self.pixmap()
        if not to_svg(p) or pm.isNull():
            return super().paint(p, *args)
        paint_cells_as_rects(p, rgba_cells(pm.toImage()), QRectF(self.offset(), pm.size().toSizeF()), layered=True)
        return None


def vector_colour_bar(**kwargs) -> pg.ColorBarItem:
    """pg.ColorBarItem(**kwargs) whose gradient exports as rectangles, not a bitmap."""
    bar = pg.ColorBarItem(**kwargs)
    old = bar.bar
    new = VectorPixmapItem()
    new.setShapeMode(QGraphicsPixmapItem.ShapeMode.BoundingRectShape)
    new.setPixmap(old.pixmap())
    new.setTransform(old.transform())
    new.setPos(old.pos())
    bar.removeItem(old)
    bar.addItem(new)
    bar.bar = new
    return bar
