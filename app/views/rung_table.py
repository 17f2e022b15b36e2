"""The ladder view's rung table: one row per rung, its label and HBM hit rate editable as text,
beside them the figures the ladder model computes from them (and the simulated ones)."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLineEdit,
    QStyledItemDelegate,
    QTableWidget,
    QTableWidgetItem,
)

STEP = 0.5      # a hit rate's step, in points: a drag on the chart, Up/Down in a cell

COLUMNS = ["rung", "label", "HBM hit %", "increment", "mean latency", "speedup vs first",
           "flash share of latency"]
SIM_COLUMNS = ["simulated hit %", "simulated latency", "sim − model"]
LABEL_COL, PCT_COL = 1, 2


def _num(v: float | None, fmt: str = "{:.4g}") -> str:
    return "–" if v is None else fmt.format(v)


def fmt_pts(v: float | None) -> str:
    if v is None:
        return "–"
    s = f"{abs(v):.3g}"
    return f"+{s} pts" if v >= 0 else f"−{s} pts"


def fmt_ns(v: float | None) -> str:
    return "–" if v is None else f"{v:,.1f} ns"


class _PctEdit(QLineEdit):
    """A hit-rate cell's editor: any text goes to the table, which refuses what is not 0–100
    with a message (a spin box limited to 100 dropped the last key: 150 became 15, silently).
    Up and Down step by STEP points."""

    def keyPressEvent(self, ev):  # noqa: N802 (Qt's name)
        step = {Qt.Key_Up: STEP, Qt.Key_Down: -STEP}.get(ev.key())
        try:
            value = float(self.text().strip().rstrip("%")) if step else None
        except ValueError:
            value = None
        if value is None:
            super().keyPressEvent(ev)
            return
        self.setText(f"{min(100.0, max(0.0, value + step)):g}")


class _PctDelegate(QStyledItemDelegate):
    """Hit-rate cells are edited as text (see _PctEdit)."""

    def createEditor(self, parent, option, index):
        box = _PctEdit(parent)
        box.setAlignment(Qt.AlignRight | Qt.AlignVCenter)
        return box

    def setEditorData(self, editor, index):
        editor.setText(str(index.data() or ""))
        editor.selectAll()

    def setModelData(self, editor, model, index):
        model.setData(index, editor.text().strip())


class RungTable(QTableWidget):
    """The rung table: numeric columns fit their contents; the label column takes the width
    left over, but never less than LABEL_MIN px (the table scrolls sideways instead)."""

    LABEL_MIN = 170

    def __init__(self):
        super().__init__(0, len(COLUMNS))
        self.verticalHeader().setVisible(False)
        self.setAlternatingRowColors(True)
        self.setItemDelegateForColumn(PCT_COL, _PctDelegate(self))
        self.setEditTriggers(QAbstractItemView.DoubleClicked | QAbstractItemView.EditKeyPressed
                             | QAbstractItemView.AnyKeyPressed | QAbstractItemView.SelectedClicked)

    def fit_label_column(self) -> None:
        h = self.horizontalHeader()
        others = sum(h.sectionSize(c) for c in range(self.columnCount()) if c != LABEL_COL)
        room = self.viewport().width() - others
        want = max(self.sizeHintForColumn(LABEL_COL), h.sectionSizeFromContents(LABEL_COL).width()) + 16
        self.setColumnWidth(LABEL_COL, max(self.LABEL_MIN, room, min(want, self.LABEL_MIN)))

    def resizeEvent(self, ev):
        super().resizeEvent(ev)
        self.fit_label_column()

    def build(self, rows: int, simulated: bool) -> None:
        """Empty cells for `rows` rungs, with the simulated columns when `simulated`."""
        cols = COLUMNS + (SIM_COLUMNS if simulated else [])
        self.clear()
        self.setColumnCount(len(cols))
        self.setHorizontalHeaderLabels(cols)
        self.setRowCount(rows)
        for r in range(rows):
            for c in range(len(cols)):
                item = QTableWidgetItem("")
                if c not in (LABEL_COL, PCT_COL):
                    item.setFlags(item.flags() & ~Qt.ItemIsEditable)
                    item.setForeground(QColor("#333333"))
                if c != LABEL_COL:
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                self.setItem(r, c, item)
        h = self.horizontalHeader()
        for c in range(len(cols)):
            h.setSectionResizeMode(c, QHeaderView.ResizeToContents)
        h.setSectionResizeMode(LABEL_COL, QHeaderView.Interactive)
        self.setToolTip("Double-click a label or a hit rate to edit it")
        # show every rung (up to 6 without scrolling): the table must not be squeezed away
        rows = min(rows, 6)
        self.setMinimumHeight(h.sizeHint().height() + rows * self.verticalHeader()
                              .defaultSectionSize() + 2 * self.frameWidth() + 2)

    def fill(self, labels: list[str], pcts: list, figures: list[dict], simulated: list | None) -> None:
        """Each rung's texts: its label and hit rate, the figures computed from them, and the
        simulated ones; a cell is rewritten only when its text changes."""
        for r, f in enumerate(figures):
            p = pcts[r]
            share = f["flash_share_of_latency"]
            cells = [str(r + 1), labels[r], "" if p is None else f"{p:g}",
                     fmt_pts(f["increment_pts"]), fmt_ns(f["mean_latency_ns"]),
                     _num(f["speedup_vs_first"], "{:.2f}×"),
                     "–" if share is None else f"{100 * share:.1f}%"]
            if simulated is not None:
                s = simulated[r]
                cells += ["–", "–", "–"] if s is None else [
                    f"{s['hbm_hit_pct']:.4g}", fmt_ns(s["mean_latency_ns"]),
                    fmt_pts(s["hbm_hit_pct"] - p) if p is not None else "–"]
            for c, text in enumerate(cells):
                item = self.item(r, c)
                if item is not None and item.text() != text:
                    item.setText(text)
