"""Loading a scenario: plain data (kvviz.scenario_data) validated into the model of its `kind`,
picked from the mechanism list (kvviz.mechanisms)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ScenarioError
from .limits import MAX_DEPTH, nesting_depth
from .mechanisms import mechanisms
from .scenario import validate
from .scenario_data import apply_override, read_toml
from .size_guard import check_size, validation_estimate

if TYPE_CHECKING:
    from .scenario import ScenarioBase


def parse_scenario(data: dict[str, Any], source: str = "<scenario>", max_memory_gb: float | None = None
                   ) -> ScenarioBase:
    """Validate a plain dict (as read from TOML) into the model of its `kind`; data whose arrays
    would take more than `max_memory_gb` to validate (kvviz.size_guard) is refused first."""
    kinds = mechanisms()
    kind = data.get("kind")
    if kind is None:
        raise ScenarioError(f"required field is missing (one of: {', '.join(kinds)})", source, "kind")
    if not isinstance(kind, str):
        raise ScenarioError(f"must be a string, one of: {', '.join(kinds)} (got {kind!r:.60})", source, "kind")
    if nesting_depth(data) > MAX_DEPTH:  # data built in code or by --set, not read by read_toml
        raise ScenarioError(f"tables or arrays nested too deep (more than {MAX_DEPTH} levels)", source)
    if kind not in kinds:
        raise ScenarioError(f"unknown kind {kind!r} (one of: {', '.join(kinds)})", source, "kind")
    try:
        check_size(validation_estimate(data), max_memory_gb, "validate")
    except ScenarioError as e:
        e.file = source
        raise
    scenario: ScenarioBase = validate(kinds[kind].model, data, source)  # that kind's own model
    return scenario


def load_scenario(path: str | Path, overrides: list[str] | tuple[str, ...] = (), max_memory_gb: float | None = None
                  ) -> ScenarioBase:
    data = read_toml(path)
    for assignment in overrides:
        data = apply_override(data, assignment)
    return parse_scenario(data, str(path), max_memory_gb)
