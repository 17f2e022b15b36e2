"""A scenario as plain data, before it is validated: read from its TOML file (nesting bounded),
and `--set PATH=VALUE` overrides applied. No pydantic here: sweeps and the app edit the data,
and `kvviz.loading` validates it into the model of its kind.
"""
from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

from .errors import ScenarioError
from .io import read_text
from .limits import MAX_DEPTH, nesting_depth


def read_toml(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    text = read_text(p)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError(f"malformed TOML: {e}", str(p)) from None
    except RecursionError:  # the parser recurses per nesting level
        raise ScenarioError(f"tables or arrays nested too deep (more than {MAX_DEPTH} levels)", str(p)) from None
    if nesting_depth(data) > MAX_DEPTH:
        raise ScenarioError(f"tables or arrays nested too deep (more than {MAX_DEPTH} levels)", str(p))
    return data


def parse_value(text: str) -> Any:
    """`--set` values are TOML values (numbers, booleans, [lists], "strings"); a bare word
    that is not valid TOML is taken as a string, so `--set prefetch.eviction=lazy` works."""
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
    except RecursionError:
        raise ScenarioError(f"the value is nested too deep (more than {MAX_DEPTH} levels)", "--set") from None
    if nesting_depth(value) > MAX_DEPTH:
        raise ScenarioError(f"the value is nested too deep (more than {MAX_DEPTH} levels)", "--set")
    return value


def apply_override(data: dict[str, Any], assignment: str, source: str = "--set") -> dict[str, Any]:
    """Return a copy of `data` with `a.b.c=value` applied. List items are addressed by index
    (`rungs.2.hbm_hit_pct`). Unknown names are left for validation to reject by path."""
    if "=" not in assignment:
        raise ScenarioError(f"expected PATH=VALUE, got {assignment!r}", source)
    path, text = assignment.split("=", 1)
    parts = path.strip().split(".")
    if not path.strip():
        raise ScenarioError(f"empty field path in {assignment!r}", source)
    if not all(p.strip() for p in parts):
        raise ScenarioError(f"empty segment in the field path {path.strip()!r}", source)
    parts = [p.strip() for p in parts]
    out = copy.deepcopy(data)
    node: Any = out
    for i, part in enumerate(parts[:-1]):
        key: Any = int(part) if isinstance(node, list) and part.isdigit() else part
        try:
            nxt = node[key]
        except (KeyError, IndexError, TypeError):
            if isinstance(node, dict):
                nxt = node[key] = {}
            else:
                raise ScenarioError("no such field", source, ".".join(parts[: i + 1])) from None
        node = nxt
    last = parts[-1]
    if isinstance(node, list):
        if not last.isdigit() or int(last) >= len(node):
            raise ScenarioError("no such list item", source, path.strip())
        node[int(last)] = parse_value(text.strip())
    elif isinstance(node, dict):
        node[last] = parse_value(text.strip())
    else:
        raise ScenarioError("is not a table", source, ".".join(parts[:-1]))
    return out
