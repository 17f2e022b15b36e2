"""The Sweep tab's heat map as vector cells: one rectangle per grid point (a figure keeps them
as rectangles, not a blurred bitmap), a colour map chosen by the metric (kvviz.export.colours:
diverging about a threshold such as slack = 0, else viridis), the threshold's contour along
the cell edges, and axis ticks thinned to what fits."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QPainter

from kvviz.export.colours import DIVERGING, SEQUENTIAL, heat_levels, threshold_of, threshold_stop
from kvviz.format import format_value

MISSING = QColor("#e6e6e6")  # a cell not run yet, or with no number
MIN_TICK_GAP_PX = 46  # pixels between labelled ticks on the bottom axis (a label is ~5 characters)
MIN_TICK_GAP_PY = 18  # and on the left axis (a line of text)


def metric_colour_map(metric: str, levels: tuple[float, float]) -> pg.ColorMap:
    """One kind of colour map per metric, whatever its values so far (a sweep never switches
    maps): orange-white-blue with white at the threshold where the metric has one, else viridis."""
    stop = threshold_stop(metric, levels)
    if stop is None:
        return pg.colormap.get(SEQUENTIAL)
    if stop <= 0.0:  # all at or above the threshold: white to blue
        return pg.ColorMap([0, 1], list(DIVERGING[1:]))
    if stop >= 1.0:  # all below: orange to white
        return pg.ColorMap([0, 1], list(DIVERGING[:2]))
    return pg.ColorMap([0, stop, 1], list(DIVERGING))


class HeatCells(pg.GraphicsObject):
    """grid[i, j] drawn as the unit cell centred on (j, i), each one filled rectangle."""

    def __init__(self, grid: np.ndarray, cmap: pg.ColorMap, levels: tuple[float, float]):
        super().__init__()
        self.grid = grid
        lo, hi = levels
        span = (hi - lo) or 1.0
        self.colours = [[MISSING if not np.isfinite(v) else
                         cmap.map(min(max((v - lo) / span, 0.0), 1.0), mode="qcolor") for v in row] for row in grid]

    def boundingRect(self) -> QRectF:  # noqa: N802 (Qt's name)
        rows, cols = self.grid.shape
        return QRectF(-0.5, -0.5, cols, rows)

    def paint(self, p: QPainter, *args):
        p.setPen(pg.mkPen(None))
        for i, row in enumerate(self.colours):
            for j, c in enumerate(row):
                p.fillRect(QRectF(j - 0.5, i - 0.5, 1.0, 1.0), c)


def contour_segments(grid: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Cell edges between a cell at or above `threshold` and a neighbour below it, as x and y
    arrays of point pairs (connect="pairs"): the threshold's boundary on the grid."""
    xs, ys = [], []
    above = grid >= threshold
    known = np.isfinite(grid)
    rows, cols = grid.shape
    for i in range(rows):
        for j in range(cols):
            if j + 1 < cols and known[i, j] and known[i, j + 1] and above[i, j] != above[i, j + 1]:
                xs += [j + 0.5, j + 0.5]
                ys += [i - 0.5, i + 0.5]
            if i + 1 < rows and known[i, j] and known[i + 1, j] and above[i, j] != above[i + 1, j]:
                xs += [j - 0.5, j + 0.5]
                ys += [i + 0.5, i + 0.5]
    return np.array(xs, dtype=float), np.array(ys, dtype=float)


def thinned_ticks(values, room_px: float, gap_px: float) -> list[tuple[int, str]]:
    """Every k-th value's label, k as small as keeps `gap_px` between labels in `room_px`
    (62 values on 600 px: one label in five, not 62 that smear)."""
    n = len(values)
    step = max(1, int(np.ceil(n * gap_px / max(room_px, 1.0))))
    return [(i, format_value(values[i])) for i in range(0, n, step)]


def draw_heat_map(pi: pg.PlotItem, grid: np.ndarray, metric: str) -> tuple[pg.ColorMap, tuple, list]:
    """Cells (and the threshold's contour) into `pi`; returns the map, its levels and the items."""
    finite = grid[np.isfinite(grid)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    levels = heat_levels(metric, lo, hi)
    cmap = metric_colour_map(metric, levels)
    items = [HeatCells(grid, cmap, levels)]
    t = threshold_of(metric)
    if t is not None:
        x, y = contour_segments(grid, t)
        if x.size:
            items.append(pg.PlotCurveItem(x, y, connect="pairs", pen=pg.mkPen("#111111", width=2.5)))
    for item in items:
        pi.addItem(item)
    return cmap, levels, items
