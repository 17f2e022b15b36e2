"""Occupancy grid: which item (token position, session, Engram row…) lives in which slot, when.

One image (VectorImageItem: a bitmap on screen, merged rectangles in an exported SVG): rows are slots (or blocks of slots when there are more than MAX_ROWS), columns
are time bins (at most MAX_COLS over the shown range), a cell's colour is the item resident
for the longest part of its bin (empty only when nothing is resident in it at all). The grid
is built with numpy from the residency array — no Python loop over cells or records — and
rebuilt for the visible range when the user zooms, so its size never depends on the run's.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QWidget

from kvviz.export.axis import time_unit
from kvviz.mechanisms import time_axis_title
from kvviz.palette import TIER_LABELS, tier_color, tier_key, tier_label, trace_tiers
from kvviz.result import Result

from ._common import (
    NoteStack,
    caption_label,
    hover_point,
    hover_tip,
    info_label,
    link_x_ranges,
    rehover,
    stack_vertically,
    style_plot,
    view_box_of,
)
from .time_range import SharedTimeRange
from .time_units import show_format, view_format
from .timeline_details import TimeFormat
from .timeline_items import GridAxis
from .vector_image import VectorImageItem

MAX_COLS = 2000   # time bins over the range a grid is built for
MAX_ROWS = 1024   # rows; more slots than this are grouped into equal blocks of slots
MAX_LABELS = 400
MAX_SEPARATED = 40  # slots up to which rows get separator lines and one tick each  # residency records labelled with their item when this few are visible
EMPTY = -1

# Categorical colours, ordered so that neighbouring indices differ strongly: consecutive
# items (token positions 5, 6, 7 …) never share a colour within a run of len(ITEM_COLOURS).
ITEM_COLOURS = (
    "#1f77b4", "#ffbb78", "#2ca02c", "#ff9896", "#9467bd", "#c49c94", "#e377c2", "#dbdb8d",
    "#17becf", "#aec7e8", "#ff7f0e", "#98df8a", "#d62728", "#c5b0d5", "#8c564b", "#f7b6d2",
    "#bcbd22", "#9edae5",
)
EMPTY_COLOUR = "#f2f2f2"


def _rgba(hex_colour: str) -> tuple[int, int, int, int]:
    c = QColor(hex_colour)
    return c.red(), c.green(), c.blue(), 255


# Row 0 is "empty"; row 1 + (item mod n) is the item's colour — stable across redraws and runs.
LUT = np.array([_rgba(EMPTY_COLOUR)] + [_rgba(c) for c in ITEM_COLOURS], dtype=np.uint8)


# The LUT's rows as single uint32s, so one gather colours a whole grid.
_LUT32 = LUT.view(np.uint32).ravel()


def item_colour_index(items: np.ndarray) -> np.ndarray:
    """LUT row of each item id (EMPTY -> 0)."""
    items = np.asarray(items, dtype=np.int64)
    n = len(ITEM_COLOURS)
    # 1 + (items mod n), EMPTY -> 0; floor division by a constant is ~5x faster than np.mod
    idx = items - items // n * n + 1
    idx *= items != EMPTY
    return idx.astype(np.intp, copy=False)


def item_rgba(items: np.ndarray) -> np.ndarray:
    """(…, 4) uint8 RGBA of each item id; the same as LUT[item_colour_index(items)], faster."""
    return _LUT32.take(item_colour_index(items)).view(np.uint8).reshape(*np.shape(items), 4)


def item_colour(item: int) -> str:
    return ITEM_COLOURS[int(item) % len(ITEM_COLOURS)]


@dataclass(frozen=True)
class OccupancyGrid:
    items: np.ndarray  # (rows, cols) int64: the item shown in each cell, EMPTY if none
    t0: float          # ns: left edge of column 0
    t1: float          # ns: right edge of the last column
    block: int         # slots per row
    n_slots: int

    @property
    def shape(self) -> tuple[int, int]:
        return self.items.shape

    @property
    def bin_ns(self) -> float:
        return (self.t1 - self.t0) / self.items.shape[1]


def _lexsort(keys: tuple[np.ndarray, ...]) -> np.ndarray:
    """np.lexsort(keys) for integer keys (the last one primary). When the keys and the row
    index fit in one int64 they are packed and sorted once: the index makes every key unique,
    so a plain (SIMD) sort gives the stable order, about 10x faster than lexsort on 1M rows."""
    n = len(keys[0])
    if not n:
        return np.zeros(0, dtype=np.intp)
    shift = (n - 1).bit_length()
    packed = np.arange(n, dtype=np.int64)
    for k in keys:  # least significant first, each above the ones before
        lo, hi = int(k.min()), int(k.max())
        bits = (hi - lo).bit_length()
        if shift + bits > 63:
            return np.lexsort(keys)
        if bits:
            part = k.astype(np.int64)
            part -= lo
            part <<= shift
            packed |= part
        shift += bits
    packed.sort()
    packed &= (1 << (n - 1).bit_length()) - 1
    return packed


def _paint(n: int, lo: np.ndarray, hi: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Flat array of n cells; each cell gets the value of an interval [lo, hi) covering it
    (the one reaching furthest; if tied, the last to start, then the last given), EMPTY if
    none. Vectorised: one sort of the intervals, then one run-length fill of the cells."""
    if not len(lo):
        return np.full(n, EMPTY, dtype=np.int64)
    if (lo[1:] < lo[:-1]).any():  # (already in order for one slot per row, sorted by start)
        order = _lexsort((lo,))
        lo, hi, values = lo[order], hi[order], values[order]
    # Leaders: intervals reaching at least as far as every one started before them. From a
    # leader's start to the next leader's, the cells show that leader while it lasts.
    lead = np.flatnonzero(hi == np.maximum.accumulate(hi))
    lo, hi, values = lo[lead], hi[lead], values[lead]
    seg = np.append(lo[1:], n) - lo
    shown = np.clip(hi - lo, 0, seg)
    vals = np.full(2 * len(lo) + 1, EMPTY, dtype=np.int64)  # empty, then (leader, empty) pairs
    vals[1::2] = values
    lens = np.empty(2 * len(lo) + 1, dtype=np.int64)
    lens[0], lens[1::2], lens[2::2] = lo[0], shown, seg - shown
    return np.repeat(vals, lens)


def occupancy_grid(residency: np.ndarray, n_slots: int, t0: float, t1: float,
                   max_cols: int = MAX_COLS, max_rows: int = MAX_ROWS) -> OccupancyGrid:
    """Bin residency records (slot, start, end, item; ns) into at most max_rows × max_cols
    cells over [t0, t1]. A cell holds the item resident for the longest part of its bin."""
    t0, t1 = float(t0), float(t1)
    if t1 <= t0:
        t1 = t0 + 1.0
    n_slots = max(int(n_slots), 1)
    cols = int(max(1, min(max_cols, math.ceil(t1 - t0))))  # never bins shorter than 1 ns
    w = (t1 - t0) / cols
    block = max(1, math.ceil(n_slots / max_rows))
    rows = math.ceil(n_slots / block)
    slot = residency["slot"]
    s = residency["start"].astype(np.float64)
    e = residency["end"].astype(np.float64)
    item = residency["item"].astype(np.int64)
    keep = (e >= t0) & (s <= t1) & (slot >= 0) & (slot < n_slots)
    if not keep.all():  # (a full-range build keeps all: skip the copies)
        slot, s, e, item = slot[keep], s[keep], e[keep], item[keep]
    base = (slot // block).astype(np.int64) * cols
    a, b = (s - t0) / w, (e - t0) / w  # record edges in bin units

    # Bins a record covers completely: nothing else in that slot can hold more of them.
    k0 = np.clip(np.ceil(a), 0, cols).astype(np.int64)
    k1 = np.clip(np.floor(b), 0, cols).astype(np.int64)
    full = k1 > k0
    if full.all():  # (usual for a coarse grid: skip the copies)
        grid = _paint(rows * cols, base + k0, base + k1, item)
    else:
        grid = _paint(rows * cols, base[full] + k0[full], base[full] + k1[full], item[full])

    # The (at most two) bins a record covers in part: the longest resident wins the cell.
    # Only cells no record covers in full are still open (a full cover always beats a part).
    ka = np.clip(np.floor(a), 0, cols - 1).astype(np.int64)
    kb = np.clip(np.floor(b), 0, cols - 1).astype(np.int64)
    parts = []
    for k, other in ((ka, True), (kb, kb != ka)):  # each record's first bin, then its last
        cell = base + k
        ov = np.minimum(b, k + 1) - np.maximum(a, k)
        # a bin a record merely touches with its end does not count; a zero-length record
        # still shows in its bin when nothing else is there
        idx = np.flatnonzero(other & ((ov > 0) | (b == a)) & (grid[cell] == EMPTY))
        parts.append((cell[idx], ov[idx], item[idx]))
    if any(len(cell) for cell, _, _ in parts):
        best = np.full(rows * cols, -1.0)
        for cell, ov, _ in parts:
            np.maximum.at(best, cell, ov)
        for cell, ov, it in parts:  # last bins after first ones: on a tie the later one wins
            win = ov == best[cell]
            grid[cell[win]] = it[win]
    return OccupancyGrid(grid.reshape(rows, cols), t0, t1, block, n_slots)


class _ItemLabels(pg.GraphicsObject):
    """Item ids written inside residency records, when few enough are visible and they fit."""

    def __init__(self):
        super().__init__()
        self.slot = self.x0 = self.x1 = np.zeros(0)
        self.text: list[str] = []
        self._rect = QRectF(0, 0, 1, 1)
        self.font = QFont()
        self.font.setPointSizeF(8.5)

    def set_records(self, slot, x0, x1, text: list[str]):
        self.prepareGeometryChange()
        self.slot, self.x0, self.x1, self.text = slot, x0, x1, text
        self.on_dark = np.zeros(len(slot), dtype=bool)
        if len(slot):
            self._rect = QRectF(float(x0.min()), -0.5, float(max(x1.max() - x0.min(), 1e-9)),
                                float(slot.max()) + 1)
        self.update()

    def boundingRect(self) -> QRectF:
        return self._rect

    def paint(self, p: QPainter, *args):
        vb = self.getViewBox()
        if vb is None or not len(self.slot):
            return
        (lo, hi), _ = vb.viewRange()
        vis = np.flatnonzero((self.x1 >= lo) & (self.x0 <= hi))
        if len(vis) > MAX_LABELS:
            return
        xf = p.transform()
        p.save()
        p.resetTransform()
        p.setFont(self.font)
        fm = p.fontMetrics()
        dark, light = QColor("#111111"), QColor("#ffffff")
        for i in vis:
            r = xf.mapRect(QRectF(float(self.x0[i]), float(self.slot[i]) - 0.5,
                                  float(self.x1[i] - self.x0[i]), 1.0))
            t = self.text[i]
            if r.width() >= fm.horizontalAdvance(t) + 6 and r.height() >= fm.height():
                p.setPen(light if self.on_dark[i] else dark)
                p.drawText(r, Qt.AlignCenter, t)
        p.restore()


class OccupancyView(QWidget):
    """Slots × time, coloured by the resident item. `set_result` only reads the Result."""

    hovered = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.time_axis = GridAxis()  # the timeline's: ticks in the unit of the visible span
        self.plot = pg.PlotWidget(background="w", axisItems={"bottom": self.time_axis})
        pi = self.plot.getPlotItem()
        style_plot(pi, left="slot", bottom="time (µs)", grid=(False, False))
        pi.invertY(True)  # slot 0 on top, as in a table
        pi.setMouseEnabled(x=True, y=True)
        self.image = VectorImageItem(axisOrder="row-major")  # a bitmap on screen, rectangles in an SVG
        pi.addItem(self.image)
        # thin white lines between slot rows, when rows are tall enough to tell apart
        self.separators = pg.PlotCurveItem(pen=pg.mkPen("w", width=1), connect="pairs")
        pi.addItem(self.separators, ignoreBounds=True)
        self.labels = _ItemLabels()
        pi.addItem(self.labels)
        self.time_cursor = pg.InfiniteLine(angle=90, movable=False,
                                      pen=pg.mkPen("#333333", width=1, style=Qt.DashLine))
        self.time_cursor.setZValue(20)
        self.time_cursor.hide()
        pi.addItem(self.time_cursor, ignoreBounds=True)
        self.caption = caption_label()
        self.info = info_label()
        self.stack = NoteStack(stack_vertically(self.caption, self.plot, self.info, stretch=self.plot))
        # which tier's slots are shown: the run's tiers, in the palette's colours; a run records
        # slot by slot the residency of one tier (Trace.slot_tier), the others say so
        self.tier_box = QComboBox()
        self.tier_box.setToolTip("The memory tier whose slots are shown")
        self.tier_box.currentIndexChanged.connect(lambda _: self._show_tier())
        self.tier_row = QWidget()
        row = QHBoxLayout(self.tier_row)
        row.setContentsMargins(6, 3, 6, 3)
        row.addWidget(QLabel("Tier"))
        row.addWidget(self.tier_box)
        row.addStretch(1)
        self._tier: str | None = None  # the tier chosen: kept across runs that have it
        stack_vertically(self.tier_row, self.stack, stretch=self.stack, into=self)

        self.result: Result | None = None
        self.grid: OccupancyGrid | None = None
        self.unit, self.scale = "µs", 1e3  # data units: the run's, fixed while it is shown
        self.fmt = TimeFormat()  # how times read: from the visible span, as on the timeline
        self._res = None       # residency sorted by (slot, start), for hover
        self._slot_bounds = None
        self._n_slots = 0
        self._t_end = 0
        self._unlink = None
        self._rebin = QTimer(self)
        self._rebin.setSingleShot(True)
        self._rebin.setInterval(40)
        self._rebin.timeout.connect(self._rebin_visible)
        pi.getViewBox().sigXRangeChanged.connect(lambda *_: self._rebin.start())
        pi.getViewBox().sigXRangeChanged.connect(self._range_moved)
        self.plot.scene().sigMouseMoved.connect(self._on_move)
        self.shared_range: SharedTimeRange | None = None  # the zoom kept across re-runs (the window's)
        self._building = False

    # --- public API ---------------------------------------------------------------------

    def set_result(self, result: Result) -> None:
        self._building = True
        try:
            self._set_result(result)
        finally:
            self._building = False
        self._units()

    def _units(self) -> None:
        """Axis and hover in the unit of the visible span (the timeline's rule and code)."""
        if self._res is None:
            return
        self.fmt = view_format(self.plot.getPlotItem().getViewBox(), self.scale)
        title = time_axis_title(self.result.scenario.kind, self.fmt.unit, self.result.scenario)
        show_format(self.time_axis, title, [self.time_axis], self.fmt, self.scale,
                    self.plot.getPlotItem().getViewBox())

    def _range_moved(self, *_):
        self._units()
        if self.shared_range is not None and not self._building and self._res is not None and self.isVisible():
            self.shared_range.record(self.plot.getPlotItem().getViewBox(), self.scale, self._t_end / self.scale)
        if self.isVisible() and not self._building and self._res is not None:
            rehover(self.plot, self._on_move)

    def _set_result(self, result: Result) -> None:
        self.result = result
        self.info.setText(" ")
        tr = result.trace
        self._tiers(tr)
        res = tr.residency
        if not len(res):
            self.grid = None
            self._res = None
            self.stack.show_note("This run has no residency records\n"
                                 "(no slot holds a token, session or row over time).")
            return
        self._show_tier()
        self._t_end = max(int(tr.t_end), 1)
        self.unit, self.scale = time_unit(self._t_end)
        self._n_slots = int(max(tr.slots, int(res["slot"].max()) + 1))
        order = _lexsort((res["start"], res["slot"]))
        self._res = np.take(res, order)  # (take: ~5x faster than res[order] on records)
        self._slot_bounds = np.searchsorted(self._res["slot"], np.arange(self._n_slots + 1))
        pi = self.plot.getPlotItem()
        items = np.sort(res["item"])  # (np.unique hashes: several times slower on 1M rows)
        n_items = int((items[1:] != items[:-1]).sum()) + 1
        self.caption.setText(
            f"<b>Occupancy</b>{f' of {tier_label(tr.slot_tier)}' if tr.slot_tier else ''} · {self._n_slots:,} slots × time · colour = the {tr.item_name} resident "
            f"in a slot (light grey = empty) · {len(res):,} residency records, {n_items:,} distinct")
        end = self._t_end / self.scale
        pi.setLimits(xMin=-0.05 * end, xMax=1.05 * end, yMin=-0.5 - 0.02 * self._n_slots,
                     yMax=self._n_slots - 0.5 + 0.02 * self._n_slots)
        self._build(0.0, float(self._t_end))
        block = self.grid.block
        pi.setLabel("left", "slot" if block == 1 else f"slot (one row per {block} slots)")
        n = self._n_slots
        if n <= MAX_SEPARATED:
            ys = np.repeat(np.arange(n - 1) + 0.5, 2)
            xs = np.tile([0.0, end], n - 1)
            self.separators.setData(xs, ys)
        else:
            self.separators.setData([], [])
        pi.getAxis("left").setTicks([[(i, str(i)) for i in range(n)]] if n <= MAX_SEPARATED else None)
        if self.shared_range is not None:
            self.shared_range.apply(pi.getViewBox(), self.scale, end)
        else:
            pi.setXRange(0, end, padding=0.02)
        pi.setYRange(-0.5, self._n_slots - 0.5, padding=0.02)
        self._update_labels()

    def _tiers(self, tr) -> None:
        """The tier field for a new run: its tiers; the one chosen before if it has it, else
        the tier its slots are in."""
        keys = trace_tiers(tr)
        slot = tier_key(tr.slot_tier) if tr.slot_tier else None
        want = self._tier if self._tier in keys else slot if slot in keys else (keys[0] if keys else None)
        box = self.tier_box
        box.blockSignals(True)
        box.clear()
        for k in keys:
            swatch = QPixmap(12, 12)
            swatch.fill(QColor(tier_color(k)))
            box.addItem(QIcon(swatch), TIER_LABELS[k], k)
        box.setCurrentIndex(keys.index(want) if want is not None else -1)
        box.setEnabled(len(keys) > 1)
        box.blockSignals(False)
        self.tier_row.setVisible(bool(keys))

    @property
    def tier(self) -> str | None:
        """The tier whose slots are shown (a palette key: hbm, cxl, dram, ssd, remote)."""
        k = self.tier_box.currentData()
        return str(k) if k is not None else None

    def _show_tier(self) -> None:
        """The grid for the tier the run's slots are in; a note for any other."""
        if self.result is None:
            return
        if self.tier_box.count():
            self._tier = self.tier
        tr = self.result.trace
        if not len(tr.residency):
            return
        slot = tier_key(tr.slot_tier) if tr.slot_tier else None
        if self.tier is None or slot is None or self.tier == slot:
            self.stack.show_content()
            return
        label = TIER_LABELS[self.tier]
        counters = [n for n in tr.counter_names if tier_key(n) == self.tier]
        where = (f"Its occupancy over time is on the Counters tab ({', '.join(counters)})." if counters
                 else f"This run keeps no occupancy of {label} over time.")
        self.stack.show_note(f"This run records which {tr.item_name} sits in which slot only for "
                             f"{TIER_LABELS[slot]}, not for {label}.\n{where}")

    def show_whole_run(self) -> None:
        if self._res is not None:
            self.plot.getPlotItem().setXRange(0, self._t_end / self.scale, padding=0.02)

    def link_x(self, plot_widget) -> None:
        """Share zoom and pan along time with another pyqtgraph plot (the timeline's)."""
        if self._unlink is not None:
            self._unlink()
        self._unlink = link_x_ranges(view_box_of(plot_widget), self.plot.getPlotItem().getViewBox())

    def set_cursor(self, x: float | None) -> None:
        """Vertical time cursor at x (display units, as on the timeline); None hides it."""
        if x is None:
            self.time_cursor.hide()
            return
        self.time_cursor.setValue(float(x))
        self.time_cursor.show()

    def describe(self, x: float, y: float) -> str:
        """Hover text for a point (x in display units, y in slots)."""
        if self._res is None:
            return ""
        s = int(round(y))
        t_text = f"t = {self.fmt.at(x * self.scale)}"
        if not 0 <= s < self._n_slots:
            return t_text
        t = x * self.scale
        a, b = self._slot_bounds[s], self._slot_bounds[s + 1]
        rows = self._res[a:b]
        j = int(np.searchsorted(rows["start"], t, side="right")) - 1
        # the latest record starting at or before t that has not ended (records in a slot
        # do not overlap, so a short look back is enough)
        item = None
        for k in range(j, max(j - 4, -1), -1):
            if rows["start"][k] <= t <= rows["end"][k]:
                item = int(rows["item"][k])
                break
        name = self.result.trace.item_name
        what = f"item = {item} ({name})" if item is not None else "empty"
        return f"slot {s}, {t_text}, {what}"

    # --- drawing --------------------------------------------------------------------------

    def _build(self, t0: float, t1: float) -> None:
        g = occupancy_grid(self._res, self._n_slots, t0, t1)
        self.grid = g
        self.image.setImage(item_rgba(g.items), autoLevels=False)
        rows, _ = g.shape
        self.image.setRect(QRectF(g.t0 / self.scale, -0.5, (g.t1 - g.t0) / self.scale, rows * g.block))

    def _rebin_visible(self) -> None:
        """After a zoom or pan, rebuild the grid for the visible range (plus half a view on
        either side, so panning shows cells at once) unless the current one is fine enough."""
        if self._res is None or self.grid is None:
            return
        (lo, hi), _ = self.plot.getPlotItem().getViewBox().viewRange()
        lo_ns, hi_ns = lo * self.scale, hi * self.scale
        span = max(hi_ns - lo_ns, 1.0)
        want0, want1 = max(0.0, lo_ns - span / 2), min(float(self._t_end), hi_ns + span / 2)
        if want1 <= want0:
            return
        g = self.grid
        vis0, vis1 = max(0.0, lo_ns), min(float(self._t_end), hi_ns)
        tol = g.bin_ns / 2
        covers = g.t0 <= vis0 + tol and g.t1 >= vis1 - tol
        fine = (vis1 - vis0) / g.bin_ns >= MAX_COLS / 3 or g.bin_ns <= 1.0
        if covers and fine:
            return
        self._build(want0, want1)

    def _update_labels(self) -> None:
        res = self._res
        if res is None or len(res) > 20 * MAX_LABELS or self._n_slots > MAX_ROWS:
            self.labels.set_records(np.zeros(0), np.zeros(0), np.zeros(0), [])
            return
        self.labels.set_records(res["slot"].astype(float), res["start"] / self.scale,
                                res["end"] / self.scale, [str(int(i)) for i in res["item"]])
        rgb = LUT[item_colour_index(res["item"])][:, :3].astype(float)
        self.labels.on_dark = rgb @ np.array([0.299, 0.587, 0.114]) < 150

    def _on_move(self, pos) -> None:
        pt = None if self._res is None else hover_point(self.plot, pos)
        if pt is None:
            return
        text = self.describe(pt.x(), pt.y())
        self.info.setText(text or " ")
        over_item = text.startswith("slot") and not text.endswith("empty")
        hover_tip(self.plot, pos, text if over_item else None)
        self.hovered.emit(text)
