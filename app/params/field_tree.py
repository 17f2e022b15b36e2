"""The parameter panel's field tree: the form generated from a scenario model (one editor per
field, a collapsible group per section), the plain data the editors write into, and the
validation of every edit, marked at the blamed field. ParameterPanel (panel.py) adds the file:
loading, saving and the public API."""
from __future__ import annotations

import copy
import math
from dataclasses import replace
from typing import Any

from PySide6.QtCore import QEvent, QPoint, Qt, Signal
from PySide6.QtWidgets import QApplication, QFormLayout, QFrame, QLabel, QScrollArea, QVBoxLayout, QWidget
from superqt.utils import QSignalDebouncer

from kvviz import ScenarioError, parse_scenario
from kvviz.mechanisms import mechanisms

from .fields import _Field
from .groups import _form, _Group
from .table_field import _TableField
from .values import (
    _BIG,
    _MISSING,
    _UNSET,
    DEBOUNCE_MS,
    INDENT,
    _plain,
    _related,
    _same,
    field_spec,
    parse_path,
    path_str,
)

LABEL_MAX_CHARS = 18  # a label's width cap, in characters of the label font (the longest names before 2026-12)


# A scenario's checks and claims (ScenarioBase's fields): read less often than its parameters, so
# after them, and a fresh file opens with their groups folded away.
CHECK_FIELDS = ("expect", "claim", "claim_conditions", "robustness")


class FieldTree(QWidget):
    """The generated form and the data it edits; see the module docstring of panel.py."""

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
        self._refused: list[tuple[str, str]] = []  # the simulation refused a value (ParameterPanel.mark_refused)
        self._local: dict[str, tuple[tuple, str]] = {}   # unparsable editor text: dotted path -> (field, msg)
        self._dirty = False
        self._message = ""
        self._fields: dict[tuple, _Field] = {}
        self._groups: dict[tuple, _Group] = {}
        self._embedded: dict[tuple, str] = {}            # path -> kind of an embedded scenario group
        self._defaults: dict[tuple, Any] = {}
        self._sections: dict[tuple, Any] = {}            # path -> model of a nested section
        self._labels: list[tuple[QLabel, int]] = []     # form labels and their nesting depth

        self._debouncer = QSignalDebouncer(self)
        self._debouncer.setTimeout(DEBOUNCE_MS)
        self._debouncer.triggered.connect(self._emit_edited)

        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(4)
        # Problems no field can show (the kind, the file as a whole, an unknown key), below the
        # form: above it, appearing, it pushed the field being typed in down by its height.
        self.banner = QLabel()
        self.banner.setWordWrap(True)
        self.banner.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.banner.setStyleSheet("QLabel { background: #fdecea; color: #b71c1c; border: 1px solid #f2b8b5;"
                                  " border-radius: 4px; padding: 4px 6px; }")
        self.banner.hide()
        self._scroll = QScrollArea()
        self._scroll.setWidgetResizable(True)
        self._scroll.setFrameShape(QFrame.Shape.NoFrame)
        self._scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        empty = QLabel("Open a scenario to edit its parameters.")
        empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._scroll.setWidget(empty)
        lay.addWidget(self._scroll, 1)
        lay.addWidget(self.banner)

    # --- building ----------------------------------------------------------------------
    def _rebuild(self, keep_state: bool):
        # a fresh file opens with its checks folded away: they are read less often than the parameters
        collapsed = {p for p, g in self._groups.items() if not g.coll.isExpanded()} if keep_state else \
            {("expect",), ("claim",), ("robustness",)}  # tables; claim_conditions is one line
        scroll = self._scroll.verticalScrollBar().value() if keep_state else 0
        self._fields.clear()
        self._groups.clear()
        self._embedded.clear()
        self._defaults.clear()
        self._sections.clear()
        self._labels.clear()
        self._whole_now = self._whole()
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
        # One long field name widened every group's label column and pushed the values out of a
        # 320-px dock: a name past ~18 characters is cut in the middle, whole in its tooltip.
        fm = label.fontMetrics()
        cap = fm.horizontalAdvance("x" * LABEL_MAX_CHARS)
        if fm.horizontalAdvance(text) > cap:
            label.setText(fm.elidedText(text, Qt.TextElideMode.ElideMiddle, cap))
            label.setToolTip(f"{text}: {tip}" if tip else text)
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
        # the [[expect]] checks and the claims' tables (base fields, so first in the model) go after the parameters
        for name, info in sorted(model.model_fields.items(), key=lambda kv: kv[0] in CHECK_FIELDS):
            if name == "kind":
                continue
            spec = field_spec(name, info)
            path = prefix + (name,)
            default = inherited[name] if isinstance(inherited, dict) and name in inherited else spec.default
            self._defaults[path] = default
            value = self._get(path)
            if spec.kind == "section":
                g = self._group(name, path, spec.description or _doc(spec.item), chain, add_block)
                self._sections[path] = spec.item
                inherited_here = {**(default if isinstance(default, dict) else {}),
                                  **self._section_defaults(spec.item, path, self._whole_now)}
                self._populate(spec.item, path, inherited_here, g.form, g.form.addRow, chain + [g])
            elif spec.kind == "table":
                g = self._group(name, path, spec.description, chain, add_block)
                f = _TableField(spec, path, default, chain + [g], self._commit, self._local_error)
                g.form.addRow(f.box)
                self._fields[path] = f
                f.show(value)
            elif isinstance(value, dict) and _known_kind(value.get("kind")) and spec.kind == "toml":
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
                here, rows = chain, form
                if name in CHECK_FIELDS:  # a scalar of the claims (claim_conditions): in its own group, after
                    g = self._group(name, path, spec.description, chain, add_block)
                    here, rows = chain + [g], g.form
                f = _Field(spec, path, default, here, self._commit, self._local_error)
                label = self._label(name, f.tip, len(here), f.editor.sizeHint().height() + 4)
                label.setBuddy(f.editor)
                rows.addRow(label, f.box)
                self._fields[path] = f
                f.show(value)

    def _whole(self):
        """The scenario as validated now, or None while invalid."""
        try:
            return parse_scenario(copy.deepcopy(self._data), self._path or "<panel>")
        except ScenarioError:
            return None

    def _section_defaults(self, model, path: tuple, whole=None) -> dict:
        """What each field of a section defaults to given the rest of the section, as the
        section's own validators fill it in (a model `preset` fills the model's numbers): the
        section validated without that field. A field not set takes its value from `whole` (the
        validated scenario) when given, so a default another section decides shows too (free HBM
        from the model preset). Fields it cannot tell (invalid rest) are left out."""
        data = self._get(path)
        data = data if isinstance(data, dict) else {}
        node = whole
        for p in path:
            node = getattr(node, p, None) if isinstance(p, str) else None
        out = {}
        for name, info in model.model_fields.items():
            if field_spec(name, info).kind in ("section", "table"):
                continue
            if name not in data and isinstance(node, model):
                out[name] = _plain(getattr(node, name))
                continue
            try:
                out[name] = _plain(getattr(model.model_validate({k: copy.deepcopy(v) for k, v in data.items()
                                                                  if k != name}), name))
            except Exception:  # the rest of the section does not validate yet: keep what is shown
                pass
        return out

    def _refresh_defaults(self):
        """After an edit, re-derive the sections' defaults (a new preset changes the numbers
        shown in grey, in its own section and in others: the hardware's free HBM), from the
        model the edit's validation just made (not parsed again)."""
        for path, model in self._sections.items():
            for name, v in self._section_defaults(model, path, self._model).items():
                f = self._fields.get(path + (name,))
                if f is not None and not isinstance(f, _TableField) and not _same(v, f.default):
                    f.default = self._defaults[f.path] = v
                    if self._get(f.path) is _MISSING:
                        f.show(_MISSING)

    def _needs_rebuild(self, parts: tuple) -> bool:
        for p, kind in self._embedded.items():
            if _related(p, parts):
                v = self._get(p)
                if not (isinstance(v, dict) and v.get("kind") == kind):
                    return True
        f = self._fields.get(parts)
        if f is not None and f.spec.kind == "toml":
            v = self._get(parts)
            return isinstance(v, dict) and _known_kind(v.get("kind"))
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
        self._refresh_defaults()

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
        self._refused = []  # an edit clears the simulation's refusal
        self._mark(errors)
        self._mark_unused()
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

    def _keeping_focus_still(self, change) -> None:
        """Run `change` (messages shown or cleared under fields and groups), then scroll the
        form so the field being typed in stays where it was on screen: a message appearing
        above it (another field blamed, a group's) moved it down under the typing."""
        content = self._scroll.widget()
        focus = QApplication.focusWidget()
        if content is None or focus is None or not content.isAncestorOf(focus) or not content.isVisible():
            change()
            return
        viewport = self._scroll.viewport()
        before = focus.mapTo(viewport, QPoint(0, 0)).y()
        change()
        # laid out now, not at the next event: each layout's request reaches its parent's only
        # once processed, so a message deep in a group takes a few rounds to reach the form
        after = None
        for _ in range(12):
            QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
            now = focus.mapTo(viewport, QPoint(0, 0)).y()
            if now == after:
                break
            after = now
        if after != before:
            bar = self._scroll.verticalScrollBar()
            bar.setValue(bar.value() + after - before)

    def _mark_unused(self):
        """Fields another field overrides (the mechanism's `inactive`), greyed out: a trace
        file's scenario showed the generator's 9000 conversations as if in effect."""
        kind = self._data.get("kind") if isinstance(self._data, dict) else None
        rule = mechanisms()[kind].inactive if _known_kind(kind) else None
        try:
            unused = rule(self._data) if rule else {}
        except Exception:  # data the validator refuses anyway: nothing greyed
            unused = {}
        for f in self._fields.values():
            if hasattr(f, "set_unused"):
                f.set_unused(unused.get(f.dotted))

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
        self._keeping_focus_still(lambda: self._mark_now(errors))

    def _mark_now(self, errors):
        for f in self._fields.values():
            f.clear_mark()
        for g in self._groups.values():
            g.set_error("")
        shown: dict[int, list[str]] = {}
        unplaced = []  # problems no field or group can show: the banner's
        for p, m in errors:
            target, rest = self._resolve(parse_path(p))
            if target is None:
                unplaced.append((p, m))  # `kind`, `<top>`, an unknown key
                continue
            msgs = shown.setdefault(id(target), [])
            msgs.append(f"{p}: {m}")
            if isinstance(target, _Field):
                target.mark(rest, "\n".join(msgs))
            else:
                target.set_error("\n".join(msgs))
            for g in target.chain + ([target] if isinstance(target, _Group) else []):
                if not g.coll.isExpanded():
                    g.coll.expand(animate=False)
        # one message per problem: at its field, or, for one no field shows, in the banner
        if unplaced:
            more = f"  (+{len(unplaced) - 1} more)" if len(unplaced) > 1 else ""
            self.banner.setText(f"⚠ {unplaced[0][0]}: {unplaced[0][1]}{more}")
            self.banner.setToolTip("\n".join(f"{p}: {m}" for p, m in unplaced))
        self.banner.setVisible(bool(unplaced))


def _known_kind(kind) -> bool:
    """A kind the registry knows (a file may hold a list or table there: no crash, no form)."""
    return isinstance(kind, str) and kind in mechanisms()


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
