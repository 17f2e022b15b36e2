"""A/B compare: a pinned result (A) above the current one (B) on a shared time axis, and the
difference of every scalar metric."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHeaderView, QLabel, QSplitter, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from kvviz.format import format_value
from kvviz.metric_paths import metric_paths
from kvviz.result import Result

from ._common import stack_vertically
from .timeline import TimelineView


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
            pct = f"{100 * (vb - va) / abs(va):+.1f}%" if va else ""
        rows.append((k, format_value(va), format_value(vb), delta, pct))
    return rows


class CompareView(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.a_label, self.b_label = QLabel(), QLabel()
        for lab in (self.a_label, self.b_label):
            lab.setStyleSheet("font-weight:bold; padding:4px 6px; color:#222;")
        self.a, self.b = TimelineView(), TimelineView()
        self.b.plot.setXLink(self.a.plot)  # one time axis for both
        self.table = QTableWidget(0, 5)
        self.table.setHorizontalHeaderLabels(["metric", "A (pinned)", "B (current)", "B − A", "change"])
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
        lay.addWidget(split, 1)
        self.split = split
        self.pinned: Result | None = None
        self.current: Result | None = None
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
        self.a_label.setText(f"A (pinned): {self.pinned.scenario.name}")
        self.b_label.setText(f"B (current): {self.current.scenario.name}")
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
