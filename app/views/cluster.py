"""The Cluster view's Instances page: the run's Gantt with its lanes grouped by instance (the
arrivals lane on top, then each shown instance's GPU, RDMA and DRAM↔HBM lanes), each routing
decision as a line from the request's arrival to its first token on the instance that took it,
and two heat maps with one row per instance over the same time axis: the requests waiting in its
queue (each column its peak) and its cache's occupancy (HBM and DRAM blocks over their
capacity, each column its time-weighted mean; the shared pool a row of its own). The columns
cover the time shown, so a zoom sees the queue at its own resolution. Clicking a heat map's row
shows that instance in the Gantt; the selector above it shows all, the prefill or decode
instances, or one instance.

Reads the finished Result only (app/cluster_runs.py derives what it shows from the trace)."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, QTimer
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSizePolicy, QSplitter, QVBoxLayout, QWidget

from kvviz.result import Result

from .. import cluster_runs as cr
from ._common import (
    LABEL_STYLE,
    NoteStack,
    hover_point,
    info_label,
    link_x_ranges,
    no_si_prefix,
    show_hover,
    style_plot,
)
from .timeline import TimelineView
from .vector_image import VectorImageItem, vector_colour_bar

COLUMNS = 600  # heat-map columns over the run (a few pixels each at full width)
ALL, PREFILL, DECODE = "all instances", "prefill instances", "decode instances"
MAX_DECISIONS = 20_000  # routing lines drawn at most (each a thin segment)


class HeatStrip(pg.PlotWidget):
    """One heat map: a row per instance, time across, a colour bar. The left axis names the rows
    (its ticks are instance numbers, read as queue lengths under a "queue" title); the colour
    bar names what the colour shows."""

    def __init__(self, colour_label: str, cmap: str):
        super().__init__(background="w")
        pi = self.getPlotItem()
        style_plot(pi, left="instance", grid=(False, False))
        pi.invertY(True)
        pi.setMouseEnabled(x=True, y=False)
        self.image = VectorImageItem(axisOrder="row-major")  # a bitmap on screen, rectangles in an SVG
        pi.addItem(self.image)
        self.cmap = pg.colormap.get(cmap)
        self.bar = vector_colour_bar(colorMap=self.cmap, values=(0, 1), width=10, interactive=False)
        self.bar.setImageItem(self.image, insert_in=pi)
        self.bar.axis.setLabel(colour_label, **LABEL_STYLE)
        no_si_prefix(self.bar.axis)  # 0.8 requests read "800" under an unseen milli prefix
        self.rows: list[int | None] = []  # the instance of each row (None: the shared pool)
        self.values = np.zeros((0, 0))
        self.edges = np.zeros(1)

    def show_rows(self, rows: list[int | None], values: np.ndarray, edges_ns: np.ndarray, scale: float, top: float):
        self.rows, self.values, self.edges = rows, values, edges_ns
        pi = self.getPlotItem()
        self.image.setImage(values, autoLevels=False, levels=(0, max(top, 1e-9)))
        self.bar.setLevels((0, max(top, 1e-9)))
        x0, x1 = edges_ns[0] / scale, edges_ns[-1] / scale
        self.image.setRect(QRectF(x0, -0.5, x1 - x0, len(rows)))
        ax = pi.getAxis("left")
        step = max(1, len(rows) // 4)  # a few names: 16 instances in 100 px stay readable
        ax.setTicks([[(i, "pool" if k is None else str(k)) for i, k in enumerate(rows)
                      if i % step == 0 or k is None], []])
        pi.setYRange(-0.5, len(rows) - 0.5, padding=0)

    def cell(self, scene_pos) -> tuple[int, int] | None:
        """(row, column) under the mouse, or None."""
        p = hover_point(self, scene_pos)
        if p is None or not len(self.rows) or self.values.size == 0:
            return None
        r = int(round(p.y()))
        rect = self.image.mapRectToView(self.image.boundingRect())
        if not 0 <= r < len(self.rows) or rect.width() <= 0:
            return None
        c = int((p.x() - rect.left()) / rect.width() * self.values.shape[1])
        return (r, c) if 0 <= c < self.values.shape[1] else None


class ClusterView(QWidget):
    """The Instances page (see the module)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.result: Result | None = None
        self.pick = QComboBox()
        self.pick.setMinimumContentsLength(16)
        self.pick.currentIndexChanged.connect(self._draw_gantt)
        top = QHBoxLayout()
        top.setContentsMargins(8, 4, 8, 0)
        top.addWidget(QLabel("Gantt shows"))
        top.addWidget(self.pick)
        top.addSpacing(12)  # the summary read as the selector's text when it touched it
        self.summary = QLabel()
        self.summary.setStyleSheet("color:#333;")
        # a long summary is cut at the tab's edge rather than widening the tab (and squeezing the
        # docks) at 1366 px; its tooltip holds the whole line
        self.summary.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        top.addWidget(self.summary, 1)
        self.gantt = TimelineView()
        self.queue = HeatStrip("peak queue", "viridis")
        self.cache = HeatStrip("cache full", "CET-L17")
        self.info = info_label()
        for strip in (self.queue, self.cache):
            strip.scene().sigMouseMoved.connect(lambda pos, s=strip: self._hover(s, pos))
            strip.scene().sigMouseClicked.connect(lambda ev, s=strip: self._clicked(s, ev))
            link_x_ranges(self.gantt.viewbox, strip.getPlotItem().getViewBox())
        self.split = split = QSplitter(Qt.Vertical)
        split.addWidget(self.gantt)
        split.addWidget(self.queue)
        split.addWidget(self.cache)
        split.setStretchFactor(0, 4)
        split.setStretchFactor(1, 3)
        split.setStretchFactor(2, 3)
        split.setChildrenCollapsible(False)
        body = QWidget()
        lay = QVBoxLayout(body)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addLayout(top)
        lay.addWidget(split, 1)
        lay.addWidget(self.info)
        self.stack = NoteStack(body)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.stack)
        self.groups: dict[int, list[int]] = {}
        self.roles: dict[int, str] = {}
        self.decisions = None  # (arrival ns, first token ns, instance) per request
        self.routes: pg.PlotDataItem | None = None
        self.table: tuple[list[str], list[list]] | None = None
        self._series = None  # the run's step functions for the heat maps (_draw_heat)
        self._columns: tuple[float, float] | None = None  # the time range their columns cover now (ns)
        self._rebin_soon = QTimer(self)  # once a zoom or pan settles
        self._rebin_soon.setSingleShot(True)
        self._rebin_soon.setInterval(60)
        self._rebin_soon.timeout.connect(self._rebin)
        self.gantt.viewbox.sigXRangeChanged.connect(lambda *_: self._rebin_soon.start())
        self._align_soon = QTimer(self)
        self._align_soon.setSingleShot(True)
        self._align_soon.setInterval(20)
        self._align_rounds = 0
        self._align_soon.timeout.connect(self.align)

    def align(self) -> None:
        """The heat maps' time axes under the Gantt's: the same left edge (the lane names' width)
        and right edge (the Gantt gets an empty margin as wide as the colour bars), by the plots'
        layout margins (a wider axis would move its title away from its ticks)."""
        if self.result is None or self.stack.showing_note:
            return
        left = _left(self.gantt.plot)
        moves = [(strip, left - _left(strip), 0.0) for strip in (self.queue, self.cache)]
        margin = max(_right_margin(s) for s in (self.queue, self.cache))
        moves.append((self.gantt.plot, 0.0, margin - _right_margin(self.gantt.plot)))
        moved = False
        for plot, dl, dr in moves:
            if abs(dl) > 0.5 or abs(dr) > 0.5:
                _add_margin(plot, dl, dr)
                moved = True
        # a margin's change (and the lane names' width) settles at the next layout: look again
        # then, until the edges agree (a few rounds at most)
        self._align_rounds = self._align_rounds + 1 if moved else 0
        if moved and self._align_rounds < 6:
            self._align_soon.start()

    def resizeEvent(self, ev):  # noqa: N802 (Qt's name)
        super().resizeEvent(ev)
        self._align_soon.start()

    def showEvent(self, ev):  # noqa: N802 (Qt's name)
        super().showEvent(ev)
        self._align_soon.start()

    def not_applicable(self, why: str) -> None:
        self.result = None
        self.stack.show_note(why)

    # --- drawing ----------------------------------------------------------------------------
    def set_result(self, result: Result) -> None:
        self.result = result
        tr = result.trace
        self.groups = cr.instance_lanes(tr)
        if not self.groups:
            self.stack.show_note("This run's timeline has no instance lanes (a cluster run records one group per "
                                 "instance)")
            return
        self.stack.show_content()
        self.roles = cr.roles(result)
        self.decisions = cr.first_tokens(result)
        keep = self.pick.currentText()
        self.pick.blockSignals(True)
        self.pick.clear()
        choices = [ALL]
        if any(r == "prefill" for r in self.roles.values()):
            choices += [PREFILL, DECODE]
        choices += [f"instance {k} ({self.roles.get(k, '?')})" for k in self.groups]
        self.pick.addItems(choices)
        # many instances: one at a time reads best (41 lanes in a few hundred pixels do not)
        self.pick.setCurrentText(keep if keep in choices else (ALL if len(self.groups) <= 4 else choices[-len(self.groups)]))
        self.pick.blockSignals(False)
        m = result.metrics
        busy = [r.get("busy_s", 0.0) for r in m.get("per_instance", ())]
        self.summary.setText(
            f"{m.get('routing_policy', '?')} · {len(self.groups)} instances · "
            f"load imbalance (max/mean busy) {_num(m.get('load_imbalance'), '.2f')} · "
            f"busy {min(busy, default=0):,.0f}–{max(busy, default=0):,.0f} s")
        self.summary.setToolTip(self.summary.text())
        self._draw_gantt()
        self._draw_heat()
        self._align_soon.start()

    def shown_instances(self) -> list[int]:
        text = self.pick.currentText()
        if text == ALL:
            return list(self.groups)
        if text in (PREFILL, DECODE):
            want = "prefill" if text == PREFILL else "decode"
            return [k for k in self.groups if self.roles.get(k) == want]
        for k in self.groups:
            if text.startswith(f"instance {k} "):
                return [k]
        return list(self.groups)

    def _draw_gantt(self, *_):
        if self.result is None or not self.groups:
            return
        tr = self.result.trace
        names = tr.lanes["name"].tolist()
        groups = tr.lanes["group"].tolist()
        shown = self.shown_instances()
        router = [i for i, g in enumerate(groups) if cr.instance_of(g) is None]  # arrivals, rejected
        rows = router + [i for k in shown for i in self.groups[k]]
        view = Result(self.result.scenario, cr.sub_trace(tr, rows), self.result.metrics_dict(), self.result.events)
        self.gantt.set_result(view, span_ns=tr.t_end)  # the whole run's unit, so the heat maps line up
        self._draw_routes(rows, names, shown)
        self._size_gantt(len(rows))
        self._align_soon.start()  # another selection's lane names: another width

    def _size_gantt(self, lanes: int) -> None:
        """Room for the lanes shown (~18 px each, within 30–70% of the height); the heat maps
        share the rest: all 8 prefill instances' 25 lanes no longer overlap their names."""
        total = sum(self.split.sizes())
        if total <= 0:
            return
        want = 110 + 18 * max(lanes, 6)  # the legend, the time axis and its title, and the rows
        g = int(min(max(want, 0.3 * total), 0.7 * total))
        self.split.setSizes([g, (total - g) // 2, total - g - (total - g) // 2])

    def _draw_routes(self, rows: list[int], names: list[str], shown: list[int]):
        """A line per request from its arrival (the arrivals lane) to its first token (its
        instance's GPU lane): the router's decision, and its length the request's TTFT."""
        pi = self.gantt.plot.getPlotItem()
        self.routes = None
        if self.decisions is None or cr.ARRIVALS not in names:
            return
        arrival, first, where = self.decisions
        row_of = {lane: r for r, lane in enumerate(rows)}
        a_row = row_of[names.index(cr.ARRIVALS)]
        gpu_row = np.full(max(self.groups) + 1, -1.0)
        for k in shown:
            gpu_row[k] = row_of[self.groups[k][0]]
        ok = (where >= 0) & (arrival >= 0)
        ok[ok] = gpu_row[where[ok]] >= 0
        idx = np.flatnonzero(ok)[:MAX_DECISIONS]
        if not len(idx):
            return
        s = self.gantt.scale
        x = np.empty(2 * len(idx))
        y = np.empty(2 * len(idx))
        x[0::2], x[1::2] = arrival[idx] / s, first[idx] / s
        y[0::2], y[1::2] = a_row, gpu_row[where[idx]]
        self.routes = pg.PlotDataItem(x, y, connect="pairs", pen=pg.mkPen(70, 70, 160, 60, width=1))
        self.routes.setZValue(-50)  # under the bars and marks
        pi.addItem(self.routes)

    def _draw_heat(self):
        """The heat maps' series, once a run (sorted step functions), then their columns."""
        tr = self.result.trace
        ks = list(self.groups)
        sc = self.result.scenario
        block = int(self.result.metrics.get("workload", {}).get("block_tokens", 1)) or 1
        cap = {"HBM": max(1, sc.instance.hbm_cache_tokens // block)}
        if sc.instance.dram_cache_tokens and not sc.pool.shared:
            cap["DRAM"] = max(1, sc.instance.dram_cache_tokens // block)
        queues = [cr.steps(tr, f"instance {k} queue") for k in ks]
        cached = [k for k in ks if self.roles.get(k) != "decode"]
        # each row's cache: its tiers' step functions and the capacity they share
        caches = [([cr.steps(tr, f"instance {k} {t} cache") for t in cap], sum(cap.values())) for k in cached]
        rows: list[int | None] = list(cached)
        if cr.POOL in tr.counter_names:  # the shared pool: one more row, over its own capacity
            caches.append(([cr.steps(tr, cr.POOL)], max(1, len(ks) * sc.instance.dram_cache_tokens // block)))
            rows.append(None)
        top = max((float(v.max()) for _, v in queues if len(v)), default=1.0)  # one colour scale at any zoom
        self._series = (ks, queues, rows, caches, top)
        tiers = " + ".join(cap) + (" (each instance); the shared pool's last row" if rows and rows[-1] is None else "")
        # the tiers in the tooltip: a label naming them was cut short at small heights
        self.cache.setToolTip(f"Cache occupancy over capacity: {tiers}; each column's time-weighted mean")
        self.queue.setToolTip("Requests waiting in each instance's queue: each column's peak")
        self.cache.getPlotItem().setLabel("bottom", self.gantt.plot.getPlotItem().getAxis("bottom").labelText,
                                          **LABEL_STYLE)
        self._columns = None
        self._rebin()
        for strip in (self.queue, self.cache):
            strip.getPlotItem().getViewBox().setXRange(*self.gantt.viewbox.viewRange()[0], padding=0)

    def _rebin(self, *_):
        """The heat maps' columns over the time shown (COLUMNS of them), so a zoom shows the
        queue's peaks at its own resolution, not the whole run's columns stretched."""
        if self.result is None or self._series is None:
            return
        end = max(self.result.trace.t_end, 1)
        lo, hi = self.gantt.viewbox.viewRange()[0]
        s = self.gantt.scale
        lo_ns, hi_ns = max(0.0, lo * s), min(float(end), hi * s)
        if hi_ns - lo_ns < COLUMNS:  # less than a ns a column (or nothing of the run in view)
            lo_ns, hi_ns = 0.0, float(end)
        if self._columns == (lo_ns, hi_ns):
            return
        self._columns = (lo_ns, hi_ns)
        edges = np.linspace(lo_ns, hi_ns, COLUMNS + 1)
        ks, queues, rows, caches, top = self._series
        q = np.array([cr.step_peaks(t, v, edges) for t, v in queues]) if queues else np.zeros((0, COLUMNS))
        self.queue.show_rows(ks, q, edges, s, top)
        occ = [sum(cr.step_means(t, v, edges) for t, v in tiers) / capacity for tiers, capacity in caches]
        occ_a = np.array(occ) if occ else np.zeros((0, COLUMNS))
        self.cache.show_rows(rows, occ_a, edges, s, 1.0)
        self.table = self._rows(ks, rows, edges, q, occ_a)

    def _rows(self, ks, cached, edges, q, occ):
        """A row per instance (and the shared pool, if any) and column."""
        header = ["instance", "role", "t_start_s", "t_end_s", "queue_peak_requests", "cache_occupancy_mean"]
        rows = []
        where = {k: i for i, k in enumerate(cached)}
        for i, k in enumerate([*ks, None] if None in where else ks):
            for c in range(len(edges) - 1):
                o = float(occ[where[k], c]) if k in where else ""
                qv = float(q[i, c]) if k is not None else ""
                rows.append(["pool" if k is None else k, "shared pool" if k is None else self.roles.get(k, ""),
                             float(edges[c]) / 1e9, float(edges[c + 1]) / 1e9, qv, o])
        return header, rows

    # --- interaction ------------------------------------------------------------------------
    def _hover(self, strip: HeatStrip, pos):
        cell = strip.cell(pos)
        if cell is None:
            return
        r, c = cell
        t0, t1 = strip.edges[c] / 1e9, strip.edges[c + 1] / 1e9
        v = strip.values[r, c]
        what = f"at most {v:.0f} requests waiting" if strip is self.queue else f"cache {v:.0%} full (mean)"
        k = strip.rows[r]
        who, click = ("the shared pool", "") if k is None else (f"instance {k}", " · click: this instance in the Gantt")
        show_hover(strip, self.info, pos, f"{who} · {t0:,.1f}–{t1:,.1f} s · {what}{click}")

    def _clicked(self, strip: HeatStrip, ev):
        cell = strip.cell(ev.scenePos())
        if cell is not None and strip.rows[cell[0]] is not None:
            self.show_instance(strip.rows[cell[0]])

    def show_instance(self, k: int) -> None:
        i = self.pick.findText(f"instance {k} ({self.roles.get(k, '?')})")
        if i >= 0:
            self.pick.setCurrentIndex(i)

    def data_rows(self) -> tuple[list[str], list[list]] | None:
        """The heat maps' cells: per instance and column, the mean queue and cache occupancy."""
        return self.table if self.result is not None else None


def _left(plot: pg.PlotWidget) -> float:
    vb = plot.getPlotItem().getViewBox()
    return vb.mapRectToScene(vb.boundingRect()).left()


def _add_margin(plot: pg.PlotWidget, left: float, right: float) -> None:
    lay = plot.getPlotItem().layout
    l_, t, r, b = lay.getContentsMargins()
    lay.setContentsMargins(max(0.0, l_ + left), t, max(0.0, r + right), b)


def _right_margin(plot: pg.PlotWidget) -> float:
    vb = plot.getPlotItem().getViewBox()
    return plot.width() - vb.mapRectToScene(vb.boundingRect()).right()


def _num(v, fmt: str) -> str:
    return format(v, fmt) if isinstance(v, (int, float)) else "–"
