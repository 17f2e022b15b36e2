"""Style-preserving TOML update: rewrite only the changed values, keep comments and layout."""
from __future__ import annotations

import tomllib
import warnings

import tomlkit

from .values import _same

# --- style-preserving TOML update --------------------------------------------------------

def render_toml(file_text: str, file_data: dict, data: dict) -> str:
    """`file_text` (which holds `file_data`) with the values that differ in `data` rewritten in
    place (tomlkit); written afresh when tomlkit cannot follow the edit."""
    try:
        doc = tomlkit.parse(file_text)
        _sync_table(doc, file_data, data)
        text = tomlkit.dumps(doc)
        if _same(tomllib.loads(text), data):
            return text
        warnings.warn("kvviz: could not keep the file's layout for this edit; writing it afresh", stacklevel=2)
    except Exception as e:  # tomlkit could not follow this edit; never lose the user's data
        warnings.warn(f"kvviz: could not keep the file's layout ({e}); writing it afresh", stacklevel=2)
    text = tomlkit.dumps(data)
    if not _same(tomllib.loads(text), data):
        raise RuntimeError("kvviz: the scenario cannot be written as TOML")
    return text


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
