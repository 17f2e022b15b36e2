"""The parameter panel: a form generated from a scenario model's fields.

Nothing here knows a mechanism. The panel walks the pydantic model of the loaded scenario's
`kind` (`kvviz.registry.mechanisms()[kind].model`) and makes one editor per field:

    int, float          spin box: unit as suffix, description as tooltip, steps kept inside the
                        field's ge/gt/le/lt range (typed values outside it are let through and
                        marked by validation rather than silently clamped)
    bool                check box
    Literal[...]        combo box
    str                 line edit
    list[int|float]     line edit "8, 12"
    list[str]           line edit "a; b" (or a TOML array)
    list[SubModel]      table: one column per sub-field, add/remove row buttons
    nested Section      collapsible group titled by the field name
    a table holding a scenario of a known `kind` (ladder `base`): a group generated from that
                        kind's model
    anything else       line edit holding the TOML value text (unions, optionals, nested lists);
                        empty means "not set"

Every edit goes into a plain dict (what `parse_scenario` takes, holding only the file's keys
plus the fields the user touched), which is validated at once. A valid state is emitted as
`edited(model)`, debounced; an invalid one marks the blamed field (red frame, message under it,
tooltip), shows the message in a banner and emits `invalid("path: message")`. Invalid data
never leaves the panel and nothing raises.

Save writes TOML atomically (temp file in the same folder, then os.replace) through tomlkit, so
the file's comments and layout survive: only changed values are rewritten, in place.
"""
from __future__ import annotations

import copy
import json
import math
import os
import re
import tempfile
import tomllib
import types
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import tomlkit
from pydantic import BaseModel
from PySide6.QtCore import QSignalBlocker, QSize, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QPainter, QPalette, QPen, QValidator
from PySide6.QtWidgets import (QAbstractItemView, QAbstractSpinBox, QCheckBox, QComboBox,
                               QDoubleSpinBox, QFormLayout, QFrame, QHBoxLayout, QHeaderView,
                               QLabel, QLineEdit, QScrollArea, QSizePolicy, QTableWidget,
                               QTableWidgetItem, QToolButton, QVBoxLayout, QWidget)
from superqt import QCollapsible
from superqt.utils import QSignalDebouncer

from kvviz import ScenarioError, parse_scenario
from kvviz.registry import mechanisms
from kvviz.scenario import loc_to_path, parse_value, read_toml

DEBOUNCE_MS = 150
ERROR_COLOR = QColor("#c62828")
ERROR_FILL = QColor("#fdecea")
DEFAULT_TEXT = QColor("#767676")  # a field the file does not set, showing the model's default
MAX_TABLE_ROWS_SHOWN = 8
INDENT = 12  # px per nesting level of groups
_BIG = float(2 ** 53)  # spin boxes hold doubles: integers are exact up to here

_MISSING = object()  # a key absent from the data (the field shows its default)
_UNSET = object()    # an editor emptied: remove the key


class _ParseError(ValueError):
    pass


# --- paths -----------------------------------------------------------------------------

_TOKEN = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


def parse_path(text: str) -> tuple:
    """`sequence.queries[1]` or `rungs.2.label` -> ('sequence', 'queries', 1) / ('rungs', 2, 'label')."""
    parts: list = []
    for m in _TOKEN.finditer(text.strip()):
        if m.group(1) is not None:
            parts.append(int(m.group(1)))
        else:
            p = m.group(2).strip()
            parts.append(int(p) if p.isdigit() else p)
    return tuple(parts)


path_str = loc_to_path  # ('reads', 0, 't_us') -> 'reads[0].t_us', as validation messages name it


def _related(a: tuple, b: tuple) -> bool:
    """One path is a prefix of the other (an edit at one affects the other)."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def _same(a, b) -> bool:
    """Equality that tells booleans from numbers (True == 1 in Python, not in a TOML file)."""
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) in (int, float) and type(b) in (int, float) and a == b or a == b


def _plain(v):
    if isinstance(v, BaseModel):
        return v.model_dump()
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


# --- text forms of values --------------------------------------------------------------

def _norm_float(v: float):
    """Integral floats are stored as ints (as the bundled files write them: `latency_us = 25`)."""
    return int(v) if math.isfinite(v) and float(v).is_integer() and abs(v) < _BIG else v


def fmt_number(v) -> str:
    """Shortest exact text: 56.25, 0.72, 3600, 1e-07 (never rounded to a fixed number of decimals)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isfinite(v) and v.is_integer() and abs(v) < 1e16:
            return str(int(v))
        return repr(v)
    return str(v)


def toml_text(v) -> str:
    """A value as TOML value text (inline: `[1, 2]`, `{a = 1}`, `"text"`); '' for not set."""
    if v is _MISSING or v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")) if not math.isfinite(v) else repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # JSON string escapes are valid TOML basic strings
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_text(x) for x in v) + "]"
    if isinstance(v, dict):
        key = lambda k: k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k, ensure_ascii=False)
        return "{" + ", ".join(f"{key(k)} = {toml_text(x)}" for k, x in v.items()) + "}"
    return str(v)


def _parse_number(text: str, integer: bool):
    t = text.strip().replace("_", "")
    try:
        if integer:
            return int(t)
        v = float(t)
    except ValueError:
        raise _ParseError(f"expected {'an integer' if integer else 'a number'} (got {text.strip()!r})") from None
    if not math.isfinite(v):
        raise _ParseError(f"expected a finite number (got {text.strip()!r})")
    return _norm_float(v)


# --- what the form needs to know about a field ------------------------------------------

@dataclass(frozen=True)
class FieldSpec:
    name: str
    kind: str            # int float bool choice str numlist strlist table section toml
    description: str = ""
    unit: str = ""
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None
    choices: tuple = ()
    item: Any = None     # numlist: int/float; table/section: the model class
    optional: bool = False
    default: Any = _MISSING
    numeric: bool = False  # int/float, possibly optional (right-aligned, sized to contents in tables)

    def bounds_text(self) -> str:
        big = lambda v: f"{v:_}" if isinstance(v, int) and abs(v) >= 10_000 else fmt_number(v)
        parts = [f"{op} {big(v)}" for op, v in ((">=", self.ge), (">", self.gt), ("<=", self.le), ("<", self.lt))
                 if v is not None]
        return ", ".join(parts)


def _strip_annotated(t):
    while get_origin(t) is Annotated:
        t = get_args(t)[0]
    return t


def _is_model(t) -> bool:
    return isinstance(t, type) and issubclass(t, BaseModel)


def field_spec(name: str, info) -> FieldSpec:
    ann = _strip_annotated(info.annotation)
    optional = False
    if get_origin(ann) in (Union, types.UnionType):
        args = [a for a in get_args(ann) if a is not type(None)]
        optional = len(args) < len(get_args(ann))
        ann = _strip_annotated(args[0]) if len(args) == 1 else ann
    kind, item, choices = "toml", None, ()
    if ann is bool:
        kind = "bool"
    elif ann is int:
        kind = "int"
    elif ann is float:
        kind = "float"
    elif ann is str:
        kind = "str"
    elif get_origin(ann) is Literal:
        kind, choices = "choice", get_args(ann)
    elif _is_model(ann):
        kind, item = "section", ann
    elif get_origin(ann) in (list, tuple) and len(get_args(ann)) == 1:
        it = _strip_annotated(get_args(ann)[0])
        if it in (int, float):
            kind, item = "numlist", it
        elif it is str:
            kind = "strlist"
        elif _is_model(it):
            kind, item = "table", it
    numeric = kind in ("int", "float")
    if optional and kind not in ("numlist", "strlist", "toml"):
        kind = "toml"  # an empty editor means "not set"
    bounds = {}
    for m in info.metadata:
        for attr in ("ge", "gt", "le", "lt"):
            v = getattr(m, attr, None)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                bounds[attr] = v
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    default = _MISSING
    if not info.is_required():
        try:
            default = _plain(info.get_default(call_default_factory=True, validated_data={}))
        except TypeError:
            default = _plain(info.get_default(call_default_factory=True))
    return FieldSpec(name, kind, info.description or "", str(extra.get("unit") or ""), choices=choices,
                     item=item, optional=optional, default=default, numeric=numeric, **bounds)


def display_text(spec: FieldSpec, value) -> str:
    """The editor text for a value (line edits and table cells)."""
    if value is _MISSING or value is None:
        return ""
    k = spec.kind
    if k == "str":
        return value if isinstance(value, str) else toml_text(value)
    if k in ("int", "float"):
        return fmt_number(value) if isinstance(value, (int, float)) else toml_text(value)
    if k in ("bool", "choice"):
        return toml_text(value) if not isinstance(value, str) else value
    if k == "numlist" and isinstance(value, list) and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
        return ", ".join(fmt_number(x) for x in value)
    if k == "strlist" and isinstance(value, list) and all(
            isinstance(x, str) and x.strip() == x and x and ";" not in x for x in value):
        return "; ".join(value)
    return toml_text(value)


def parse_text(spec: FieldSpec, text: str):
    """Editor text -> value, _UNSET (remove the key) or _ParseError."""
    k, t = spec.kind, text.strip()
    if k == "str":
        return text
    if k in ("int", "float"):
        return _UNSET if not t else _parse_number(t, k == "int")
    if k == "bool":
        if not t:
            return _UNSET
        low = t.lower()
        if low in ("true", "yes", "1", "on"):
            return True
        if low in ("false", "no", "0", "off"):
            return False
        raise _ParseError(f"expected true or false (got {t!r})")
    if k == "choice":
        if not t:
            return _UNSET
        return t if all(isinstance(c, str) for c in spec.choices) else parse_value(t)
    if k == "numlist":
        if t.startswith("[") and t.endswith("]"):
            t = t[1:-1].strip()
        if not t:
            return _UNSET if spec.optional else []
        items = [s for s in re.split(r"[,\s]+", t) if s]
        try:
            return [_parse_number(s, spec.item is int) for s in items]
        except _ParseError as e:
            bad = str(e).split("(got ", 1)[-1].rstrip(")")
            what = "integers" if spec.item is int else "numbers"
            raise _ParseError(f"expected {what} separated by commas (got {bad})") from None
    if k == "strlist":
        if not t:
            return _UNSET if spec.optional else []
        if t.startswith("["):
            v = parse_value(t)
            if not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
                raise _ParseError(f'expected a TOML list of strings, e.g. ["a", "b"] (got {t!r})')
            return v
        return [s.strip() for s in t.split(";") if s.strip()]
    return _UNSET if not t else parse_value(t)  # toml


def _tooltip(spec: FieldSpec, path: tuple) -> str:
    lines = [spec.description] if spec.description else []
    facts = []
    if spec.unit:
        facts.append(f"unit: {spec.unit}")
    if spec.bounds_text():
        facts.append(f"range: {spec.bounds_text()}")
    if spec.kind == "numlist":
        facts.append("values separated by commas")
    elif spec.kind == "strlist":
        facts.append("items separated by ';' (or a TOML array)")
    elif spec.kind == "toml":
        facts.append("a TOML value" + ("; empty = not set" if spec.optional or spec.default is None else ""))
    if spec.default is not _MISSING and spec.kind not in ("section", "table"):
        facts.append(f"default: {toml_text(spec.default) or 'not set'}")
    lines.append(" · ".join(facts + [f"path: {path_str(path)}"]))
    return "\n".join(lines)


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
        self.setRange(-_BIG, _BIG)
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
        """The value as the data holds it: an int for int fields and integral floats."""
        v = self.value()
        return int(round(v)) if self._int else _norm_float(v)

    def _core(self, text: str) -> str:
        t = text
        if self.suffix() and t.endswith(self.suffix()):
            t = t[: -len(self.suffix())]
        elif self.suffix() and t.endswith(self.suffix().strip()):
            t = t[: -len(self.suffix().strip())]
        return t.strip().replace("_", "")

    def textFromValue(self, v: float) -> str:
        return str(int(round(v))) if self._int else fmt_number(float(v))

    def valueFromText(self, text: str) -> float:
        try:
            return float(_parse_number(self._core(text), self._int))
        except _ParseError:
            return self.value()

    def validate(self, text: str, pos: int):
        core = self._core(text)
        if core in ("", "-", "+", ".", "-.", "+."):
            return QValidator.State.Intermediate
        try:
            _parse_number(core, self._int)
            return QValidator.State.Acceptable
        except _ParseError:
            if not self._int and re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?", core):
                return QValidator.State.Intermediate
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
        # Qt sizes the box for its internal range (±2**53); size it for the constraint range
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
        btn.setStyleSheet("text-align: left; border: none; outline: none; font-weight: 600; padding: 3px 0px;")
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
    form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
    return form


class _Field:
    """One editor bound to one data path."""

    def __init__(self, panel: "ParameterPanel", spec: FieldSpec, path: tuple, default, chain: list):
        self.panel, self.spec, self.path, self.default, self.chain = panel, spec, path, default, chain
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
        self.panel._commit(self, value)

    def _text_edited(self, text: str):
        try:
            value = parse_text(self.spec, text)
        except _ParseError as e:
            self.panel._local_error(self, {self.dotted: str(e)})
            return
        self.panel._commit(self, value)

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

    def clear_mark(self):
        if self.box.error():
            self.box.set_error("")
            self.editor.setToolTip(self.tip)


class _TableField(_Field):
    """list[SubModel]: one row per item, one column per sub-field, + and − buttons."""

    def __init__(self, panel, spec, path, default, chain):
        model = spec.item
        self.columns = [(n, field_spec(n, i)) for n, i in model.model_fields.items()]
        self.rows_src: list[dict] = []
        self.cell_errors: dict[tuple[int, int], str] = {}
        super().__init__(panel, spec, path, default, chain)

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
        for c, (_, s) in enumerate(self.columns):
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
                item.setForeground(QBrush(self.panel.palette().color(QPalette.ColorRole.PlaceholderText)))
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
            self.panel._local_error(self, errors)
        else:
            self.panel._commit(self, rows)

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


# --- the panel -------------------------------------------------------------------------

class ParameterPanel(QWidget):
    """Edit a scenario file's parameters; see the module docstring."""

    edited = Signal(object)        # a validated scenario model, debounced, after a valid edit
    invalid = Signal(str)          # "field.path: message" while invalid; "" when valid again
    dirty_changed = Signal(bool)

    def __init__(self, parent=None):
        super().__init__(parent)
        self._path: str | None = None
        self._file_text: str | None = None
        self._file_data: dict | None = None
        self._data: dict | None = None
        self._model = None
        self._errors: list[tuple[str, str]] = []
        self._local: dict[str, tuple[tuple, str]] = {}   # unparsable editor text: dotted path -> (field, msg)
        self._dirty = False
        self._message = ""
        self._fields: dict[tuple, _Field] = {}
        self._groups: dict[tuple, _Group] = {}
        self._embedded: dict[tuple, str] = {}            # path -> kind of an embedded scenario group
        self._defaults: dict[tuple, Any] = {}
        self._labels: list[tuple[QLabel, int]] = []     # form labels and their nesting depth

        self._debouncer = QSignalDebouncer(self)
        self._debouncer.setTimeout(DEBOUNCE_MS)
        self._debouncer.triggered.connect(self._emit_edited)

        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(4)
        self.banner = QLabel()
        self.banner.setWordWrap(True)
        self.banner.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.banner.setStyleSheet("QLabel { background: #fdecea; color: #b71c1c; border: 1px solid #f2b8b5;"
                                  " border-radius: 4px; padding: 4px 6px; }")
        self.banner.hide()
        lay.addWidget(self.banner)
        self._scroll = QScrollArea()
        self._scroll.setWidgetResizable(True)
        self._scroll.setFrameShape(QFrame.Shape.NoFrame)
        self._scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        empty = QLabel("Open a scenario to edit its parameters.")
        empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._scroll.setWidget(empty)
        lay.addWidget(self._scroll, 1)

    # --- public API --------------------------------------------------------------------
    def load(self, path: str, *, strict: bool = True) -> None:
        """Read a scenario file and build its form. Raises ScenarioError when the file cannot be
        read or parsed, or (strict) does not validate; the panel is unchanged then. With
        strict=False a file of a known kind that fails validation is shown with its errors marked."""
        path = str(path)
        data = read_toml(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ScenarioError(f"cannot read file: {e}", path) from None
        if strict or data.get("kind") not in mechanisms():
            parse_scenario(copy.deepcopy(data), path)  # raises with file, field and message
        self._debouncer.cancel()
        same_file = path == self._path and self._data is not None and data.get("kind") == self._data.get("kind")
        self._path, self._file_text = path, text
        self._file_data, self._data = data, copy.deepcopy(data)
        self._local.clear()
        self._rebuild(keep_state=same_file)  # reloading a file keeps collapsed groups and scroll
        self._update_dirty()
        self._validate(emit_edited=False)

    def scenario(self):
        """The current validated model, or None while the edits are invalid."""
        return self._model

    def data(self) -> dict:
        """The current plain data (file keys plus touched fields), as parse_scenario takes."""
        return copy.deepcopy(self._data) if self._data is not None else {}

    def path(self) -> str | None:
        return self._path

    def is_dirty(self) -> bool:
        return self._dirty

    def errors(self) -> list[tuple[str, str]]:
        """The current problems as (field path, message), first one first."""
        return list(self._errors)

    def error_text(self, field_path: str) -> str:
        """The message shown at the widget that `field_path` resolves to ('' if none)."""
        target, _ = self._resolve(parse_path(field_path))
        if isinstance(target, _Field):
            return target.box.error()
        if isinstance(target, _Group):
            return target._error
        return ""

    def reset_to_file(self) -> None:
        """Discard the edits and read the file again; emits `edited` with the file's model."""
        if self._path is None:
            return
        self.load(self._path, strict=False)
        if self._model is not None:
            self._debouncer.throttle()

    def save(self, path: str | None = None) -> None:
        """Write the current data as TOML, atomically, keeping the file's comments and layout.
        With `path`, Save As (the panel then edits that file). Refuses invalid edits
        (ScenarioError); an OSError leaves the target file untouched."""
        if self._data is None:
            raise RuntimeError("no scenario loaded")
        target = Path(path if path is not None else self._path)
        if self._errors:
            p, m = self._errors[0]
            raise ScenarioError(f"not saved, the edits are invalid: {m}", str(target), p)
        text = self._render()
        _atomic_write(target, text)
        self._path, self._file_text = str(target), text
        self._file_data = copy.deepcopy(self._data)
        self._update_dirty()
        if path is not None:
            self._validate(emit_edited=False)  # relative paths in the data now resolve against the new file

    def set_value(self, field_path: str, value) -> None:
        """Edit a field as its widget would (None = remove the key: the default applies).
        Paths as in error messages and --set: `cache.slots`, `rungs[2].label`, `rungs.2.label`."""
        if self._data is None:
            raise RuntimeError("no scenario loaded")
        parts = parse_path(field_path)
        if not parts:
            raise ValueError(f"empty field path {field_path!r}")
        value = _plain(value)
        if value is None:
            self._delete(parts)
        else:
            self._write(parts, copy.deepcopy(value))
        self._local = {k: v for k, v in self._local.items() if not _related(v[0], parts)}
        if self._needs_rebuild(parts):
            self._rebuild(keep_state=True)
        else:
            for f in self._fields.values():
                if _related(f.path, parts):
                    f.show(self._get(f.path))
        self._after_edit()

    def widget_for(self, field_path: str) -> QWidget | None:
        """The editor of a field (a table for `rungs` and its cells `rungs[1].label`); the
        collapsible of a section; None when no widget shows that path."""
        target, rest = self._resolve(parse_path(field_path))
        if isinstance(target, _Field):
            return target.editor
        if isinstance(target, _Group) and not rest:
            return target.coll
        return None

    def field_paths(self) -> list[str]:
        """Every field that has an editor, as dotted paths."""
        return [f.dotted for f in self._fields.values()]

    def flush(self) -> None:
        """Emit a pending `edited` now instead of after the debounce."""
        self._debouncer.flush(restart_timer=False)

    # --- building ----------------------------------------------------------------------
    def _rebuild(self, keep_state: bool):
        collapsed = {p for p, g in self._groups.items() if not g.coll.isExpanded()} if keep_state else set()
        scroll = self._scroll.verticalScrollBar().value() if keep_state else 0
        self._fields.clear()
        self._groups.clear()
        self._embedded.clear()
        self._defaults.clear()
        self._labels.clear()
        content = QWidget()
        content.setObjectName("parameter-form")
        vbox = QVBoxLayout(content)
        vbox.setContentsMargins(8, 6, 8, 8)
        vbox.setSpacing(4)
        top = _form()
        vbox.addLayout(top)
        kind = self._data.get("kind")
        kind_label = QLabel(f"<b>{kind}</b>")
        kind_label.setToolTip("The scenario kind: which mechanism simulates it (fixed by the file)")
        top.addRow(self._label("kind", kind_label.toolTip(), 0), kind_label)
        model = mechanisms()[kind].model
        self._populate(model, (), None, top, vbox.addWidget, [])
        vbox.addStretch(1)
        # one label column for the whole panel: editors line up across groups
        right = max((lab.sizeHint().width() + INDENT * depth for lab, depth in self._labels), default=0)
        for lab, depth in self._labels:
            lab.setMinimumWidth(right - INDENT * depth)
        old = self._scroll.takeWidget()
        self._scroll.setWidget(content)
        if old is not None:
            old.deleteLater()
        for p in collapsed:
            if p in self._groups:
                self._groups[p].coll.collapse(animate=False)
        if scroll:
            self._scroll.verticalScrollBar().setValue(scroll)

    def _label(self, text: str, tip: str, depth: int, height: int = 0) -> QLabel:
        label = QLabel(text)
        label.setToolTip(tip)
        if height:
            label.setFixedHeight(height)  # text centred on its editor even when a message shows below
        self._labels.append((label, depth))
        return label

    def _group(self, title: str, path: tuple, tip: str, chain: list, add_block) -> _Group:
        g = _Group(title, path, tip or path_str(path), chain)
        self._groups[path] = g
        add_block(g.coll)
        return g

    def _populate(self, model, prefix: tuple, inherited: dict | None, form: QFormLayout, add_block, chain):
        for name, info in model.model_fields.items():
            if name == "kind":
                continue
            spec = field_spec(name, info)
            path = prefix + (name,)
            default = inherited[name] if isinstance(inherited, dict) and name in inherited else spec.default
            self._defaults[path] = default
            value = self._get(path)
            if spec.kind == "section":
                g = self._group(name, path, spec.description or _doc(spec.item), chain, add_block)
                self._populate(spec.item, path, default if isinstance(default, dict) else None,
                               g.form, g.form.addRow, chain + [g])
            elif spec.kind == "table":
                g = self._group(name, path, spec.description, chain, add_block)
                f = _TableField(self, spec, path, default, chain + [g])
                g.form.addRow(f.box)
                self._fields[path] = f
                f.show(value)
            elif isinstance(value, dict) and value.get("kind") in mechanisms() and spec.kind == "toml":
                # a table holding a whole scenario (ladder `base`): a form of that kind's model
                sub = value["kind"]
                g = self._group(f"{name}  ·  {sub} scenario", path, spec.description, chain, add_block)
                k = QLabel(f"<b>{sub}</b>")
                g.form.addRow(self._label("kind", f"kind of the scenario in {path_str(path)}", len(chain) + 1), k)
                self._embedded[path] = sub
                self._populate(mechanisms()[sub].model, path, None, g.form, g.form.addRow, chain + [g])
            else:
                if spec.kind in ("int", "float") and not _spin_can_show(value if value is not _MISSING else default):
                    spec = replace(spec, kind="toml")  # e.g. a string in the file: show it as text
                f = _Field(self, spec, path, default, chain)
                label = self._label(name, f.tip, len(chain), f.editor.sizeHint().height() + 4)
                label.setBuddy(f.editor)
                form.addRow(label, f.box)
                self._fields[path] = f
                f.show(value)

    def _needs_rebuild(self, parts: tuple) -> bool:
        for p, kind in self._embedded.items():
            if _related(p, parts):
                v = self._get(p)
                if not (isinstance(v, dict) and v.get("kind") == kind):
                    return True
        f = self._fields.get(parts)
        if f is not None and f.spec.kind == "toml":
            v = self._get(parts)
            return isinstance(v, dict) and v.get("kind") in mechanisms()
        return False

    # --- data --------------------------------------------------------------------------
    def _get(self, parts: tuple):
        return _get_in(self._data, parts)

    def _write(self, parts: tuple, value):
        node = self._data
        for i, p in enumerate(parts[:-1]):
            try:
                node = node[p]
                continue
            except (KeyError, IndexError, TypeError):
                pass
            if not isinstance(node, dict) or isinstance(p, int):
                raise KeyError(f"no such field: {path_str(parts[: i + 1])}")
            default = self._defaults.get(parts[: i + 1], _MISSING)
            node[p] = copy.deepcopy(default) if isinstance(default, list) and isinstance(parts[i + 1], int) else {}
            node = node[p]
        last = parts[-1]
        if isinstance(node, list) and isinstance(last, int):
            if last == len(node):
                node.append(value)
            elif 0 <= last < len(node):
                node[last] = value
            else:
                raise KeyError(f"no such list item: {path_str(parts)}")
        elif isinstance(node, dict):
            node[last] = value
        else:
            raise KeyError(f"{path_str(parts[:-1])} is not a table")

    def _delete(self, parts: tuple):
        parent = self._get(parts[:-1]) if len(parts) > 1 else self._data
        if isinstance(parent, dict):
            parent.pop(parts[-1], None)
        elif isinstance(parent, list) and isinstance(parts[-1], int) and parts[-1] < len(parent):
            del parent[parts[-1]]
        # drop tables the edit emptied unless the file has them
        for n in range(len(parts) - 1, 0, -1):
            node = self._get(parts[:n])
            if isinstance(node, dict) and not node and _get_in(self._file_data, parts[:n]) is _MISSING:
                holder = self._get(parts[: n - 1]) if n > 1 else self._data
                if isinstance(holder, dict):
                    holder.pop(parts[n - 1], None)

    # --- edits and validation ------------------------------------------------------------
    def _commit(self, field: _Field, value):
        self._local = {k: v for k, v in self._local.items() if v[0] != field.path}
        if value is _UNSET:
            self._delete(field.path)
        elif not (self._get(field.path) is _MISSING and _same(value, field.default)):
            self._write(field.path, value)
        field.set_default_look(self._get(field.path) is _MISSING)
        self._after_edit()

    def _local_error(self, field: _Field, errors: dict[str, str]):
        self._local = {k: v for k, v in self._local.items() if v[0] != field.path}
        self._local.update({p: (field.path, m) for p, m in errors.items()})
        self._after_edit()

    def _after_edit(self):
        self._update_dirty()
        self._validate(emit_edited=True)

    def _update_dirty(self):
        dirty = bool(self._local) or not _same(self._data, self._file_data)
        if dirty != self._dirty:
            self._dirty = dirty
            self.dirty_changed.emit(dirty)

    def _validate(self, emit_edited: bool):
        errors = [(p, m) for p, (_, m) in self._local.items()]
        model = None
        if not errors:
            try:
                model = parse_scenario(copy.deepcopy(self._data), self._path or "<panel>")
            except ScenarioError as e:
                errors = [(x.field or "<top>", x.message) for x in [e, *e.others]]
            except Exception as e:  # a mechanism's validator failing oddly must not crash the app
                errors = [("<top>", f"{type(e).__name__}: {e}")]
        self._model, self._errors = model, errors
        self._mark(errors)
        message = f"{errors[0][0]}: {errors[0][1]}" if errors else ""
        was = self._message
        self._message = message
        if errors:
            self._debouncer.cancel()  # never emit a model the current edits no longer match
            self.invalid.emit(message)
        else:
            if was:
                self.invalid.emit("")
            if emit_edited:
                self._debouncer.throttle()

    def _emit_edited(self):
        if self._model is not None:
            self.edited.emit(self._model)

    def _resolve(self, parts: tuple):
        for n in range(len(parts), 0, -1):
            pre = parts[:n]
            if pre in self._fields:
                return self._fields[pre], parts[n:]
            if pre in self._groups:
                return self._groups[pre], parts[n:]
        return None, parts

    def _mark(self, errors):
        for f in self._fields.values():
            f.clear_mark()
        for g in self._groups.values():
            g.set_error("")
        shown: dict[int, list[str]] = {}
        for p, m in errors:
            target, rest = self._resolve(parse_path(p))
            if target is None:
                continue  # `kind`, `<top>`, an unknown key: the banner shows it
            msgs = shown.setdefault(id(target), [])
            msgs.append(f"{p}: {m}")
            if isinstance(target, _Field):
                target.mark(rest, "\n".join(msgs))
            else:
                target.set_error("\n".join(msgs))
            for g in target.chain + ([target] if isinstance(target, _Group) else []):
                if not g.coll.isExpanded():
                    g.coll.expand(animate=False)
        if errors:
            more = f"  (+{len(errors) - 1} more)" if len(errors) > 1 else ""
            self.banner.setText(f"⚠ {errors[0][0]}: {errors[0][1]}{more}")
            self.banner.setToolTip("\n".join(f"{p}: {m}" for p, m in errors))
        self.banner.setVisible(bool(errors))

    # --- saving ------------------------------------------------------------------------
    def _render(self) -> str:
        """The file's text with the changed values rewritten in place (tomlkit)."""
        try:
            doc = tomlkit.parse(self._file_text)
            _sync_table(doc, self._file_data, self._data)
            text = tomlkit.dumps(doc)
            if _same(tomllib.loads(text), self._data):
                return text
            warnings.warn("kvviz: could not keep the file's layout for this edit; writing it afresh")
        except Exception as e:  # tomlkit could not follow this edit; never lose the user's data
            warnings.warn(f"kvviz: could not keep the file's layout ({e}); writing it afresh")
        text = tomlkit.dumps(self._data)
        if not _same(tomllib.loads(text), self._data):
            raise RuntimeError("kvviz: the scenario cannot be written as TOML")
        return text


def _doc(cls) -> str:
    d = cls.__dict__.get("__doc__") if isinstance(cls, type) else None
    return (d or "").strip().split("\n")[0]


def _spin_can_show(v) -> bool:
    """Whether a NumberSpinBox shows `v` exactly (integers up to 2**53, floats that survive its
    15 decimals); other values (a string in the file, 1e-20) get a text editor instead."""
    if v is _MISSING or v is None:
        return True
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    if isinstance(v, int):
        return abs(v) <= _BIG
    return math.isfinite(v) and abs(v) < _BIG and float(f"{v:.15f}") == v


def _get_in(data, parts: tuple):
    node = data
    for p in parts:
        try:
            node = node[p]
        except (KeyError, IndexError, TypeError):
            return _MISSING
    return node


# --- style-preserving TOML update --------------------------------------------------------

def _sync_table(container, old: dict, new: dict):
    """Make tomlkit `container` (holding `old`) hold `new`, touching only what changed."""
    for key in [k for k in old if k not in new]:
        del container[key]
    for key, nv in new.items():
        if key not in old:
            container[key] = _new_item(nv)
            continue
        ov = old[key]
        if _same(ov, nv):
            continue
        item = _item(container, key)
        if isinstance(nv, dict) and isinstance(ov, dict) and isinstance(item, (tomlkit.items.Table,
                                                                               tomlkit.items.InlineTable)):
            _sync_table(item, ov, nv)
        elif (isinstance(item, tomlkit.items.AoT) and isinstance(nv, list) and nv
              and all(isinstance(x, dict) for x in nv)):
            _sync_aot(item, ov, nv)
        elif isinstance(item, tomlkit.items.Array) and isinstance(nv, list) and isinstance(ov, list):
            old_len = len(item.as_string())
            _sync_array(item, ov, nv)
            _keep_comment_column(item, old_len)
        elif isinstance(item, (tomlkit.items.Table, tomlkit.items.AoT)):
            del container[key]          # a [table] becoming a value: re-add it as a key
            container[key] = _new_item(nv)
        else:
            _replace(container, key, nv)


def _new_item(v):
    if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
        aot = tomlkit.aot()
        for row in v:
            aot.append(_new_item(row))
        return aot
    if isinstance(v, dict):
        t = tomlkit.table()
        for k, x in v.items():
            t[k] = _new_item(x)
        return t
    return tomlkit.item(v)


def _item(container, key):
    """The tomlkit item under `key` (container[key] unwraps booleans to plain bool)."""
    body = container if isinstance(container, tomlkit.container.Container) else container.value
    return body.item(key)


def _replace(container, key, value):
    """Replace a value, keeping its trailing comment in the same column where there is room."""
    old_len = len(_item(container, key).as_string())
    container[key] = value
    _keep_comment_column(_item(container, key), old_len)


def _keep_comment_column(item, old_len: int):
    trivia = getattr(item, "trivia", None)
    text = item.as_string()
    if trivia is not None and trivia.comment and trivia.comment_ws.strip(" ") == "" and "\n" not in text:
        grow = len(text) - old_len
        trivia.comment_ws = " " * max(1, len(trivia.comment_ws) - grow)


def _sync_aot(aot, old: list, new: list):
    for i in range(min(len(old), len(new))):
        if not _same(old[i], new[i]):
            if isinstance(old[i], dict):
                _sync_table(aot[i], old[i], new[i])
            else:
                aot[i] = _new_item(new[i])
    for i in range(len(old) - 1, len(new) - 1, -1):
        del aot[i]
    for row in new[len(old):]:
        if len(aot) and not aot[-1].as_string().endswith("\n\n"):
            aot[-1].add(tomlkit.nl())
        aot.append(_new_item(row))


def _sync_array(arr, old: list, new: list):
    for i in range(min(len(old), len(new))):
        if not _same(old[i], new[i]):
            if isinstance(old[i], list) and isinstance(new[i], list) and isinstance(arr[i], tomlkit.items.Array):
                _sync_array(arr[i], old[i], new[i])
            else:
                arr[i] = new[i]
    for i in range(len(old) - 1, len(new) - 1, -1):
        del arr[i]
    for v in new[len(old):]:
        arr.append(v)


def _atomic_write(target: Path, text: str):
    """Write to a temp file beside the target, then os.replace: the target is either the old
    file or the new one, never half of each."""
    target = Path(target)
    mode = None
    try:
        mode = target.stat().st_mode & 0o777
    except OSError:
        pass
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
