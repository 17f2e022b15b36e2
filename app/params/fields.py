"""One editor per scalar field: the number spin box, check box, combo box and line edit, bound
to a data path, in a frame that shows the field's validation message under it."""
from __future__ import annotations

import math
import re
import sys
from typing import Callable

from PySide6.QtCore import QSignalBlocker, QSize, Qt
from PySide6.QtGui import QPainter, QPalette, QPen, QValidator
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFrame,
    QLineEdit,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from .error_label import ErrorLabel
from .values import (
    _BIG,
    _MISSING,
    DEFAULT_TEXT,
    ERROR_COLOR,
    FieldSpec,
    _norm_float,
    _parse_number,
    _ParseError,
    _tooltip,
    display_text,
    fmt_number,
    parse_text,
    path_str,
)


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
        # sized by eight characters, not its longest choice ("conversation_poisson" pushed
        # every value of the panel out of a 320-px dock); the open list still shows them whole
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.setMinimumContentsLength(8)

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
        self.message = ErrorLabel(point_size_less=1)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.message)

    def error(self) -> str:
        return self._error

    def set_error(self, text: str):
        if text == self._error:
            return
        self._error = text
        self.message.set_message(text)
        self.update()

    def paintEvent(self, event):
        super().paintEvent(event)
        if self._error:
            p = QPainter(self)
            p.setRenderHint(QPainter.RenderHint.Antialiasing)
            p.setPen(QPen(ERROR_COLOR, 1.5))
            p.drawRoundedRect(self.rect().adjusted(1, 1, -1, -1), 3, 3)
            p.end()


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
