"""The parameter panel: a form generated from a scenario model's fields.

Nothing here knows a mechanism. The panel walks the pydantic model of the loaded scenario's
`kind` (`kvviz.mechanisms.mechanisms()[kind].model`) and makes one editor per field:

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
tooltip) and emits `invalid("path: message")`; one message per problem: a problem no field can
show (the kind, an unknown key) goes to a banner below the form, and the field being typed in
never moves. Invalid data never leaves the panel and nothing raises.

Save writes TOML atomically (temp file in the same folder, then os.replace) through tomlkit, so
the file's comments and layout survive: only changed values are rewritten, in place.
"""
from __future__ import annotations

import copy
from pathlib import Path

from PySide6.QtWidgets import QWidget

from kvviz import ScenarioError, parse_scenario
from kvviz.io import read_text
from kvviz.mechanisms import mechanisms
from kvviz.outputs import check_outputs, scenario_inputs, write_text
from kvviz.scenario import file_fields, rebase
from kvviz.scenario_data import read_toml

from .field_tree import FieldTree, _get_in, _known_kind
from .fields import _Field
from .groups import _Group
from .toml_sync import render_toml
from .values import _MISSING, _plain, _related, parse_path


class ParameterPanel(FieldTree):
    """Edit a scenario file's parameters; see the module docstring. The form, the data and the
    signals (`edited`, `invalid`, `dirty_changed`) come from FieldTree."""

    # --- public API --------------------------------------------------------------------
    def load(self, path: str, *, strict: bool = True) -> None:
        """Read a scenario file and build its form. Raises ScenarioError when the file cannot be
        read or parsed, or (strict) does not validate; the panel is unchanged then. With
        strict=False a file of a known kind that fails validation is shown with its errors marked."""
        path = str(path)
        data = read_toml(path)
        text = read_text(path)  # as read_toml read it (a byte-order mark dropped)
        if strict or not _known_kind(data.get("kind")):
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

    def file_data(self) -> dict:
        """The scenario as its file has it (a copy): what edits are measured against."""
        return copy.deepcopy(self._file_data or {})

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
        With `path`, Save As (the panel then edits that file). Refuses invalid edits, and a
        target kvviz.outputs refuses (a trace the scenario reads, a device, a read-only file)
        with ScenarioError; a failed write (ScenarioError, OSError) leaves the target file and
        the panel's values and path as they were."""
        if self._data is None:
            raise RuntimeError("no scenario loaded")
        target = Path(path if path is not None else self._path)
        if self._errors:
            p, m = self._errors[0]
            raise ScenarioError(f"not saved, the edits are invalid: {m}", str(target), p)
        moved = self._rebased_files(self._path, target) if path is not None and self._path else {}
        data = copy.deepcopy(self._data)
        for parts, value in moved.items():  # each is a value `data` has: its tables are there
            node = data
            for key in parts[:-1]:
                node = node[key]
            node[parts[-1]] = value
        if path is not None and self._model is not None:  # never over a trace the scenario reads;
            # its own file ([0]) is no input here: saving over it is what Save does
            check_outputs([("Save As", target, "TOML")], scenario_inputs(self._path, self._model)[1:])
        text = render_toml(self._file_text, self._file_data, data)
        write_text(target, text)  # only then does the panel take the new path and values
        for parts, value in moved.items():
            self._write(parts, value)
            if parts in self._fields:
                self._fields[parts].show(value)
        self._path, self._file_text = str(target), text
        self._file_data = copy.deepcopy(self._data)
        self._update_dirty()
        if path is not None:
            self._validate(emit_edited=False)  # relative paths in the data now resolve against the new file

    def _rebased_files(self, old: str, new: Path) -> dict[tuple, str]:
        """Saved in another folder, a relative trace or token file would name a file that is
        not there (Save As to /tmp broke the bundled Mooncake trace's path): each such field's
        value rewritten to name the same file from the new one."""
        kind = self._data.get("kind")
        if not _known_kind(kind):
            return {}
        moved = {}
        for parts in file_fields(mechanisms()[kind].model):
            value = self._get(parts)
            if isinstance(value, str) and value and rebase(value, old, new) != value:
                moved[parts] = rebase(value, old, new)
        return moved

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

    def value(self, field_path: str, of_file: bool = False):
        """A field's value as edited (or as the file has it); None when not set."""
        v = _get_in(self._file_data if of_file else self._data, parse_path(field_path))
        return None if v is _MISSING else copy.deepcopy(v)

    def mark_refused(self, field_path: str, message: str) -> None:
        """Mark a field whose value validated but which the simulation refused (a picked turn
        the workload no longer has), as a validation error is marked; the next edit clears it."""
        self._refused = [(field_path, message)]
        self._mark(self._errors + self._refused)

    def refused(self) -> list[tuple[str, str]]:
        """The simulation's refusal still marked (field path, message), if any."""
        return list(self._refused)

    def clear_refused(self) -> None:
        """Unmark the simulation's refusal (the memory limit was raised: the run is tried again)."""
        self._refused = []
        self._mark(self._errors)

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
