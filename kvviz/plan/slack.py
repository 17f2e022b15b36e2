"""How far a grid's measured metric departs from monotone along the axes marked monotone: the
least `tolerance` under which every inference the search makes holds on that grid (run every
point first: `kvviz plan --exhaustive`, or benchmarks/bench_plan.py --dump)."""
from __future__ import annotations

from typing import Any

import numpy as np

from .grid import Grid, PointValues


def monotone_slack(grid: Grid, values: dict[int, PointValues], metric: str, lower_is_better: bool = True
                   ) -> dict[str, Any]:
    """{"tolerance": the least tolerance that makes every inference hold (the largest rise from
    a point to one above it, as a share; for a meet, 1 - 1/(1 + that)), "rises": per axis,
    single steps that got worse, "steps": per axis, steps measured}."""
    v = np.array([values[i].get(metric) if values[i].get(metric) is not None else np.nan
                  for i in range(len(grid))], dtype=np.float64)
    if not lower_is_better:
        v = 1.0 / v
    worst = 0.0
    for q in range(len(grid)):
        below = grid.at_most(q)
        if np.isfinite(v[q]) and below.any():
            worst = max(worst, float(np.nanmax(v[q] / v[below])) - 1.0)
    shape = tuple(len(a.values) for a in grid.axes)
    V = v.reshape(shape)
    rises, steps = {}, {}
    for k, a in enumerate(grid.axes):
        d = np.diff(V, axis=k)
        rises[a.label], steps[a.label] = int((d > 0).sum()), int(d.size)
    return {"tolerance": worst, "rises": rises, "steps": steps}
