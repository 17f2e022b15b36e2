"""Gantt timeline of a Result: one row per lane, spans coloured by kind, instants as markers.

Spans are drawn by one item per kind that paints only what is visible, merging spans that
fall within the same pixel column when zoomed out, so a million spans cost a few thousand
rectangles per repaint, never a million graphics items. Every span and mark can be hovered and
clicked (its fields in a details pane), measured between two cursors or over a Shift-dragged
range, and found by job, turn, position or text (timeline_instrument.py). Times read in the
unit of the visible span, as exported figures do.
"""
from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QLabel, QWidget

from kvviz.export.axis import time_unit
from kvviz.level_of_detail import merge_runs, thin_marks  # noqa: F401  (merge_runs: the timeline's API)
from kvviz.mechanisms import time_axis_title
from kvviz.palette import instant_color, instant_legend_name, span_color, tier_color, tier_color_of, tier_key
from kvviz.result import Result
from kvviz.trace import INSTANT_KINDS, SPAN_KINDS

from ._common import hover_point, hover_tip, info_label, no_si_prefix, rehover
from .time_range import SharedTimeRange
from .time_units import show_format, view_format
from .timeline_details import CursorText, TimeFormat, TimelineViewBox
from .timeline_instrument import Instrument
from .timeline_items import BAR, MAX_LABELLED, GridAxis, LaneAxis, SpanLayer
from .timeline_keys import Keys
from .timeline_query import Event, mark_at, who

TIER_BAND_ALPHA = 38  # a tier lane's band: its tier's colour, pale enough for the bars on it
MIN_ROWS = 6  # rows of vertical space even when a trace has fewer lanes
CURSOR_STRIP = 0.5  # rows of room under the last lane, for the time cursor's label
MARKS = {"hit": "●", "miss": "▼", "evict": "■", "issue": "▼", "land": "◆", "arrive": "★", "overflow": "✕"}

# pyqtgraph's "t" is the legend's ▼ (its "arrow_down" drew a 1-2 px sliver)
SYMBOLS = {"hit": "o", "miss": "t", "evict": "s", "issue": "t", "land": "d",
           "arrive": "star", "overflow": "x"}
MARK_PX = 6  # a mark is under the mouse within this many pixels of it
MARK_ON_BAR = -BAR / 2 - 0.08  # a mark's row offset on a lane with bars: on the bar's top edge


class _RefitLaneNames(QObject):
    """The lane names' column follows the plot's own width. The view's resize does not see every
    change of it: the details pane closed while the tab was hidden left the plot narrow until the
    tab came back, wider, with the view's size unchanged (the names kept the narrow column)."""

    def __init__(self, view):
        super().__init__(view)
        self.view = view

    def eventFilter(self, obj, ev):  # noqa: N802 (Qt's name)
        if ev.type() == QEvent.Resize and ev.size().width() != ev.oldSize().width():
            self.view.lane_axis.fit(ev.size().width())
        return False


class TimelineView(Keys, Instrument, QWidget):
    """The Gantt timeline. `set_result` replaces what is shown; it never simulates.
    `instrument=True` (the Timeline tab) adds the details pane and, unless `search=False`
    (Compare's), the search row."""

    hovered = Signal(str)
    picked = Signal(str, int)  # a span was double-clicked: (its lane's name, its ref)
    selected = Signal(object)  # the Event clicked or found (timeline_query.Event), or None
    pane_toggled = Signal(bool)  # the details pane appeared (True) or closed

    def __init__(self, parent=None, instrument: bool = False, search: bool = True):
        super().__init__(parent)
        self.lane_axis = LaneAxis([])
        self.time_axis = GridAxis()
        self.viewbox = TimelineViewBox()
        self.plot = pg.PlotWidget(background="w", viewBox=self.viewbox,
                                  axisItems={"left": self.lane_axis, "bottom": self.time_axis})
        self.legend = QLabel()
        self.legend.setTextFormat(Qt.RichText)
        self.legend.setWordWrap(True)  # many kinds wrap onto a second line, never widen the window
        self.legend.setStyleSheet("color:#222; padding:4px 8px; background:white;")
        self.info = info_label()  # a long hover line must never widen the window's centre
        self.result: Result | None = None
        self.lane_tier_colours: dict[str, str] = {}  # lane name -> its tier's colour (kvviz.palette)
        self.pick_hint: tuple[str, str] | None = None  # (lane, what a double-click there does)
        self.layers: list[SpanLayer] = []
        self.unit, self.scale = "µs", 1e3  # data units: the run's, fixed while it is shown
        self.fmt = TimeFormat()  # how times read: from the visible span
        self.time_cursor = pg.InfiniteLine(angle=90, movable=True, pen=pg.mkPen("#444", width=1, style=Qt.DashLine),
                                           label="{value}", labelOpts={"position": 0.97, "color": "#222",
                                                                      "fill": (255, 255, 255, 200)})
        self.time_cursor.label.format = CursorText(lambda x: self.fmt.at(x * self.scale))
        self.plot.scene().sigMouseMoved.connect(self._on_move)
        self.plot.scene().sigMouseClicked.connect(self._on_click)
        self._refit = _RefitLaneNames(self)
        self.plot.installEventFilter(self._refit)
        # the window's timeline keeps its zoom across re-runs; Compare's two do not share one
        self.shared_range: SharedTimeRange | None = None
        self._building = False
        self._waiting = None  # the note on the empty plot before the first run (waiting())
        self._end = 1.0
        self.viewbox.sigXRangeChanged.connect(self._range_moved)
        self.marks: list = []  # (scatter item, lanes, times) per instant kind, times sorted
        self.mark_y = np.zeros(0)  # per lane, where its marks sit from its centre (MARK_ON_BAR or 0)
        self._thin = QTimer(self)  # re-thin the marks once a zoom or pan settles
        self._thin.setSingleShot(True)
        self._thin.setInterval(40)
        self._thin.timeout.connect(self._thin_marks)
        self.viewbox.sigXRangeChanged.connect(lambda *_: self._thin.start())
        self.build_instrument(instrument, search)
        self.build_keys()

    def waiting(self, lines: list[str]) -> None:
        """Before the first run has arrived: the empty plot, its time axis labelled, says what is
        coming (`lines`: what the window is doing). Nothing once a run is shown."""
        if self.result is not None:
            return
        pi = self.plot.getPlotItem()
        if self._waiting is None:
            self._waiting = pg.TextItem(anchor=(0.5, 0.5))
            pi.addItem(self._waiting, ignoreBounds=True)
            pi.setLabel("bottom", "time")
            self.time_axis.setStyle(showValues=False)  # no run, no times: 0.1…0.9 would mean nothing
        (x0, x1), (y0, y1) = self.viewbox.viewRange()
        self._waiting.setPos((x0 + x1) / 2, (y0 + y1) / 2)
        self._waiting.setHtml('<div style="color:#555; font-size:12pt; text-align:center">'
                              + "<br>".join(map(html.escape, lines)) + "</div>")

    def set_result(self, result: Result, span_ns: int | None = None):
        """Show `result`. `span_ns` picks the data unit (views that share an axis pass the
        longest of their runs so they agree). The x range is the shared one when there is one
        (the zoom before this re-run), else the whole run; the cursor keeps its time."""
        self._building = True
        try:
            self._set_result(result, span_ns)
        finally:
            self._building = False
        self._units()

    def show_whole_run(self) -> None:
        if self.result is not None:
            self.viewbox.setXRange(0, self._end, padding=0.02)

    def resizeEvent(self, ev):  # noqa: N802 (Qt's name)
        super().resizeEvent(ev)
        if ev.size().width() != ev.oldSize().width():
            self.lane_axis.fit(self.plot.width() or ev.size().width())

    def keyPressEvent(self, ev):  # noqa: N802 (Qt's name)
        if not self.handle_key(ev):  # W/S zoom, A/D pan, Escape clears (timeline_keys.py)
            super().keyPressEvent(ev)

    def _thin_marks(self, *_):
        """Instants in view, one per lane and pixel column (as spans merge when zoomed out):
        ~160,000 AttentionStore marks would otherwise be drawn on every repaint."""
        (lo, hi), _ = self.viewbox.viewRange()
        px = (hi - lo) / max(self.viewbox.width(), 1.0)
        for item, lanes, x in self.marks:
            a, b = np.searchsorted(x, lo, "left"), np.searchsorted(x, hi, "right")
            keep = a + thin_marks(lanes[a:b], x[a:b], px)
            item.setData(x=x[keep], y=lanes[keep] + self.mark_y[lanes[keep]])

    def _range_moved(self, *_):
        self._units()
        # only the visible timeline holds the current result's units; a hidden one follows links
        if self.shared_range is not None and not self._building and self.result is not None and self.isVisible():
            self.shared_range.record(self.viewbox, self.scale, self._end)
        if self.isVisible() and not self._building and self.result is not None:
            rehover(self.plot, self._on_move)

    def ns_per_pixel(self) -> float:
        (lo, hi), _ = self.viewbox.viewRange()
        return (hi - lo) * self.scale / max(self.viewbox.width(), 1.0)

    def _units(self) -> None:
        """Axis, hover and cursors in the unit of the visible span, with the digits one pixel
        needs, from the relative origin when one is set."""
        if self.result is None:
            return
        fmt = view_format(self.viewbox, self.scale, self.origin_ns or 0.0)
        rel = " from the cursor" if self.origin_ns is not None else ""
        title = time_axis_title(self.result.scenario.kind, fmt.unit, self.result.scenario) + rel  # the CLI figure's words
        show_format(self.plot.getPlotItem().getAxis("bottom"), title, [self.time_axis], fmt, self.scale, self.viewbox)
        self.fmt = fmt
        for line in (self.time_cursor, self.cursor_b):
            line.label.valueChanged()
        self.measured()

    def _set_result(self, result: Result, span_ns: int | None):
        self.result = result
        self.info.setText(" ")  # the hover line described the previous run
        tr = result.trace
        unit, scale = time_unit(max(span_ns or tr.t_end, 1))
        self.unit, self.scale = unit, scale
        names = tr.lanes["name"].tolist()
        pi = self.plot.getPlotItem()
        pi.clear()
        if self._waiting is not None:  # (the note goes with the rest)
            self._waiting = None
            self.time_axis.setStyle(showValues=True)
        self.layers = []
        # One axis for the view's life: replacing it on every result loses the inverted y
        # mapping in pyqtgraph, so only its names change.
        self.lane_axis.set_names(names)
        pi.showGrid(x=True, y=False, alpha=0.15)
        self.fmt = TimeFormat(unit="")  # the axis label is set by _units for this run
        pi.invertY(True)
        pi.setMouseEnabled(x=True, y=False)
        pi.getAxis("bottom").setPen("#333")
        no_si_prefix(pi.getAxis("bottom"))
        pi.getAxis("bottom").setTextPen("#222")
        pi.getAxis("left").setTextPen("#222")
        pi.getAxis("left").setPen("#333")
        entries = []
        # a lane of a tier (its group or name names one: "DRAM", "SSD", a prefix cache's "dram")
        # sits on a pale band of the tier's colour, the colour every view gives that tier
        self.lane_tier_colours = {}
        for i, (name, group) in enumerate(tr.lanes[["name", "group"]].tolist()):
            colour = tier_color_of(group) or tier_color_of(name)
            if colour is None:
                continue
            self.lane_tier_colours[name] = colour
            band = QColor(colour)
            band.setAlpha(TIER_BAND_ALPHA)
            item = pg.LinearRegionItem((i - 0.5, i + 0.5), orientation="horizontal", movable=False,
                                       brush=pg.mkBrush(band), pen=pg.mkPen(None))
            item.setZValue(-100)
            pi.addItem(item)
        for key in dict.fromkeys(tier_key(c) for c in tr.lanes["group"].tolist() if tier_key(c)):
            entries.append(f'<span style="color:{tier_color(key)}; font-size:14px">▬</span>&nbsp;{key.upper()}')
        sp = tr.spans
        for k in np.unique(sp["kind"]):
            s = sp[sp["kind"] == k]
            kind = SPAN_KINDS[k]
            layer = SpanLayer(span_color(kind), s["lane"].astype(np.int64),
                              s["start"] / scale, s["end"] / scale,
                              [tr.label(int(i)) for i in s["label"]] if len(s) <= MAX_LABELLED else None)
            pi.addItem(layer)
            self.layers.append(layer)
            entries.append(f'<span style="color:{span_color(kind)}; font-size:14px">■</span>&nbsp;{kind}')
        ins = tr.instants
        # marks sit on the top edge of a lane's bars, and on the centre line of a lane that has
        # none (a lane of marks alone, as the untimed prefix replay's, drew them above its label)
        self.mark_y = np.zeros(len(names))
        self.mark_y[np.unique(sp["lane"])] = MARK_ON_BAR
        self.marks = []
        for k in np.unique(ins["kind"]):
            s = ins[ins["kind"] == k]
            kind = INSTANT_KINDS[k]
            item = pg.ScatterPlotItem(size=10 if SYMBOLS.get(kind) == "t" else 9, symbol=SYMBOLS.get(kind, "o"),
                                      pen=pg.mkPen("w", width=0.5), brush=instant_color(kind))
            order = np.argsort(s["t"], kind="stable")
            self.marks.append((item, s["lane"][order].astype(np.int64), s["t"][order] / scale))
            pi.addItem(item)
            name = instant_legend_name(kind, (SPAN_KINDS[k] for k in np.unique(sp["kind"])))
            entries.append(f'<span style="color:{instant_color(kind)}; font-size:13px">{MARKS.get(kind, "●")}</span>'
                           f'&nbsp;{name}')
        self.legend.setText("&nbsp;&nbsp; ".join(entries))  # the plain space lets the line wrap
        end = max((span_ns or tr.t_end) / scale, 1e-9)  # linked views share one range
        kept = self.shared_range.cursor_ns if self.shared_range is not None else None
        self.time_cursor.setValue(kept / scale if kept is not None else 0)
        pi.addItem(self.time_cursor)
        self.add_instrument_items(pi)
        rows = max(len(names), MIN_ROWS)  # few lanes: keep bars a sensible height
        # half a row under the last lane for the time cursor's label, which sat on its bars
        bottom = rows - 0.4 + (CURSOR_STRIP if len(names) >= MIN_ROWS else 0)
        pi.setLimits(xMin=-0.05 * end, xMax=end * 1.05, yMin=-1, yMax=bottom + 0.4)
        self._end = end
        if self.shared_range is not None:
            self.shared_range.apply(pi.getViewBox(), scale, end)
        else:
            pi.setXRange(0, end, padding=0.02)
        pi.setYRange(-0.6, bottom, padding=0)
        self._thin_marks()

    def zoom_to(self, lane_name: str, ref: int, margin: float = 0.15) -> bool:
        """Show the spans with this ref on this lane (e.g. one job), with a margin; False if none."""
        tr = self.result.trace if self.result is not None else None
        names = list(tr.lanes["name"]) if tr is not None else []
        if lane_name not in names:
            return False
        sp = tr.spans[(tr.spans["lane"] == names.index(lane_name)) & (tr.spans["ref"] == ref)]
        if not len(sp):
            return False
        lo, hi = sp["start"].min() / self.scale, sp["end"].max() / self.scale
        pad = (hi - lo) * margin or 1.0
        self.viewbox.setXRange(lo - pad, hi + pad, padding=0)
        return True

    def visible_range_ns(self) -> tuple[int, int]:
        """The time range on screen, in ns from the trace start (for 'export what I see')."""
        (lo, hi), _ = self.viewbox.viewRange()
        return max(0, int(lo * self.scale)), max(1, int(hi * self.scale))

    def _on_move(self, pos):
        pt = None if self.result is None else hover_point(self.plot, pos)
        if pt is None:
            return
        text = self.describe(pt.x(), pt.y())
        self.info.setText(text or " ")
        under = self.event_at(pt.x(), pt.y()) is not None
        hover_tip(self.plot, pos, text if under else None)
        self.hovered.emit(text)

    def _on_click(self, ev):
        if self.result is None or ev.button() != Qt.LeftButton:
            return
        pt = hover_point(self.plot, ev.scenePos())
        if pt is None:
            return
        if ev.double():
            lane, span = self.span_at(pt.x(), pt.y())
            if span is not None:
                self.picked.emit(lane, int(span["ref"]))
        elif ev.modifiers() & Qt.ShiftModifier:
            self.place_second_cursor(pt.x() * self.scale)
        else:
            self.select(self.event_at(pt.x(), pt.y()))

    def _lane_at(self, y: float) -> int | None:
        lane = int(round(y))
        if not 0 <= lane < len(self.result.trace.lanes) or abs(y - lane) > BAR / 2 + 0.1:
            return None
        return lane

    def mark_at(self, x: float, y: float) -> Event | None:
        """The mark under the point (x in data units, y in rows), within MARK_PX pixels."""
        lane = self._lane_at(y)
        if lane is None or abs(y - (lane + self.mark_y[lane])) > 0.22:
            return None
        return mark_at(self.result.trace, lane, x * self.scale, MARK_PX * self.ns_per_pixel())

    def event_at(self, x: float, y: float) -> Event | None:
        """The mark or span under the point: a mark first (it is drawn on top)."""
        if self.result is None:
            return None
        m = self.mark_at(x, y)
        if m is not None:
            return m
        _, row = self._span_row_at(x, y)
        return Event("spans", row) if row is not None else None

    def span_at(self, x: float, y: float):
        """(lane name or None, the span under the point or None); x in display units, y in rows."""
        name, row = self._span_row_at(x, y)
        return name, (self.result.trace.spans[row] if row is not None else None)

    def _span_row_at(self, x: float, y: float) -> tuple[str | None, int | None]:
        tr = self.result.trace
        lane = self._lane_at(y)
        if lane is None:
            return None, None
        t = x * self.scale
        rows = np.flatnonzero(tr.spans["lane"] == lane)
        sp = tr.spans[rows]
        hit = np.flatnonzero((sp["start"] <= t) & (sp["end"] >= t))
        if not len(hit):
            # zoomed out, a bar drawn in a pixel column may be a span narrower than the column:
            # the nearest span within a pixel is the one under the mouse
            tol = self.ns_per_pixel()
            near = np.flatnonzero((sp["start"] <= t + tol) & (sp["end"] >= t - tol))
            if len(near):
                gap = np.maximum(sp["start"][near] - t, t - sp["end"][near])
                hit = near[[int(np.argmin(gap))]]
        return str(tr.lanes["name"][lane]), (int(rows[hit[-1]]) if len(hit) else None)

    def describe(self, x: float, y: float) -> str:
        """What is under the point (x in display units, y in lane rows): for hover text, in the
        unit of the visible span, with as many decimals as one pixel needs."""
        tr = self.result.trace
        fmt = self.fmt
        lane = self._lane_at(y)
        if lane is None:
            return f"t = {fmt.at(x * self.scale)}"
        name = str(tr.lanes["name"][lane])
        m = self.mark_at(x, y)
        if m is not None:
            facts = tr.facts_of(m.record(tr))
            about = who(facts) or f"{tr.item_name} {int(m.record(tr)['ref'])}"
            extra = f", {facts['bytes']:,} B" if "bytes" in facts else ""
            return f"{name}: {m.kind(tr)} · {about}{extra} at {fmt.at(m.start(tr))}"
        _, s = self.span_at(x, y)
        if s is None:
            return f"{name}   t = {fmt.at(x * self.scale)}"
        hint = f"   · double-click: {self.pick_hint[1]}" if self.pick_hint and name == self.pick_hint[0] else ""
        label = tr.label(int(s["label"]))
        facts = tr.facts_of(s)
        moved = f" · {facts['bytes']:,} B" if "bytes" in facts else ""
        if "src" in facts or "dst" in facts:
            moved += f" {facts.get('src', '?')}→{facts.get('dst', '?')}"
        return (f"{name}: {SPAN_KINDS[s['kind']]} {fmt.value(s['start'])}–{fmt.at(s['end'])} "
                f"({fmt.dur(s['end'] - s['start'])})" + (f" — {label}" if label else "") + moved + hint)
