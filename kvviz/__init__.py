"""kvviz: simulate how KV-cache entries and embedding rows move between memory tiers.

    from kvviz import load_scenario, simulate
    result = simulate(load_scenario("scenarios/rope_prefetch_16.toml"))
    result.metrics["speedup"], result.trace.spans

This package never imports Qt; the desktop front end lives in `app/`.
"""
from .errors import ScenarioError
from .registry import simulate
from .result import Result
from .scenario import apply_override, load_scenario, parse_scenario, scenario_to_dict
from .trace import Trace, TraceBuilder

__all__ = ["ScenarioError", "Result", "Trace", "TraceBuilder", "load_scenario", "parse_scenario",
           "apply_override", "scenario_to_dict", "simulate"]
# The registry of kinds is kvviz.registry.mechanisms(); it is not re-exported here because
# `kvviz.mechanisms` is the subpackage holding the mechanism modules.
__version__ = "0.1.0"
