"""The run's key figures: scalar metrics with the naive/baseline figure beside the mechanism's
own, then every table-shaped group (per policy, per query, per rung, per layer) as its own
small table, so the baseline of each mechanism is always next to what it is compared with.
Numbers read for people (kvviz.format.metric_text: 100,000,000, bytes as 6.70 TiB with the
exact count); a name too long for its column is cut at its end, and every name and value has
its full metric path as a tooltip (the path Sweep's metric box and `--metric` take)."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHeaderView, QLabel, QScrollArea, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from kvviz.format import metric_text
from kvviz.result import Result

# Metric pairs shown side by side: (baseline prefix, mechanism prefix)
PAIR_PREFIXES = (("naive_", "prefetch_"),)
MAX_CELL_PX = 170  # a value column's widest, in pixels (the dock shows a name and a value)
MAX_NAME_PX = 170  # the metric-name column never takes the values' room
FAILED_CHECK = "#F6D3C4"  # light stall-orange behind a failed [[expect]] check


def _scalar(v) -> bool:
    return not isinstance(v, (dict, list, tuple))


def metric_rows(metrics: dict) -> list[tuple[str, str, str]]:
    """(name, baseline, value) rows: paired metrics share a row, the rest stand alone."""
    rows, used = [], set()
    for base, mine in PAIR_PREFIXES:
        for k in metrics:
            if k.startswith(mine) and base + k[len(mine):] in metrics:
                other = base + k[len(mine):]
                rows.append((k[len(mine):], metric_text(other, metrics[other]), metric_text(k, metrics[k])))
                used |= {k, other}
    rows += [(k, "", metric_text(k, v)) for k, v in metrics.items() if k not in used and _scalar(v)]
    return rows


def row_path(metrics: dict, name: str) -> str:
    """The metric path(s) a scalar row shows: its name, or a pair's two names."""
    if name in metrics:
        return name
    for base, mine in PAIR_PREFIXES:
        if base + name in metrics and mine + name in metrics:
            return f"{base}{name} (baseline) · {mine}{name}"
    return name


def metric_groups(metrics: dict) -> list[tuple[str, list[str], list[tuple[str, list[str]]]]]:
    """Table-shaped metrics as (title, column headers, [(row name, cells)]).
    A dict of dicts (e.g. policies) gets one row per entry and one column per metric, as a list
    of dicts (queries, rungs, layers) does one row per item: every policy shows in a dock of
    any width (one column per policy showed 1½ of 5 at 1280 × 800), its metrics scroll sideways;
    a dict of scalars two columns."""
    groups = []
    for key, v in metrics.items():
        if isinstance(v, dict) and v and all(isinstance(x, dict) for x in v.values()):
            cols = []
            for d in v.values():
                cols += [k for k, x in d.items() if _scalar(x) and k not in cols]
            rows = [(str(name), [metric_text(c, d[c]) if c in d else "" for c in cols]) for name, d in v.items()]
            groups.append((key, cols, rows))
        elif isinstance(v, dict) and v:
            groups.append((key, ["value"], [(k, [metric_text(k, x) if _scalar(x) else "…"]) for k, x in v.items()]))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            cols = []
            for d in v:
                cols += [k for k, x in d.items() if _scalar(x) and k not in cols]
            if all(d.get("index") == i for i, d in enumerate(v)):  # the row's own number, shown twice
                cols.remove("index")
            groups.append((key, cols, [(str(i), [metric_text(c, d[c]) if c in d else "" for c in cols])
                                       for i, d in enumerate(v)]))
    return groups


def _table(headers: list[str], rows: list[tuple[str, list[str]]]) -> QTableWidget:
    t = QTableWidget(len(rows), len(headers))
    t.setHorizontalHeaderLabels(headers)
    t.setVerticalHeaderLabels([name for name, _ in rows])
    t.setEditTriggers(QTableWidget.NoEditTriggers)
    t.setAlternatingRowColors(True)
    for r, (_, cells) in enumerate(rows):
        for c, text in enumerate(cells):
            item = QTableWidgetItem(text)
            item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
            item.setToolTip(text)
            t.setItem(r, c, item)
    t.resizeColumnsToContents()  # widths known before it is shown (MetricsView.wanted_width)
    # a long text (a trace's description) is cut at the end, whole in the tooltip: a column as
    # wide as it pushed the short numbers below it out of the dock, where they looked blank
    for c in range(t.columnCount()):
        t.setColumnWidth(c, min(t.columnWidth(c), MAX_CELL_PX))
    if t.columnCount() == 1:  # name → value: the value takes the dock's width, cut at its end
        t.horizontalHeader().setSectionResizeMode(0, QHeaderView.Stretch)
    # long row names (mean_ttft_later_turns_ms) are cut at the end (their start is what one
    # reads and types into Sweep), whole in the tooltip, so a narrow dock still shows values
    vh = t.verticalHeader()
    vh.setMaximumWidth(MAX_NAME_PX)
    vh.setTextElideMode(Qt.ElideRight)
    # show every row: the dock scrolls, not each little table (sizes known before it is shown)
    t.setVerticalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
    rows_h = t.verticalHeader().defaultSectionSize() * t.rowCount()
    header_h = t.horizontalHeader().sizeHint().height()
    if t.columnCount() == 1:  # its one column fits the dock: no scroll bar, and no blank strip kept for one
        t.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
    scrollbar_h = t.horizontalScrollBar().sizeHint().height() if t.columnCount() > 1 else 0
    t.setFixedHeight(min(header_h + rows_h + scrollbar_h + 6, 600))
    return t


def _path_tips(t: QTableWidget, key: str, headers: list[str], rows) -> None:
    """Each name and cell's metric path as its tooltip: policies.lru.hit_rate, rungs.2.label;
    a column is a family, policies.*.hit_rate."""
    scalars = headers == ["value"]
    if not scalars:
        for c, col in enumerate(headers):
            t.horizontalHeaderItem(c).setToolTip(f"{key}.*.{col}")
    for r, (name, _) in enumerate(rows):
        t.verticalHeaderItem(r).setToolTip(f"{key}.{name}")
        for c, col in enumerate(headers):
            item = t.item(r, c)
            if item is not None:
                item.setToolTip(f"{key}.{name}" if scalars else f"{key}.{name}.{col}")


class MetricsView(QScrollArea):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.scalars = QTableWidget(0, 3)
        self.scalars.setHorizontalHeaderLabels(["metric", "baseline", "value"])
        self.scalars.verticalHeader().setVisible(False)
        self.scalars.setEditTriggers(QTableWidget.NoEditTriggers)
        self.scalars.setAlternatingRowColors(True)
        self.scalars.setWordWrap(True)  # long values (ladders, assumptions) wrap instead of being cut
        self.scalars.setTextElideMode(Qt.ElideRight)  # a name's start is what one reads (and types into Sweep)
        self.scalars.setVerticalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        h = self.scalars.horizontalHeader()
        h.setSectionResizeMode(0, QHeaderView.Interactive)  # capped below: values need room
        h.setSectionResizeMode(1, QHeaderView.Stretch)
        h.setSectionResizeMode(2, QHeaderView.Stretch)
        body = QWidget()
        self.box = QVBoxLayout(body)
        self.box.setContentsMargins(2, 2, 2, 2)
        self.box.addWidget(self.scalars)
        self.box.addStretch(1)
        self.setWidget(body)
        self.groups: list[QWidget] = []
        self.tables: list[QTableWidget] = []

    def set_result(self, result: Result):
        metrics = result.metrics_dict()
        rows = metric_rows(metrics)
        self.scalars.setRowCount(len(rows))
        for r, cells in enumerate(rows):
            for c, text in enumerate(cells):
                self.scalars.setItem(r, c, QTableWidgetItem(text))
        for r, (name, *_rest) in enumerate(rows):
            for c in range(3):
                self.scalars.item(r, c).setToolTip(row_path(metrics, name))
        self.scalars.resizeColumnToContents(0)
        self.scalars.setColumnWidth(0, min(self.scalars.columnWidth(0), MAX_NAME_PX))
        # a kind with no baseline figures gives its width to the values
        self.scalars.setColumnHidden(1, not any(r[1] for r in rows))
        self.scalars.resizeRowsToContents()
        self.scalars.setFixedHeight(self.scalars.horizontalHeader().height() + 4 +
                                    sum(self.scalars.rowHeight(r) for r in range(len(rows))))
        for w in self.groups:
            self.box.removeWidget(w)
            w.deleteLater()
        self.groups = []
        self.tables = []
        for title, headers, grows in metric_groups(metrics):
            label = QLabel(f"<b>{title}</b>")
            label.setStyleSheet("padding:8px 2px 2px 2px; color:#222;")
            table = _table(headers, grows)
            _path_tips(table, title, headers, grows)
            if "ok" in headers:  # a failed check (any row saying ok = no) must not read like a passed one
                col = headers.index("ok")
                for r in range(table.rowCount()):
                    if table.item(r, col).text() == "no":
                        for c in range(table.columnCount()):
                            table.item(r, c).setBackground(QColor(FAILED_CHECK))
            if headers == ["value"]:  # a name and a value, shown whole; rows of items scroll sideways
                self.tables.append(table)
            for w in (label, table):
                self.box.insertWidget(self.box.count() - 1, w)
                self.groups.append(w)

    def wanted_width(self) -> int:
        """Width that shows the widest two-column table (name, value) whole; tables of items
        (policies, queries, rungs) scroll sideways instead, every item a row."""
        widths = [min(t.verticalHeader().sizeHint().width(), MAX_NAME_PX) +
                  sum(t.columnWidth(c) for c in range(t.columnCount())) for t in self.tables]
        return max(widths, default=0) + self.verticalScrollBar().sizeHint().width() + 16
