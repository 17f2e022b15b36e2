"""Iso-lines over a heat map's grid: marching squares between cell centres, linear
interpolation along each edge, and levels at round steps. A square with a cell not yet run
(NaN) draws nothing, so a sweep filling in never draws a line to a missing value."""
from __future__ import annotations

import math

import numpy as np


def nice_levels(lo: float, hi: float, most: int = 7) -> list[float]:
    """Round values strictly inside (lo, hi), at a 1-2-5 step giving at most `most` of them."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return []
    raw = (hi - lo) / (most + 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step) + 1
    out = []
    k = first
    while k * step < hi - 1e-12 * abs(hi):
        v = round(k * step, 12)
        if v > lo:
            out.append(v)
        k += 1
    return out


def iso_segments(grid: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The `level` line through grid[i, j] drawn at (x=j, y=i), as x and y arrays of point pairs
    (connect="pairs")."""
    xs: list[float] = []
    ys: list[float] = []
    rows, cols = grid.shape
    for i in range(rows - 1):
        for j in range(cols - 1):
            # corners counter-clockwise from (i, j); edges between consecutive corners
            corners = ((i, j), (i, j + 1), (i + 1, j + 1), (i + 1, j))
            vals = [grid[c] for c in corners]
            if not all(np.isfinite(vals)):
                continue
            cross = []
            for k in range(4):
                (a, b), (va, vb) = (corners[k], corners[(k + 1) % 4]), (vals[k], vals[(k + 1) % 4])
                if (va >= level) != (vb >= level):
                    f = (level - va) / (vb - va)
                    cross.append((a[1] + f * (b[1] - a[1]), a[0] + f * (b[0] - a[0])))
            if len(cross) == 2:
                pairs = [(cross[0], cross[1])]
            elif len(cross) == 4:  # a saddle: the centre (the corners' mean) joins the two corners on
                # its side, and the line cuts off each of the other two
                if (sum(vals) / 4 >= level) == (vals[0] >= level):
                    pairs = [(cross[0], cross[1]), (cross[2], cross[3])]  # corners 1 and 3 cut off
                else:
                    pairs = [(cross[3], cross[0]), (cross[1], cross[2])]  # corners 0 and 2 cut off
            else:
                continue
            for p, q in pairs:
                xs += [p[0], q[0]]
                ys += [p[1], q[1]]
    return np.array(xs, dtype=float), np.array(ys, dtype=float)
