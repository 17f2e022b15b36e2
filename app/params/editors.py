"""The editors: spin boxes, combo boxes, line edits, tables and collapsible groups."""
from __future__ import annotations

import copy
import math
import re
import sys
from typing import Callable

from PySide6.QtCore import QSignalBlocker, QSize, Qt
from PySide6.QtGui import QBrush, QPainter, QPalette, QPen, QValidator
from PySide6.QtWidgets import (
    QAbstractItemView,
    QAbstractSpinBox,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)
from superqt import QCollapsible

from .values import (
    _BIG,
    _MISSING,
    _UNSET,
    DEFAULT_TEXT,
    ERROR_COLOR,
    ERROR_FILL,
    INDENT,
    MAX_TABLE_ROWS_SHOWN,
    FieldSpec,
    _norm_float,
    _parse_number,
    _ParseError,
    _same,
    _tooltip,
    display_text,
    field_spec,
    fmt_number,
    parse_text,
    path_str,
)

# --- editors ---------------------------------------------------------------------------

class NumberSpinBox(QDoubleSpinBox):
    """A spin box for int and float fields.

    Integers are exact (to 2**53, where a double stops holding every integer); floats show
    their shortest exact text (56.25, 0.72) and are never rounded to a fixed number of decimals.
    The arrows step adaptively (one decimal order below the value) inside the field's
    constraint range; typed values outside it are accepted and left to validation, which marks
    the field with the model's message instead of the box silently clamping them.
    """

    # class-level defaults: Qt may call the overrides below while the box is being constructed
    _int = False
    _lo, _hi, _lo_open, _hi_open = -_BIG, _BIG, False, False

    def __init__(self, spec: FieldSpec, parent=None):
        super().__init__(parent)
        self._int = spec.kind == "int"
        self.setDecimals(0 if self._int else 15)
        # Any finite number typed stays as typed, for validation to name: with the range at
        # ±2**53, Qt turned a typed 1e30 into 9007199254740992 and the message named that.
        self.setRange(-sys.float_info.max, sys.float_info.max)
        self.setKeyboardTracking(True)
        self.setAccelerated(True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        if spec.unit:
            self.setSuffix(f" {spec.unit}")
        step = 1 if self._int else 0
        lo = spec.ge if spec.ge is not None else (spec.gt + step if spec.gt is not None else None)
        hi = spec.le if spec.le is not None else (spec.lt - step if spec.lt is not None else None)
        self._lo = max(float(lo), -_BIG) if lo is not None else -_BIG
        self._hi = min(float(hi), _BIG) if hi is not None else _BIG
        self._lo_open = spec.gt is not None and spec.ge is None and not self._int
        self._hi_open = spec.lt is not None and spec.le is None and not self._int

    # the constraint range (the box itself accepts any number so validation can judge it)
    def bounds(self) -> tuple[float, float]:
        return self._lo, self._hi

    def number(self):
        """The value as the data holds it: an int for int fields and integral floats; beyond
        2**53, where a double holds no exact integer, the float typed (1e30), for the message."""
        v = self.value()
        return int(round(v)) if self._int and abs(v) <= _BIG else _norm_float(v)

    def _parse(self, core: str):
        """A typed number; an int field takes an exponent too when the value is whole (1e3 is
        1000: Qt refused the 'e' key, so a typed 1e30 became 130)."""
        try:
            return _parse_number(core, self._int)
        except _ParseError:
            if not (self._int and re.search(r"[eE]", core)):
                raise
            v = _parse_number(core, False)
            if not float(v).is_integer():
                raise
            return v

    def _core(self, text: str) -> str:
        t = text
        if self.suffix() and t.endswith(self.suffix()):
            t = t[: -len(self.suffix())]
        elif self.suffix() and t.endswith(self.suffix().strip()):
            t = t[: -len(self.suffix().strip())]
        return t.strip().replace("_", "")

    def textFromValue(self, v: float) -> str:
        return str(int(round(v))) if self._int and abs(v) <= _BIG else fmt_number(float(v))

    def valueFromText(self, text: str) -> float:
        try:
            return float(self._parse(self._core(text)))
        except _ParseError:
            return self.value()

    def validate(self, text: str, pos: int):
        core = self._core(text)
        if core in ("", "-", "+", ".", "-.", "+."):
            return QValidator.State.Intermediate
        try:
            self._parse(core)
            return QValidator.State.Acceptable
        except _ParseError:
            if re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?", core):
                return QValidator.State.Intermediate  # on the way to 1e30
            return QValidator.State.Invalid

    def fixup(self, text: str) -> str:
        return self.textFromValue(self.value())

    def _step(self, v: float) -> float:
        mag = abs(v)
        if self._int:
            return 1 if mag < 100 else 10 ** (math.floor(math.log10(mag)) - 1)
        if mag == 0:
            return 0.01 if self._hi <= 1 else (0.1 if self._hi <= 10 else 1.0)
        return 10.0 ** (math.floor(math.log10(mag)) - 1)

    def stepBy(self, steps: int):
        v = self.value()
        nv = v + steps * self._step(v if steps > 0 or v == 0 else v * (1 - 1e-12))
        nv = float(round(nv)) if self._int else float(f"{nv:.12g}")
        if nv > self._hi or (self._hi_open and nv >= self._hi):
            nv = v if self._hi_open else self._hi
        if nv < self._lo or (self._lo_open and nv <= self._lo):
            nv = v if self._lo_open else self._lo
        if nv != v:
            self.setValue(nv)
        self.selectAll()

    def stepEnabled(self):
        v, flags = self.value(), QAbstractSpinBox.StepEnabledFlag.StepNone
        if v < self._hi:
            flags |= QAbstractSpinBox.StepEnabledFlag.StepUpEnabled
        if v > self._lo:
            flags |= QAbstractSpinBox.StepEnabledFlag.StepDownEnabled
        return flags

    def wheelEvent(self, event):
        if self.hasFocus():  # a wheel over the panel scrolls it, not the field under the mouse
            super().wheelEvent(event)
        else:
            event.ignore()

    def _fit(self, base: QSize) -> QSize:
        # Qt sizes the box for its internal range (any double); size it for the constraint range
        fm = self.fontMetrics()
        wide = max((self.textFromValue(self.minimum()), self.textFromValue(self.maximum())), key=len)[:18]
        want = [self.textFromValue(x) for x in (self._lo, self._hi, self.value()) if abs(x) < _BIG]
        want = max(want + ["00000"], key=len)[:12]
        delta = fm.horizontalAdvance(wide) - fm.horizontalAdvance(want)
        return QSize(max(base.width() - delta, 40), base.height())

    def sizeHint(self) -> QSize:
        return self._fit(super().sizeHint())

    def minimumSizeHint(self) -> QSize:
        return self._fit(super().minimumSizeHint())


class _ComboBox(QComboBox):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)

    def wheelEvent(self, event):
        if self.hasFocus():
            super().wheelEvent(event)
        else:
            event.ignore()


class _FieldBox(QFrame):
    """An editor with room for a red frame and the validation message under it."""

    def __init__(self, inner: QWidget, parent=None):
        super().__init__(parent)
        self._error = ""
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.setSpacing(2)
        lay.addWidget(inner)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        pal = self.message.palette()
        pal.setColor(QPalette.ColorRole.WindowText, ERROR_COLOR)
        self.message.setPalette(pal)
        f = self.message.font()
        f.setPointSizeF(max(f.pointSizeF() - 1, 7))
        self.message.setFont(f)
        self.message.hide()
        lay.addWidget(self.message)

    def error(self) -> str:
        return self._error

    def set_error(self, text: str):
        if text == self._error:
            return
        self._error = text
        self.message.setText(text)
        self.message.setVisible(bool(text))
        self.update()

    def paintEvent(self, event):
        super().paintEvent(event)
        if self._error:
            p = QPainter(self)
            p.setRenderHint(QPainter.RenderHint.Antialiasing)
            p.setPen(QPen(ERROR_COLOR, 1.5))
            p.drawRoundedRect(self.rect().adjusted(1, 1, -1, -1), 3, 3)
            p.end()


class _Group:
    """A nested section: a superqt QCollapsible titled by the field name, expanded."""

    def __init__(self, title: str, path: tuple, tip: str, chain: list):
        self.path, self.chain = path, chain
        self.coll = QCollapsible(title, expandedIcon="▼", collapsedIcon="▶")
        self.coll.setDuration(120)
        self.coll.layout().setContentsMargins(0, 2, 0, 2)
        self.coll.layout().setSpacing(0)
        self.coll.content().layout().setContentsMargins(INDENT, 0, 0, 0)
        btn = self.coll.toggleButton()
        # a section header takes keyboard focus (Space folds it): it must show that it has it
        btn.setStyleSheet("QPushButton { text-align: left; border: none; outline: none; font-weight: 600; "
                          "padding: 3px 0px; } QPushButton:focus { color: #0b57d0; text-decoration: underline; }")
        btn.setToolTip(tip)
        self.body = QWidget()
        lay = QVBoxLayout(self.body)
        lay.setContentsMargins(0, 0, 0, 4)
        lay.setSpacing(2)
        self.message = QLabel()
        self.message.setWordWrap(True)
        pal = self.message.palette()
        pal.setColor(QPalette.ColorRole.WindowText, ERROR_COLOR)
        self.message.setPalette(pal)
        self.message.hide()
        lay.addWidget(self.message)
        self.form = _form()
        lay.addLayout(self.form)
        self.coll.addWidget(self.body)
        self.coll.expand(animate=False)
        self._error = ""

    def set_error(self, text: str):
        if text != self._error:
            self._error = text
            self.message.setText(text)
            self.message.setVisible(bool(text))


def _form() -> QFormLayout:
    form = QFormLayout()
    form.setContentsMargins(0, 0, 0, 0)
    form.setHorizontalSpacing(8)
    form.setVerticalSpacing(1)
    # Never wrap a row (label above field): QCollapsible caps a group at its content's size
    # hint, which is the unwrapped height, so in a narrow dock the wrapped rows were squashed
    # to half height. Unwrapped, a narrow field shrinks instead.
    form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.DontWrapRows)
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
    return form


class _Field:
    """One editor bound to one data path. It reports through two callbacks: `on_commit(field,
    value)` for a value that parses, `on_error(field, {path: message})` for text that does not."""

    def __init__(self, spec: FieldSpec, path: tuple, default, chain: list,
                 on_commit: Callable[["_Field", object], None], on_error: Callable[["_Field", dict], None]):
        self.spec, self.path, self.default, self.chain = spec, path, default, chain
        self.on_commit, self.on_error = on_commit, on_error
        self.dotted = path_str(path)
        self.tip = _tooltip(spec, path)
        self.editor = self._make()
        self.editor.setToolTip(self.tip)
        self.box = _FieldBox(self._outer())

    def _outer(self) -> QWidget:
        return self.editor

    def _make(self) -> QWidget:
        k = self.spec.kind
        if k in ("int", "float"):
            w = NumberSpinBox(self.spec)
            w.valueChanged.connect(lambda _v: self._commit(w.number()))
        elif k == "bool":
            w = QCheckBox()
            w.toggled.connect(self._commit)
        elif k == "choice":
            w = _ComboBox()
            for c in self.spec.choices:
                w.addItem(str(c), c)
            w.currentIndexChanged.connect(lambda i: self._commit(w.itemData(i)))
        else:
            w = QLineEdit()
            w.textEdited.connect(self._text_edited)
            if self.spec.kind == "numlist":
                w.setPlaceholderText("not set" if self.spec.optional else "empty list")
            elif self.spec.kind == "toml" and (self.spec.optional or self.spec.default is None):
                w.setPlaceholderText("not set")
        return w

    def _commit(self, value):
        self.on_commit(self, value)

    def _text_edited(self, text: str):
        try:
            value = parse_text(self.spec, text)
        except _ParseError as e:
            self.on_error(self, {self.dotted: str(e)})
            return
        self.on_commit(self, value)

    def show(self, value):
        """Display `value` (or the default when absent) without counting it as an edit."""
        v = self.default if value is _MISSING else value
        w = self.editor
        with QSignalBlocker(w):
            if isinstance(w, NumberSpinBox):
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    w.setValue(float(v))
            elif isinstance(w, QCheckBox):
                w.setChecked(bool(v) if isinstance(v, bool) else False)
            elif isinstance(w, QComboBox):
                while w.count() > len(self.spec.choices):  # an earlier disallowed value
                    w.removeItem(w.count() - 1)
                i = w.findData(v) if v is not _MISSING else -1
                if i < 0 and v is not _MISSING and v is not None:
                    w.addItem(f"{v} (not allowed)", v)
                    i = w.count() - 1
                w.setCurrentIndex(i)
            else:
                w.setText(display_text(self.spec, v))
                w.setCursorPosition(0)
        # an absent field shows its default in grey, so a reader tells file values from defaults
        self.set_default_look(value is _MISSING)

    def set_default_look(self, is_default: bool):
        """Grey text for a field the file does not set (it shows the model's default)."""
        w = self.editor
        if not isinstance(w, (QLineEdit, QAbstractSpinBox)) or getattr(self, "_is_default", None) == is_default:
            return
        self._is_default = is_default
        if not hasattr(self, "_palette"):
            self._palette = QPalette(w.palette())
        pal = QPalette(self._palette)
        if is_default:
            pal.setColor(QPalette.ColorRole.Text, DEFAULT_TEXT)
        w.setPalette(pal)

    def mark(self, rest: tuple, message: str):
        self.box.set_error(message)
        self.editor.setToolTip(f"⚠ {message}\n\n{self.tip}")

    def set_unused(self, why: str | None):
        """Greyed out, saying why, while another field overrides this one (its value is kept)."""
        if self.editor.isEnabled() == (why is None):
            return
        self.editor.setEnabled(why is None)
        if not self.box.error():
            self.editor.setToolTip(f"{why}\n\n{self.tip}" if why else self.tip)

    def clear_mark(self):
        if self.box.error():
            self.box.set_error("")
            self.editor.setToolTip(self.tip)


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
