"""A/B compare: a pinned result (A) above the current one (B) on a shared time axis, and the
difference of every scalar metric. Each timeline is the Timeline tab's instrument (click for
details, Shift-click for Δt, Shift-drag for a range's statistics) without its find row; the two
details panes open and close together, at one width, so A's and B's times stay one above the
other."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHeaderView, QLabel, QSplitter, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from kvviz.format import format_value, printable
from kvviz.mechanisms import mechanisms
from kvviz.metric_paths import metric_paths
from kvviz.result import Result

from ._common import stack_vertically
from .timeline import TimelineView


def _flat(tree, prefix: str = "") -> dict:
    """A scenario's fields by dotted path (lists stay whole values)."""
    out = {}
    for k, v in tree.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def parameter_diff(a, b) -> list[tuple[str, str, str]]:
    """(field path, A's value, B's value) for every scenario field that differs between two
    runs' scenarios (pydantic models), in the scenario's order; the name and description are
    not parameters."""
    fa, fb = _flat(a.model_dump(mode="json")), _flat(b.model_dump(mode="json"))
    keys = list(fa) + [k for k in fb if k not in fa]
    return [(k, _short(fa.get(k)), _short(fb.get(k))) for k in keys
            if fa.get(k) != fb.get(k) and k not in ("name", "description")]


def _short(v) -> str:
    text = format_value(v) if not isinstance(v, (list, dict)) else str(v)
    return text if len(text) <= 40 else text[:39] + "…"


def change_text(va: float, vb: float) -> str:
    """B relative to A: a percentage from a positive base; from a zero or negative base a
    percentage means nothing (slack −40.05 → 23.95 is not "+159.8%"), so the absolute
    difference, signed."""
    if va > 0:
        return f"{100 * (vb - va) / va:+.1f}%"
    if vb == va:
        return ""
    return f"{vb - va:+,.2f}"


def metric_diff(a: dict, b: dict) -> list[tuple[str, str, str, str, str]]:
    """(metric, A, B, B−A, change %) for every scalar metric, nested ones by path, present in
    either run: top-level figures first, then the tables (per policy, per rung, …)."""
    a, b = metric_paths(a), metric_paths(b)
    keys = list(a) + [k for k in b if k not in a]
    keys.sort(key=lambda k: "." in k)  # stable: keeps each run's order within a group
    rows = []
    for k in keys:
        va, vb = a.get(k), b.get(k)
        delta = pct = ""
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (va, vb))
        if numeric:
            delta = format_value(vb - va)
            pct = change_text(va, vb)
        rows.append((k, format_value(va), format_value(vb), delta, pct))
    return rows


class CompareView(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.a_label, self.b_label = QLabel(), QLabel()
        for lab in (self.a_label, self.b_label):
            lab.setStyleSheet("font-weight:bold; padding:4px 6px; color:#222;")
        # what differs between A and B, above the plots (the titles name it too)
        self.diff_label = QLabel()
        self.diff_label.setWordWrap(True)
        self.diff_label.setStyleSheet("background:#eef4fb; color:#102a43; padding:4px 8px;")
        self.a, self.b = TimelineView(instrument=True, search=False), TimelineView(instrument=True, search=False)
        self.b.plot.setXLink(self.a.plot)  # one time axis for both (in pixels: so their plots keep one width)
        for one, other in ((self.a, self.b), (self.b, self.a)):
            one.pane_toggled.connect(lambda on, other=other: other.show_pane(True) if on else other.close_details())
            one.details_split.splitterMoved.connect(
                lambda *_, one=one, other=other: other.details_split.setSizes(one.details_split.sizes()))
        self.table = QTableWidget(0, 5)
        self.table.setHorizontalHeaderLabels(["metric", "A (pinned)", "B (current)", "B − A", "change (% or abs.)"])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.Interactive)  # capped in _refresh
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setTextElideMode(Qt.ElideMiddle)
        self.hint = QLabel("Pin a result as A (toolbar: “Pin as A”), change parameters, and B follows "
                           "the current run.")
        self.hint.setAlignment(Qt.AlignCenter)
        self.hint.setWordWrap(True)  # must not set the window's minimum width
        self.hint.setStyleSheet("color:#666; padding:20px;")

        top = stack_vertically(self.a_label, self.a, stretch=self.a)
        bottom = stack_vertically(self.b_label, self.b, stretch=self.b)
        split = QSplitter(Qt.Vertical)
        split.addWidget(top)
        split.addWidget(bottom)
        split.addWidget(self.table)
        split.setSizes([300, 300, 200])
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.hint)
        lay.addWidget(self.diff_label)
        lay.addWidget(split, 1)
        self.split = split
        self.pinned: Result | None = None
        self.current: Result | None = None
        self.diff: list[tuple[str, str, str]] = []
        self._opened_on = None  # the pinned run the view last opened on its region of interest
        self._refresh()

    def pin(self, result: Result):
        self.pinned = result
        self._refresh()

    def unpin(self):
        self.pinned = None
        self._refresh()

    def set_result(self, result: Result):
        self.current = result
        self._refresh()

    def _refresh(self):
        ready = self.pinned is not None and self.current is not None
        self.hint.setVisible(not ready)
        self.split.setVisible(ready)
        self.diff_label.setVisible(ready)
        if not ready:
            return
        span = max(self.pinned.trace.t_end, self.current.trace.t_end)
        self.a.set_result(self.pinned, span)
        self.b.set_result(self.current, span)
        # one lane-name column for both, so A's and B's time axes start at the same x
        # (from the names: the axes' geometry is stale while the tab is hidden, and a width of
        # 35 px read from it left both without their lane names)
        width = max(self.a.lane_axis.wanted, self.b.lane_axis.wanted)
        for view in (self.a, self.b):
            view.lane_axis.set_names(view.lane_axis.names, width)
        self.diff = parameter_diff(self.pinned.scenario, self.current.scenario)
        shown = self.diff[:4]
        more = f" and {len(self.diff) - 4} more" if len(self.diff) > 4 else ""
        if self.diff:
            self.diff_label.setText("<b>B differs from A in</b> " + "; ".join(
                f"{k}: {va} → <b>{vb}</b>" for k, va, vb in self.diff) + ".")
        else:
            self.diff_label.setText("A and B have the same parameters.")
        self.a_label.setText(f"A (pinned): {printable(self.pinned.scenario.name)}"
                             + (" · " + ", ".join(f"{k} = {va}" for k, va, _ in shown) + more if shown else ""))
        self.b_label.setText(f"B (current): {printable(self.current.scenario.name)}"
                             + (" · " + ", ".join(f"{k} = {vb}" for k, _, vb in shown) + more if shown else ""))
        self._open_on_region()
        rows = metric_diff(self.pinned.metrics_dict(), self.current.metrics_dict())
        self.table.setRowCount(len(rows))
        for r, cells in enumerate(rows):
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if c >= 1:
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                if c == 3 and text not in ("", "0", "0.0"):
                    item.setForeground(Qt.darkBlue)
                item.setToolTip(text)
                self.table.setItem(r, c, item)
        # a long text value (an assumption) or path must not push B − A and the change off screen
        # names get up to 45% of the table: at 200 px two names differing in the middle
        # ("policies.recompute.mean_queue_wait_ms", "….p99_…") elided to the same text
        name_cap = max(200, int(self.table.viewport().width() * 0.45))
        for c, cap in enumerate((name_cap, 120, 120, 100)):
            self.table.setColumnWidth(c, min(self.table.sizeHintForColumn(c) + 12, cap))

    def _open_on_region(self):
        """A newly pinned comparison opens where the mechanism's point is (its initial range,
        e.g. Engram's first decode step), not on the whole run where A and B look the same;
        later re-runs of B keep the user's zoom."""
        if self._opened_on is self.pinned:
            return
        self._opened_on = self.pinned
        record = mechanisms().get(self.pinned.scenario.kind)
        rng = record.initial_range(self.pinned) if record is not None and record.initial_range else None
        if rng is not None:
            lo, hi = rng
            self.a.plot.getPlotItem().getViewBox().setXRange(lo / self.a.scale, hi / self.a.scale, padding=0)

    def data_rows(self):
        """The metric diff table (File → Export → Data as CSV)."""
        if self.pinned is None or self.current is None:
            return None
        return (["metric", "A", "B", "B - A", "change"],
                [list(r) for r in metric_diff(self.pinned.metrics_dict(), self.current.metrics_dict())])
