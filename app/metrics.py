"""The run's key figures as a table; naive/baseline figures sit beside the mechanism's own."""
from __future__ import annotations

from PySide6.QtWidgets import QHeaderView, QTableWidget, QTableWidgetItem

from kvviz.format import format_value
from kvviz.result import Result

# Metric pairs shown side by side: (row label, baseline key, mechanism key)
PAIR_PREFIXES = (("naive_", "prefetch_"),)


def metric_rows(metrics: dict) -> list[tuple[str, str, str]]:
    """(name, baseline, value) rows: paired metrics share a row, the rest stand alone.
    Lists and tables (per-query detail) are left to the views that can show them."""
    rows, used = [], set()
    for base, mine in PAIR_PREFIXES:
        for k in metrics:
            if k.startswith(mine) and base + k[len(mine):] in metrics:
                other = base + k[len(mine):]
                rows.append((k[len(mine):], format_value(metrics[other]), format_value(metrics[k])))
                used |= {k, other}
    for k, v in metrics.items():
        if k not in used and not isinstance(v, (dict, list, tuple)) and not hasattr(v, "items"):
            rows.append((k, "", format_value(v)))
    return rows


class MetricsView(QTableWidget):
    def __init__(self, parent=None):
        super().__init__(0, 3, parent)
        self.setHorizontalHeaderLabels(["metric", "baseline", "this design"])
        self.verticalHeader().setVisible(False)
        self.setEditTriggers(QTableWidget.NoEditTriggers)
        self.setAlternatingRowColors(True)
        h = self.horizontalHeader()
        h.setSectionResizeMode(0, QHeaderView.ResizeToContents)
        h.setSectionResizeMode(1, QHeaderView.ResizeToContents)
        h.setSectionResizeMode(2, QHeaderView.Stretch)
        self.setWordWrap(True)  # long values (ladders, assumptions) wrap instead of being cut

    def set_result(self, result: Result):
        rows = metric_rows(result.metrics_dict())
        self.setRowCount(len(rows))
        for r, cells in enumerate(rows):
            for c, text in enumerate(cells):
                self.setItem(r, c, QTableWidgetItem(text))
        self.resizeRowsToContents()
