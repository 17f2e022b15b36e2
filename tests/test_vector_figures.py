"""The Occupancy grid and the Sweep heat map (with its colour bar) export as vector rectangles,
merged by runs of equal colour, not as an embedded bitmap (issue 33, item 6): the exported SVG
has no <image>, and its rectangles, read back, paint the very cells the view holds."""
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

pytest.importorskip("PySide6")
pytestmark = pytest.mark.gui

from PySide6.QtGui import QColor  # noqa: E402

from app.figure import figure_svg  # noqa: E402
from app.views import OccupancyView  # noqa: E402
from app.views.occupancy import EMPTY, EMPTY_COLOUR, item_colour  # noqa: E402
from app.views.sweep import SweepView  # noqa: E402
from app.views.vector_image import colour_runs  # noqa: E402
from kvviz.sweep import Axis, SweepResult  # noqa: E402

from .conftest import shown  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"


def _rects_of(svg: bytes, item_class: str) -> list[tuple[float, float, float, float, str]]:
    """(x, y, w, h, fill) of every rectangle an item of `item_class` drew, in paint order."""
    root = ET.fromstring(svg)
    group = next(g for g in root.iter(SVG + "g") if re.fullmatch(rf"p\d+-{item_class}_\d+", g.get("id", "")))
    out = []

    def walk(node, fill):
        fill = node.get("fill", fill)
        for child in node:
            if child.tag == SVG + "rect":
                out.append((*(float(child.get(k)) for k in ("x", "y", "width", "height")), child.get("fill", fill)))
            else:
                walk(child, fill)
    walk(group, None)
    return out


def _paint_cells(rects, shape) -> np.ndarray:
    """The grid of fills the rectangles paint, sampled at each cell's centre; the first
    rectangle is the whole grid's extent (the commonest colour under the runs)."""
    rows, cols = shape
    x0, y0, w, h, _ = rects[0]
    cw, ch = w / cols, h / rows
    cells = np.empty(shape, dtype=object)
    for x, y, rw, rh, fill in rects:  # later rectangles paint over earlier ones
        c0, c1 = round((x - x0) / cw), round((x + rw - x0) / cw)
        r0, r1 = round((y - y0) / ch), round((y + rh - y0) / ch)
        cells[r0:r1, c0:c1] = fill.lower()
    return cells


def test_colour_runs_merge_equal_neighbours_along_rows():
    r, c0, c1, v = colour_runs(np.array([[1, 1, 2, 2, 2], [3, 1, 1, 1, 3], [4, 4, 4, 4, 4]]))
    assert list(zip(r, c0, c1, v)) == [(0, 0, 2, 1), (0, 2, 5, 2), (1, 0, 1, 3), (1, 1, 4, 1), (1, 4, 5, 3),
                                       (2, 0, 5, 4)]


def test_occupancy_exports_merged_rectangles_of_its_cells(qtbot, bundled_small):
    v = shown(qtbot, OccupancyView(), 1000, 500, bundled_small["attention_store_sharegpt"])
    v.show_whole_run()
    v._rebin_visible()  # (the timer's, at once: the grid drawn is the one read below)
    items = v.grid.items
    svg = figure_svg(v)
    assert b"<image" not in svg
    rects = _rects_of(svg, "VectorImageItem")
    # merged: one rectangle per run of equal colour in a row (and one under them all), far
    # fewer than cells
    colours = np.vectorize(lambda i: EMPTY_COLOUR if i == EMPTY else item_colour(i))(items)
    runs = int((colours[:, 1:] != colours[:, :-1]).sum()) + items.shape[0]
    assert len(rects) <= runs + 1 < items.size / 10
    painted = _paint_cells(rects, items.shape)
    assert (painted == colours).all()
    # a few cells by hand: slot 0's first resident, and an empty cell
    c = int(np.flatnonzero(items[0] != EMPTY)[0])
    assert painted[0, c] == item_colour(items[0, c]) != EMPTY_COLOUR
    r, e = np.argwhere(items == EMPTY)[-1]
    assert painted[r, e] == EMPTY_COLOUR
    # slot 0 on top, time to the right: that resident's rectangle starts in row 0 at column c
    x0, y0, w, h, _ = rects[0]
    run = next(rc for rc in rects[1:] if rc[4].lower() == colours[0, c] and rc[1] == pytest.approx(y0, abs=0.01))
    assert run[0] == pytest.approx(x0 + c * w / items.shape[1], abs=0.01)


def test_sweep_heat_map_and_colour_bar_export_as_rectangles(qtbot):
    v = shown(qtbot, SweepView(), 900, 600)
    res = SweepResult((Axis("hardware.ssd_gb", (2500, 5000)), Axis("workload.arrival_rate_per_s", (0.5, 1, 2))),
                      "policies.lru.hit_rate", [[0.2, 0.18, 0.1], [0.36, 0.33, 0.3]])
    v._draw(res)
    qtbot.wait(30)
    svg = figure_svg(v)
    assert b"<image" not in svg
    cells = _rects_of(svg, "HeatCells")
    assert len(cells) == 6
    # row i (first axis) drawn at y = i, the plot upright: the bottom row in the SVG is row 0
    by_pos = sorted(cells, key=lambda r: (-r[1], r[0]))  # bottom row first, left to right
    heat = next(i for i in v.plot.getPlotItem().items if type(i).__name__ == "HeatCells")
    for (*_, fill), (i, j) in zip(by_pos, [(i, j) for i in range(2) for j in range(3)]):
        assert fill.lower() == heat.colours[i][j].name()
    assert by_pos[0][4].lower() != by_pos[-1][4].lower()  # low and high ends differ
    # the colour bar: its 256 steps as rectangles, from the colour of the lowest cell (bottom) to
    # the highest (top)
    bar = _rects_of(svg, "VectorPixmapItem")
    assert len(bar) == 256
    x = bar[0][0] + bar[0][2] / 2
    top, bottom = min(r[1] for r in bar), max(r[1] + r[3] for r in bar)
    lo, hi = heat.colours[0][2], heat.colours[1][0]  # 0.1 and 0.36: the levels' ends
    assert _close(_fill_at(bar, x, top + 0.5), hi) and _close(_fill_at(bar, x, bottom - 0.5), lo)
    assert _fill_at(bar, x, (top + bottom) / 2) not in (_fill_at(bar, x, top + 0.5), _fill_at(bar, x, bottom - 0.5))


def _fill_at(rects, x: float, y: float) -> str:
    """The fill a renderer shows at (x, y): the last rectangle painted there."""
    return [f for rx, ry, w, h, f in rects if rx <= x <= rx + w and ry <= y <= ry + h][-1]


def _close(fill: str, colour: QColor, tol: int = 12) -> bool:
    c = QColor(fill)
    return max(abs(c.red() - colour.red()), abs(c.green() - colour.green()), abs(c.blue() - colour.blue())) <= tol
