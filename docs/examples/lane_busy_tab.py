"""A toy tab, "Lane busy": each lane's busy time (the union of its spans) and its share of the
run, as a table. Saved as app/tabs/lane_busy.py with the line `LaneBusyTab,` in TABS
(app/tabs/__init__.py), the window shows it, `kvviz-gui --view busy` opens on it, and File →
Export → Data as CSV writes its rows (data_rows)."""
from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import QTableWidget, QTableWidgetItem

from app.tabs.base import Tab


def busy_ns(starts: np.ndarray, ends: np.ndarray) -> int:
    """The length of the union of [start, end) intervals: overlapping spans count once."""
    total, reach = 0, None
    for s, e in sorted(zip(starts.tolist(), ends.tolist())):
        if reach is None or s > reach:
            total += e - s
            reach = e
        elif e > reach:
            total += e - reach
            reach = e
    return total


class LaneBusyTable(QTableWidget):
    def __init__(self):
        super().__init__(0, 3)
        self.setHorizontalHeaderLabels(["lane", "busy (µs)", "share of run"])
        self.rows: list[list] = []

    def set_result(self, result):
        spans, lanes = result.trace.spans, result.trace.lanes
        run = int(spans["end"].max() - spans["start"].min()) if len(spans) else 0
        self.rows = []
        for i, lane in enumerate(lanes):
            mine = spans[spans["lane"] == i]
            busy = busy_ns(mine["start"], mine["end"])
            self.rows.append([str(lane["name"]), busy / 1e3, busy / run if run else 0.0])
        self.setRowCount(len(self.rows))
        for r, (name, us, share) in enumerate(self.rows):
            for c, text in enumerate((name, f"{us:,.3f}", f"{share:.1%}")):
                self.setItem(r, c, QTableWidgetItem(text))

    def data_rows(self):
        return ["lane", "busy_us", "share"], self.rows


class LaneBusyTab(Tab):
    name = "busy"
    label = "Lane busy"

    def make_widget(self):
        return LaneBusyTable()

    def unavailable(self, result):
        return None if len(result.trace.spans) else "This run has no spans"
