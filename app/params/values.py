"""Field paths, the text forms of values, and what the form needs to know about a field."""
from __future__ import annotations

import json
import math
import re
import types
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from PySide6.QtGui import QColor

from kvviz.errors import ScenarioError
from kvviz.scenario import loc_to_path
from kvviz.scenario_data import parse_value

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
    try:
        return _parse_text(spec, text)
    except ScenarioError as e:  # e.g. TOML nested too deep: marked at the field like any typo
        raise _ParseError(e.message) from None


def _parse_text(spec: FieldSpec, text: str):
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
