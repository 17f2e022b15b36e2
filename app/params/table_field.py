"""The editor of a list of sub-models (ladder `rungs`): a table with one row per item, one column
per sub-field, and buttons to add and remove rows."""
from __future__ import annotations

import copy

from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtGui import QBrush, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from .fields import _Field
from .values import (
    _MISSING,
    _UNSET,
    ERROR_FILL,
    MAX_TABLE_ROWS_SHOWN,
    _ParseError,
    _same,
    _tooltip,
    display_text,
    field_spec,
    parse_text,
    path_str,
)


class _TableField(_Field):
    """list[SubModel]: one row per item, one column per sub-field, + and − buttons."""

    def __init__(self, spec, path, default, chain, on_commit, on_error):
        model = spec.item
        self.columns = [(n, field_spec(n, i)) for n, i in model.model_fields.items()]
        self.rows_src: list[dict] = []
        self.cell_errors: dict[tuple[int, int], str] = {}
        super().__init__(spec, path, default, chain, on_commit, on_error)

    def _make(self) -> QWidget:
        t = QTableWidget(0, len(self.columns))
        t.setHorizontalHeaderLabels([f"{n} ({s.unit})" if s.unit else n for n, s in self.columns])
        for c, (n, s) in enumerate(self.columns):
            t.horizontalHeaderItem(c).setToolTip(_tooltip(s, self.path + (0, n)).replace("[0]", "[i]"))
        t.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        t.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        t.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        t.setWordWrap(False)
        t.setTextElideMode(Qt.TextElideMode.ElideRight)
        t.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        t.setMinimumWidth(120)
        fm = t.fontMetrics()
        t.verticalHeader().setDefaultSectionSize(fm.height() + 8)
        t.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        hh = t.horizontalHeader()
        narrow = lambda s: s.numeric or s.kind in ("bool", "choice")
        stretch = [c for c, (_, s) in enumerate(self.columns) if not narrow(s)] or [len(self.columns) - 1]
        for c in range(len(self.columns)):
            hh.setSectionResizeMode(c, QHeaderView.ResizeMode.Stretch if c in stretch
                                    else QHeaderView.ResizeMode.ResizeToContents)
        t.itemChanged.connect(lambda _item: self._reparse())
        self.table = t
        return t

    def _outer(self) -> QWidget:
        wrap = QWidget()
        lay = QVBoxLayout(wrap)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addWidget(self.table)
        buttons = QHBoxLayout()
        buttons.setContentsMargins(0, 0, 0, 0)
        buttons.addStretch(1)
        self.add_button = QToolButton(text="+ row")
        self.add_button.setToolTip("Add a row: a copy of the selected row (or the last)")
        self.add_button.clicked.connect(self.add_row)
        self.remove_button = QToolButton(text="− row")
        self.remove_button.setToolTip("Remove the selected rows (or the last)")
        self.remove_button.clicked.connect(self.remove_rows)
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.remove_button)
        lay.addLayout(buttons)
        return wrap

    def _fit_height(self):
        t = self.table
        rows = min(max(t.rowCount(), 1), MAX_TABLE_ROWS_SHOWN)
        h = t.horizontalHeader().sizeHint().height() + rows * t.verticalHeader().defaultSectionSize()
        h += 2 * t.frameWidth() + 2
        if t.horizontalScrollBar().isVisible():
            h += t.horizontalScrollBar().sizeHint().height()
        t.setFixedHeight(h)
        self.remove_button.setEnabled(t.rowCount() > 0)

    def _set_row(self, r: int, texts: list[str], src: dict):
        for c, (n, s) in enumerate(self.columns):
            item = QTableWidgetItem(texts[c])
            item.setToolTip(self._cell_tip(r, c, texts[c]))
            if s.numeric:
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if n not in src:
                item.setForeground(QBrush(self.table.palette().color(QPalette.ColorRole.PlaceholderText)))
            self.table.setItem(r, c, item)

    def _cell_tip(self, r: int, c: int, text: str) -> str:
        n, s = self.columns[c]
        return (f"{text}\n\n" if text else "") + _tooltip(s, self.path + (r, n))

    def _label_rows(self):
        self.table.setVerticalHeaderLabels([str(i) for i in range(self.table.rowCount())])  # as in error paths

    def show(self, value):
        rows = self.default if value is _MISSING else value
        rows = rows if isinstance(rows, list) else []
        self.rows_src = [copy.deepcopy(r) if isinstance(r, dict) else {} for r in rows]
        with QSignalBlocker(self.table):
            self.table.setRowCount(len(self.rows_src))
            for r, src in enumerate(self.rows_src):
                self._set_row(r, [display_text(s, src.get(n, s.default)) for n, s in self.columns], src)
            self._label_rows()
        self.cell_errors.clear()
        self._fit_height()

    def add_row(self):
        t = self.table
        sel = sorted({i.row() for i in t.selectedIndexes()})
        src_row = sel[-1] if sel else t.rowCount() - 1
        if src_row >= 0:
            texts = [t.item(src_row, c).text() if t.item(src_row, c) else "" for c in range(len(self.columns))]
            src = copy.deepcopy(self.rows_src[src_row])
        else:
            texts = [display_text(s, s.default) for _, s in self.columns]
            src = {}
        at = src_row + 1
        with QSignalBlocker(t):
            t.insertRow(at)
            self._set_row(at, texts, src)
            self._label_rows()
        self.rows_src.insert(at, src)
        self._fit_height()
        self._reparse()

    def remove_rows(self):
        t = self.table
        rows = sorted({i.row() for i in t.selectedIndexes()}) or ([t.rowCount() - 1] if t.rowCount() else [])
        with QSignalBlocker(t):
            for r in reversed(rows):
                t.removeRow(r)
                del self.rows_src[r]
            self._label_rows()
        self._fit_height()
        self._reparse()

    def _reparse(self):
        """The table is the source of truth for its field: rebuild the rows from the cells."""
        rows, errors = [], {}
        for r in range(self.table.rowCount()):
            src = self.rows_src[r] if r < len(self.rows_src) else {}
            row = copy.deepcopy(src)
            for c, (n, s) in enumerate(self.columns):
                item = self.table.item(r, c)
                text = item.text() if item else ""
                try:
                    v = parse_text(s, text)
                except _ParseError as e:
                    errors[path_str(self.path + (r, n))] = str(e)
                    continue
                if v is _UNSET:
                    row.pop(n, None)
                elif n in src or not _same(v, s.default):
                    row[n] = v
            rows.append(row)
        if errors:
            self.on_error(self, errors)
        else:
            self.on_commit(self, rows)

    def mark(self, rest: tuple, message: str):
        super().mark(rest, message)
        if rest and isinstance(rest[0], int) and rest[0] < self.table.rowCount():
            names = [n for n, _ in self.columns]
            c = names.index(rest[1]) if len(rest) > 1 and rest[1] in names else None
            for col in ([c] if c is not None else range(len(names))):
                item = self.table.item(rest[0], col)
                if item is not None:
                    with QSignalBlocker(self.table):
                        item.setBackground(QBrush(ERROR_FILL))
                        item.setToolTip(f"⚠ {message}")
                    self.cell_errors[(rest[0], col)] = message

    def clear_mark(self):
        super().clear_mark()
        if self.cell_errors:
            with QSignalBlocker(self.table):
                for (r, c) in self.cell_errors:
                    item = self.table.item(r, c)
                    if item is not None:
                        item.setBackground(QBrush())
                        item.setToolTip(self._cell_tip(r, c, item.text()))
            self.cell_errors.clear()

    def set_default_look(self, is_default: bool):
        pass
