"""A log-scale axis whose labels never collide: pyqtgraph labelled every minor tick of a log
axis (2·10³, 3·10³, …), and across a few decades they ran into one another. Here decades are
always labelled, 2× and 5× only when a decade is wide enough for them, and every other minor
tick keeps its grid line without text."""
from __future__ import annotations

import math

import pyqtgraph as pg

SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
MIN_LABEL_GAP_PX = 70  # pixels a label needs, with room between neighbours


def power_text(value: float) -> str:
    """log10 of a tick -> '10³' or '2·10³'."""
    k = math.floor(value + 1e-9)
    m = round(10 ** (value - k))
    exp = f"10{str(k).translate(SUPERSCRIPT)}"
    return exp if m == 1 else f"{m}·{exp}"


class LogAxis(pg.AxisItem):
    def __init__(self, orientation: str = "bottom"):
        super().__init__(orientation)
        self._labelled: set[float] = set()
        self._linear: dict[float, str] = {}

    def tickValues(self, minVal, maxVal, size):  # noqa: N802 (pyqtgraph's name)
        if not self.logMode:
            return super().tickValues(minVal, maxVal, size)
        lo, hi = sorted((minVal, maxVal))
        px_per_decade = size / max(hi - lo, 1e-9)
        decades = [float(k) for k in range(math.floor(lo), math.ceil(hi) + 1) if lo <= k <= hi]
        minor = [k + math.log10(m) for k in range(math.floor(lo), math.ceil(hi) + 1) for m in range(2, 10)
                 if lo <= k + math.log10(m) <= hi]
        # log10(2) of a decade is about 0.3 of its width: 2× and 5× fit when that is a label's room
        labelled = {v for v in minor if round(10 ** (v - math.floor(v + 1e-9))) in (2, 5)} \
            if px_per_decade * 0.3 >= MIN_LABEL_GAP_PX else set()
        if len(decades) < 2 and not labelled:  # under a decade in view: label what fits anyway
            step = max(1, math.ceil(MIN_LABEL_GAP_PX / max(px_per_decade * 0.05, 1e-9)))
            labelled = set(minor[::step])
        self._labelled = set(decades) | labelled
        self._linear = {}
        if len(self._labelled) < 2:  # a sliver of a decade: evenly spaced round values instead
            self._linear = _round_ticks(10 ** lo, 10 ** hi, max(2, int(size // MIN_LABEL_GAP_PX)))
            return [(1.0, sorted(self._linear))]
        return [(1.0, decades), (0.1, minor)]

    def tickStrings(self, values, scale, spacing):  # noqa: N802
        if not self.logMode:
            return super().tickStrings(values, scale, spacing)
        if self._linear:
            return [self._linear.get(v, "") for v in values]
        return [power_text(v) if v in self._labelled else "" for v in values]


def _round_ticks(a: float, b: float, most: int) -> dict[float, str]:
    """At most `most` round values (1, 2 or 5 × 10^n apart) in [a, b]: log10 position -> text."""
    raw = (b - a) / most
    step = min(m * 10 ** math.floor(math.log10(raw)) for m in (1, 2, 5, 10)
               if m * 10 ** math.floor(math.log10(raw)) >= raw)
    first = math.ceil(a / step)
    return {math.log10(i * step): f"{i * step:.3g}" for i in range(first, int(b // step) + 1) if i > 0}
