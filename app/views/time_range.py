"""The time range the user zoomed to, shared by the timeline and the views linked to it, so a
re-run of the same scenario (every edit) keeps it. Held in ns from the trace start, because a
re-run may change the display unit (µs to ms). Forgotten when another scenario opens. The time
cursor's time is kept the same way, and whether the user has moved the view since the
mechanism's region of interest was last applied (an edit that moves that region then moves the
view with it, unless the user has zoomed since)."""
from __future__ import annotations

import pyqtgraph as pg

HOME_PADDING = 0.02  # the whole run, with a little room at both ends


class SharedTimeRange:
    def __init__(self):
        self.ns: tuple[float, float] | None = None  # None: show the whole run
        self.cursor_ns: float | None = None  # the time cursor's time (None: at 0)
        self.roi: tuple[int, int] | None = None  # the mechanism's region of interest last applied
        self.user_moved = False  # the user zoomed or panned since `roi` was applied

    def follow(self, roi: tuple[int, int] | None) -> None:
        """A run's region of interest (the mechanism's initial range): shown when it is new and
        the user has not moved the view since the last one was applied."""
        if roi is None or roi == self.roi:
            return
        if not self.user_moved:
            self.ns = roi
        self.roi, self.user_moved = roi, False

    def forget(self) -> None:
        self.ns = None
        self.user_moved = True  # the whole run was asked for: a new region does not take it

    def apply(self, vb: pg.ViewBox, scale: float, end: float) -> None:
        """Set a view's x range (display units, `scale` ns each; `end` = the run's end)."""
        if self.ns is None or self.ns[0] / scale >= end:  # nothing of this run is in the kept range
            vb.setXRange(0, end, padding=HOME_PADDING)
        else:
            vb.setXRange(self.ns[0] / scale, self.ns[1] / scale, padding=0)

    def record(self, vb: pg.ViewBox, scale: float, end: float) -> None:
        """Remember the range a view now shows; showing the whole run (or more) is no zoom."""
        lo, hi = vb.viewRange()[0]
        ns = None if lo <= 0 and hi >= end else (lo * scale, hi * scale)
        if ns != self.ns and (ns is None or self.ns is None
                              or max(abs(ns[0] - self.ns[0]), abs(ns[1] - self.ns[1])) > 1e-6 * (ns[1] - ns[0])):
            self.user_moved = True  # a real move, not the same range again in other units
        self.ns = ns
