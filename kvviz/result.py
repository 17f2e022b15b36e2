"""A finished run: the scenario it came from, its Trace and its metrics. Read-only."""
from __future__ import annotations

import json
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping

from .trace import Trace

if TYPE_CHECKING:  # pydantic is imported by the scenario's loading, not here
    from .scenario import ScenarioBase


def _freeze(x: Any) -> Any:
    if isinstance(x, dict):
        return MappingProxyType({k: _freeze(v) for k, v in x.items()})
    if isinstance(x, list):
        return tuple(_freeze(v) for v in x)
    return x


def _thaw(x: Any) -> Any:
    if isinstance(x, Mapping):
        return {k: _thaw(v) for k, v in x.items()}
    if isinstance(x, tuple):
        return [_thaw(v) for v in x]
    return x


@dataclass(frozen=True, eq=False)
class Result:
    scenario: ScenarioBase      # the validated, frozen scenario model (of the mechanism's kind)
    trace: Trace
    metrics: Mapping[str, Any]  # JSON-able values only
    events: int = 0             # engine events processed (for benchmarks)

    def __post_init__(self) -> None:
        object.__setattr__(self, "metrics", _freeze(dict(self.metrics)))

    def __reduce__(self) -> tuple[type[Result], tuple[Any, ...]]:  # pickles (to a worker process and back) with plain metrics
        return (Result, (self.scenario, self.trace, self.metrics_dict(), self.events))

    def metrics_dict(self) -> dict[str, Any]:
        thawed: dict[str, Any] = _thaw(self.metrics)
        return thawed

    def to_json(self, **kw: Any) -> str:
        return json.dumps({"kind": self.scenario.kind, "name": self.scenario.name,
                           "metrics": self.metrics_dict()}, **kw)
