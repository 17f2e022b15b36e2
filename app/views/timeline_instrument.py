"""The timeline as an instrument (a mixin of TimelineView): select an event and read all of its
fields in a details pane, measure Δt between the cursor and a second one (Shift-click; both snap
to event edges), select a time range (Shift-drag) for per-lane counts, busy time and bytes, find
a job, turn, position or label, and read times from a relative origin at the cursor."""
from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QScrollArea,
    QSplitter,
    QToolButton,
    QWidget,
)

from ._common import stack_vertically
from .timeline_details import CursorText, event_html, range_html
from .timeline_items import BAR
from .timeline_query import Event, event_on, find, lane_named, nearest_edge, range_stats

SNAP_PX = 8  # a cursor let go within this many pixels of an event's edge lands on it
DETAILS_WIDTH = 270
PLACEHOLDER = "Click a span or mark for its fields. Shift-click: a second cursor (Δt). Shift-drag: a range."


class Instrument:
    """Mixed into TimelineView (which declares the `selected` signal: Qt signals live on it)."""

    # --- construction -----------------------------------------------------------------------
    def build_instrument(self, instrument: bool, search: bool = True) -> None:
        """`instrument`: the details pane beside the plot; `search`: the find row above it too
        (Compare's two timelines have the pane, and no room for two find rows)."""
        self.origin_ns: float | None = None  # t = 0 here, when set
        self.selection: Event | None = None
        self.matches: list[Event] = []
        self.match_i = -1
        self.range_ns: tuple[float, float] | None = None  # the Shift-dragged range
        self.cursor_b = pg.InfiniteLine(angle=90, movable=True, pen=pg.mkPen("#C0392B", width=1, style=Qt.DashLine),
                                        label="{value}", labelOpts={"position": 0.90, "color": "#C0392B",
                                                                   "fill": (255, 255, 255, 220)})
        self.cursor_b.label.format = CursorText(lambda x: self._delta_text())
        self.cursor_b.hide()
        self.region = pg.LinearRegionItem(movable=True, brush=(52, 101, 164, 40), pen=pg.mkPen("#3465A4"))
        self.region.hide()
        self.region.sigRegionChanged.connect(self._region_moved)
        self.highlight = pg.PlotCurveItem(pen=pg.mkPen("#E8112D", width=2))
        self.highlight.setZValue(20)
        self.viewbox.range_dragged.connect(self._range_dragged)
        self.viewbox.sigXRangeChanged.connect(lambda *_: self._draw_highlight())
        for line in (self.time_cursor, self.cursor_b):
            line.sigPositionChangeFinished.connect(self._snap)
            line.sigPositionChanged.connect(lambda *_: self.measured())
        self.time_cursor.sigPositionChanged.connect(self._cursor_moved)
        self.details = None
        if not instrument:
            stack_vertically(self.legend, self.plot, self.info, stretch=self.plot, into=self)
            return
        self.search = QLineEdit()
        self.search.setPlaceholderText("Find (Ctrl+F): job 12, turn 3, pos 7, layer 4, or text")
        self.search.setClearButtonEnabled(True)
        # Enter / Shift+Enter: timeline_keys (returnPressed does not tell them apart)
        self.search.textChanged.connect(lambda _: self._forget_matches())
        prev, nxt = QToolButton(), QToolButton()
        prev.setText("◀")
        nxt.setText("▶")
        nxt.setToolTip("Next match (Enter)")
        prev.setToolTip("Previous match (Shift+Enter)")
        prev.clicked.connect(lambda: self.find_next(-1))
        nxt.clicked.connect(lambda: self.find_next(+1))
        self.match_label = QLabel("")
        self.match_label.setMinimumWidth(90)
        self.relative = QCheckBox("t = 0 at cursor")
        self.relative.setToolTip("Read the axis, hover and details from the cursor's time")
        self.relative.toggled.connect(self.set_relative_origin)
        row = QWidget()
        lay = QHBoxLayout(row)
        lay.setContentsMargins(6, 3, 6, 3)
        lay.addWidget(self.search, 1)
        for w in (prev, nxt, self.match_label, self.relative):
            lay.addWidget(w)
        self.details = QLabel(PLACEHOLDER)
        self.details.setTextFormat(Qt.RichText)
        self.details.setWordWrap(True)
        self.details.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        self.details.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.details.setStyleSheet("color:#222; background:white; padding:6px;")
        scroll = QScrollArea()
        scroll.setWidget(self.details)
        scroll.setWidgetResizable(True)
        scroll.setStyleSheet("QScrollArea { background:white; border:none; }")
        close = QToolButton()
        close.setText("×")
        close.setToolTip("Close the details and the range (Esc: those and the second cursor)")
        close.setAutoRaise(True)
        close.clicked.connect(self.close_details)
        title = QLabel("Details")
        title.setStyleSheet("color:#555; font-weight:bold; padding-left:6px;")
        top = QWidget()
        top_lay = QHBoxLayout(top)
        top_lay.setContentsMargins(0, 0, 0, 0)
        top_lay.addWidget(title, 1)
        top_lay.addWidget(close)
        pane = stack_vertically(top, scroll, stretch=scroll)
        pane.setMinimumWidth(180)
        pane.setStyleSheet("background:white; border-left:1px solid #ddd;")
        split = QSplitter(Qt.Horizontal)
        split.addWidget(self.plot)
        split.addWidget(pane)
        split.setStretchFactor(0, 1)
        split.setCollapsible(0, False)
        split.setSizes([900, DETAILS_WIDTH])
        # shown once there is something to show: until then the plot keeps the whole width
        pane.hide()
        self.details_pane, self.details_split = pane, split
        if not search:
            row.hide()
        stack_vertically(row, self.legend, split, self.info, stretch=split, into=self)

    def add_instrument_items(self, pi: pg.PlotItem) -> None:
        """After the plot was cleared for a new run: the second cursor, range and highlight."""
        for item in (self.cursor_b, self.region, self.highlight):
            pi.addItem(item, ignoreBounds=True)
        self.selection = None  # row numbers belong to the previous run
        self.highlight.setData([], [])
        if self.details is not None:
            self._forget_matches()  # "3 of 12" counted the previous run's events: Enter counts again
        self.matches, self.match_i = [], -1
        if self.details is not None:
            self.details.setText(PLACEHOLDER)
        if self.range_ns is not None:
            self._show_range(*self.range_ns)

    # --- select and inspect -------------------------------------------------------------------
    def select(self, ev: Event | None) -> None:
        """Show `ev`'s fields in the details pane and outline it (None: clear)."""
        self.selection = ev
        self._draw_highlight()
        if self.details is not None:
            self.details.setText(event_html(self.result.trace, ev, self.fmt) if ev is not None else PLACEHOLDER)
            if ev is not None:
                self.show_pane(True)
        self.selected.emit(ev)

    def show_pane(self, on: bool) -> None:
        if on == self.details_pane.isHidden():  # (isVisible is False on a hidden tab)
            self.details_pane.setVisible(on)
            self.pane_toggled.emit(on)
            # the plot's width changed without the view resizing: the lane names' share follows
            QTimer.singleShot(0, self, lambda: self.lane_axis.fit(self.plot.width()))

    def close_details(self) -> None:
        """Hide the pane, and the selection and range it described."""
        self.selection = None
        self._draw_highlight()
        self.clear_range()
        if self.details is not None:
            self.details.setText(PLACEHOLDER)
            self.show_pane(False)

    def details_text(self) -> str:
        """The details pane as plain text (for tests and the status line)."""
        if self.details is None:
            return ""
        from PySide6.QtGui import QTextDocument
        doc = QTextDocument()
        doc.setHtml(self.details.text())
        return doc.toPlainText()

    def _draw_highlight(self) -> None:
        ev = self.selection
        if ev is None or self.result is None:
            self.highlight.setData([], [])
            return
        tr = self.result.trace
        lane = ev.lane(tr)
        px = self.ns_per_pixel() / self.scale  # data units per pixel
        a, b = ev.start(tr) / self.scale, ev.end(tr) / self.scale
        if ev.table == "spans":
            a, b, top, bottom = a - px, max(b, a + px) + px, lane - BAR / 2 - 0.06, lane + BAR / 2 + 0.06
        else:  # a mark: a box around its symbol (on the bar's top edge, or the lane's centre)
            y = lane + self.mark_y[lane]
            a, b, top, bottom = a - 7 * px, a + 7 * px, y - 0.22, y + 0.22
        self.highlight.setData([a, b, b, a, a], [top, top, bottom, bottom, top])

    def show_at(self, select: tuple[str, float] | None = None,
                measure: tuple[float, float] | None = None) -> str | None:
        """What `kvviz-gui --select LANE@TIME --measure T1,T2` shows, in the view as it is: the
        event on that lane at that time selected, the cursor at T1 and the second one at T2
        (times in ns, each snapped to an event edge within SNAP_PX). None, or why it cannot."""
        if self.result is None:
            return "no run to show"
        tr = self.result.trace
        if select is not None:
            lane = lane_named(tr, select[0])
            if isinstance(lane, str):
                return f"--select: {lane}"
            ev = event_on(tr, lane, select[1], SNAP_PX * self.ns_per_pixel())
            if ev is None:
                return f"--select: nothing on {tr.lanes['name'][lane]} at {self.fmt.at(select[1])}"
            self.select(ev)
        if measure is not None:
            self.place_cursor(measure[0])
            self.place_second_cursor(measure[1])
        return None

    # --- cursors and Δt -------------------------------------------------------------------------
    def place_second_cursor(self, t_ns: float, snap: bool = True) -> None:
        """The second cursor at t (ns), snapped to the nearest event edge within SNAP_PX."""
        if snap:
            t_ns = nearest_edge(self.result.trace, t_ns, SNAP_PX * self.ns_per_pixel())
        self.cursor_b.setValue(t_ns / self.scale)
        self.cursor_b.show()
        self.measured()

    def place_cursor(self, t_ns: float, snap: bool = True) -> None:
        if snap:
            t_ns = nearest_edge(self.result.trace, t_ns, SNAP_PX * self.ns_per_pixel())
        self.time_cursor.setValue(t_ns / self.scale)

    def cursor_ns(self) -> float:
        return self.time_cursor.value() * self.scale

    def delta_ns(self) -> float | None:
        """Second cursor minus first, in ns; None without a second cursor."""
        if not self.cursor_b.isVisible():
            return None
        return (self.cursor_b.value() - self.time_cursor.value()) * self.scale

    def _delta_text(self) -> str:
        d = self.delta_ns()
        return "" if d is None else f"Δt = {'+' if d >= 0 else '−'}{self.fmt.exact().dur(abs(d))}"

    def measured(self) -> None:
        if self.cursor_b.isVisible():
            self.cursor_b.label.valueChanged()

    def _snap(self, line) -> None:
        if self.result is None:
            return
        t = nearest_edge(self.result.trace, line.value() * self.scale, SNAP_PX * self.ns_per_pixel())
        line.setValue(t / self.scale)

    def _cursor_moved(self, *_):
        if self.shared_range is not None and not self._building and self.result is not None:
            self.shared_range.cursor_ns = self.cursor_ns()

    def set_relative_origin(self, on: bool) -> None:
        """t = 0 at the cursor's time (fixed where the cursor is now), or absolute times again."""
        self.origin_ns = self.cursor_ns() if on and self.result is not None else None
        self._units()
        if self.selection is not None:
            self.select(self.selection)

    # --- a selected range -----------------------------------------------------------------------
    def _range_dragged(self, x0: float, x1: float, finished: bool) -> None:
        if self.result is not None:
            self._show_range(x0 * self.scale, x1 * self.scale)

    def _show_range(self, t0: float, t1: float) -> None:
        self.range_ns = tuple(sorted((t0, t1)))
        self.region.blockSignals(True)
        self.region.setRegion((self.range_ns[0] / self.scale, self.range_ns[1] / self.scale))
        self.region.blockSignals(False)
        self.region.show()
        self._range_stats()

    def _region_moved(self) -> None:
        if self.result is not None:
            a, b = self.region.getRegion()
            self.range_ns = (a * self.scale, b * self.scale)
            self._range_stats()

    def _range_stats(self) -> None:
        if self.details is not None and self.range_ns is not None:
            t0, t1 = self.range_ns
            self.details.setText(range_html(range_stats(self.result.trace, t0, t1), t0, t1, self.fmt))
            self.show_pane(True)

    def clear_range(self) -> None:
        self.range_ns = None
        self.region.hide()

    def new_scenario(self) -> None:
        """Another file is open: nothing measured, selected, found or hovered in the previous
        one holds (its times, rows and counts mean nothing here); the search text stays, to
        search the new run with Enter."""
        self.close_details()
        self.cursor_b.hide()
        if self.details is not None:
            self._forget_matches()
            self.relative.setChecked(False)  # t = 0 was a time of the previous run
        self.origin_ns = None
        self.info.setText(" ")

    # --- find -------------------------------------------------------------------------------------
    def _forget_matches(self) -> None:
        self.matches, self.match_i = [], -1
        self.match_label.setText("")

    def find(self, query: str) -> int:
        """Search the run; jumps to the first match. Returns the number of matches."""
        self.matches = find(self.result.trace, query) if self.result is not None else []
        self.match_i = -1
        if self.matches:
            self.find_next(+1, research=False)
        elif self.details is not None:
            self.match_label.setText("no match")
        return len(self.matches)

    def find_next(self, step: int, research: bool = True) -> None:
        if research and not self.matches and self.details is not None:
            self.find(self.search.text())
            return
        if not self.matches:
            return
        self.match_i = (self.match_i + step) % len(self.matches)
        self.jump_to(self.matches[self.match_i])
        if self.details is not None:
            self.match_label.setText(f"{self.match_i + 1:,} of {len(self.matches):,}")

    def jump_to(self, ev: Event) -> None:
        """Bring `ev` into view (kept zoom if it fits, else zoomed to it with a margin), select it
        and put the time cursor on its start."""
        tr = self.result.trace
        a, b = ev.start(tr) / self.scale, ev.end(tr) / self.scale
        (lo, hi), _ = self.viewbox.viewRange()
        width, dur = hi - lo, b - a
        if dur > 0 and not 1.25 * dur <= width <= 100 * dur:
            width = 3 * dur  # too small to see or too big to fit: zoom to the span
        elif dur == 0:
            width = min(width, self._end / 20)  # a mark: close enough to tell its neighbours apart
        mid = (a + b) / 2
        self.viewbox.setXRange(mid - width / 2, mid + width / 2, padding=0)
        self.place_cursor(ev.start(tr), snap=False)
        self.select(ev)
