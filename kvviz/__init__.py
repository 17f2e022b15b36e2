"""kvviz: simulate how KV-cache entries and embedding rows move between memory tiers.

    from kvviz import load_scenario, simulate
    result = simulate(load_scenario("scenarios/rope_prefetch_16.toml"))
    result.metrics["speedup"], result.trace.spans

This package never imports Qt; the desktop front end lives in `app/`.
"""
from importlib import import_module
from typing import TYPE_CHECKING, Any

from .errors import ScenarioError

if TYPE_CHECKING:  # what a type checker sees of the names below, imported at run time on first use
    from .loading import load_scenario, parse_scenario
    from .result import Result
    from .scenario import scenario_to_dict
    from .scenario_data import apply_override
    from .simulation import simulate
    from .trace import Trace, TraceBuilder

# Imported on first use, so `kvviz replay` (numpy, no pydantic) starts in a fraction of the time.
_LAZY = {"simulate": "simulation", "Result": "result", "Trace": "trace", "TraceBuilder": "trace",
         "apply_override": "scenario_data", "load_scenario": "loading", "parse_scenario": "loading",
         "scenario_to_dict": "scenario"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["ScenarioError", "Result", "Trace", "TraceBuilder", "load_scenario", "parse_scenario",
           "apply_override", "scenario_to_dict", "simulate"]
# The mechanisms by kind are kvviz.mechanisms.mechanisms(): `kvviz.mechanisms` is the subpackage
# holding them, so the function is not re-exported here under the same name.
__version__ = "0.1.0"
