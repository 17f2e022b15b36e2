"""One level-of-detail step for every view of a trace: spans narrower than a pixel, on one lane
and of one kind, merge into coverage bars; instants closer than a pixel into one mark. The app's
timeline and the SVG/PNG/PDF figures call the same functions, so a figure of 300,000 spans
looks like the timeline zoomed out, not like 300,000 hairlines with white outlines.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

# x coordinates (µs or pixels) of span ends or instants
Xs = npt.NDArray[np.float64]

MERGE_ABOVE = 64  # a lane with more spans than this in view is drawn as pixel-column runs


def merge_runs(x0: Xs, x1: Xs) -> tuple[Xs, Xs]:
    """Merge intervals (sorted by x0) that overlap or touch into runs. Vectorised."""
    if len(x0) == 0:
        return x0, x1
    reach = np.maximum.accumulate(x1)
    new = np.empty(len(x0), dtype=bool)
    new[0] = True
    new[1:] = x0[1:] > reach[:-1]
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:] - 1, len(x0) - 1)
    return x0[starts], reach[ends]


def merge_to_pixels(x0: Xs, x1: Xs, px: float) -> tuple[Xs, Xs]:
    """One lane's spans (sorted by x0), `px` units per pixel: more than MERGE_ABOVE of them are
    snapped out to whole pixel columns and merged where they would overlap on screen (the
    timeline's per-repaint step). Every span stays at least a pixel wide."""
    if len(x0) <= MERGE_ABOVE or px <= 0:
        return x0, np.maximum(x1, x0 + px)
    return coverage(x0, x1, px)


def coverage(x0: Xs, x1: Xs, px: float) -> tuple[Xs, Xs]:
    """Spans of one lane (sorted by x0) as runs of whole pixel columns they touch."""
    if len(x0) == 0:
        return x0, x1
    c0 = np.floor(x0 / px) * px
    return merge_runs(c0, np.maximum(np.ceil(x1 / px) * px, c0 + px))


def split_narrow(x0: Xs, x1: Xs, px: float, min_px: float = 2.0) -> npt.NDArray[np.bool_]:
    """Which spans are too narrow to be told apart on screen (under `min_px` pixels): a figure
    draws those as coverage and the rest one by one, outlined, with their tooltips."""
    return (x1 - x0) < min_px * px


def thin_marks(lanes: npt.NDArray[np.integer[Any]], x: Xs, px: float) -> npt.NDArray[np.intp]:
    """Indices of the instants to draw: one per lane and pixel column (the first), in order."""
    if len(x) == 0 or px <= 0:
        return np.arange(len(x))
    cols = np.floor(np.asarray(x, dtype=np.float64) / px).astype(np.int64)
    _, first = np.unique(np.stack([np.asarray(lanes, dtype=np.int64), cols]), axis=1, return_index=True)
    return np.sort(first)
