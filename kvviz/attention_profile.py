"""Where attention mass falls, as a function of distance from the query: the assumed profile
rope_window's runs measure their hits with, and the ladder's simulated rungs too.

This is an ASSUMPTION the user states, not something RoPE proves: RoPE only bounds
|<q_m, k_n>| by a non-increasing envelope B(|m-n|) (seed 000). The exponential profile is
calibrated per query so that a chosen share of the mass (`concentration`) falls within
±`radius` of the query over the positions that query attends; the seed assumes ~72% within ±3.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt


def _geom(r: float, n: int) -> float:
    """sum_{d=1..n} r^d"""
    if n <= 0:
        return 0.0
    if r >= 1.0:
        return float(n)
    return r * (1.0 - r**n) / (1.0 - r)


def _within(r: float, left: int, right: int, radius: int) -> float:
    total = 1.0 + _geom(r, left) + _geom(r, right)
    near = 1.0 + _geom(r, min(radius, left)) + _geom(r, min(radius, right))
    return near / total


def calibrate_decay(left: int, right: int, radius: int, concentration: float) -> float:
    """Ratio r in (0, 1] of the profile w(d) = r^d such that the mass within ±radius is
    `concentration`, for a query with `left`/`right` attended positions on each side.
    If the attended span lies inside the radius, or the asked concentration is below what
    uniform attention already gives, the profile is uniform (r = 1)."""
    if radius >= max(left, right) or _within(1.0, left, right, radius) >= concentration:
        return 1.0
    lo, hi = 0.0, 1.0  # _within decreases as r grows
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if _within(mid, left, right, radius) > concentration:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def mass_on(positions: npt.NDArray[np.integer[Any]], query: int, first: int, last: int, r: float) -> float:
    """Share of the query's attention mass (over attended positions first..last) that falls
    on `positions` (those outside first..last carry none)."""
    left, right = query - first, last - query
    total = 1.0 + _geom(r, left) + _geom(r, right)
    p = positions[(positions >= first) & (positions <= last)]
    if not len(p):
        return 0.0
    return float(np.sum(np.power(r, np.abs(p - query).astype(np.float64))) / total)
