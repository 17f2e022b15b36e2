"""The time range the user zoomed to, shared by the timeline and the views linked to it, so a
re-run of the same scenario (every edit) keeps it. Held in ns from the trace start, because a
re-run may change the display unit (µs to ms). Forgotten when another scenario opens."""
from __future__ import annotations

import pyqtgraph as pg

HOME_PADDING = 0.02  # the whole run, with a little room at both ends


class SharedTimeRange:
    def __init__(self):
        self.ns: tuple[float, float] | None = None  # None: show the whole run

    def forget(self) -> None:
        self.ns = None

    def apply(self, vb: pg.ViewBox, scale: float, end: float) -> None:
        """Set a view's x range (display units, `scale` ns each; `end` = the run's end)."""
        if self.ns is None or self.ns[0] / scale >= end:  # nothing of this run is in the kept range
            vb.setXRange(0, end, padding=HOME_PADDING)
        else:
            vb.setXRange(self.ns[0] / scale, self.ns[1] / scale, padding=0)

    def record(self, vb: pg.ViewBox, scale: float, end: float) -> None:
        """Remember the range a view now shows; showing the whole run (or more) is no zoom."""
        lo, hi = vb.viewRange()[0]
        self.ns = None if lo <= 0 and hi >= end else (lo * scale, hi * scale)
