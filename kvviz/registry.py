"""Mechanisms by `kind`. Each mechanism module exposes MODEL (its scenario model) and
`simulate(scenario) -> Result`; adding one means adding a module and a line below."""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from typing import Callable

# kind -> module under kvviz.mechanisms
_MODULES = {
    "rope_window": "rope_window",
    "engram_window": "engram_window",
    "ladder": "ladder",
    "attention_store": "attention_store",
}


@dataclass(frozen=True)
class Mechanism:
    kind: str
    model: type
    simulate: Callable
    # (lane name, field path, what it does): picking a span on that lane (a double-click in the
    # app) sets the field to the span's ref, e.g. the AttentionStore turn whose layers are drawn
    pick: tuple[str, str, str] | None = None
    # result -> (t0, t1) in ns where a view of a new scenario opens (default: the whole run)
    initial_range: Callable | None = None
    # scenario data (a dict, as in the file) -> {field path: why it is ignored}: fields another
    # field overrides, which the app greys out so their values are not read as in effect
    inactive: Callable[[dict], dict[str, str]] | None = None
    # what a run of this kind carries beyond the timeline, for the views that read it:
    # "rope_bound" (an attention profile to hold against RoPE's bound), "ladder" (hit-rate
    # rungs), "policies" (placement policies compared side by side)
    analyses: tuple[str, ...] = ()


@cache
def mechanisms() -> dict[str, Mechanism]:
    out = {}
    for kind, mod in _MODULES.items():
        m = importlib.import_module(f"kvviz.mechanisms.{mod}")
        out[kind] = Mechanism(kind, m.MODEL, m.simulate, getattr(m, "PICK", None), getattr(m, "INITIAL_RANGE", None),
                              getattr(m, "INACTIVE", None), getattr(m, "ANALYSES", ()))
    return out


def simulate(scenario, max_memory_gb: float | None = None):
    """Run any scenario: dispatches on its `kind`. Pure and deterministic. A scenario's
    `[[expect]]` checks are evaluated on the metrics and reported under `metrics.checks`.
    A run estimated to need more memory than `max_memory_gb` (default: kvviz.size_guard's
    limit) is refused before it starts."""
    from .size_guard import check_size
    check_size(scenario, max_memory_gb)
    import numpy as np
    try:
        # numpy overflow and invalid casts (a float beyond int64 cast to ns) raise instead of
        # warning and going on with garbage
        with np.errstate(over="raise", invalid="raise"):
            result = mechanisms()[scenario.kind].simulate(scenario)
    except (OverflowError, ZeroDivisionError, FloatingPointError) as e:
        # validation bounds each value (kvviz.limits); values can still combine past int64 ns
        from .errors import ScenarioError
        raise ScenarioError(f"the values combine beyond what the simulation can represent ({e}); "
                            "look for a time, size or count far too large or too small") from None
    expect = getattr(scenario, "expect", ())
    if not expect:
        return result
    from .checks import evaluate
    from .result import Result
    metrics = result.metrics_dict()
    metrics["checks"] = evaluate(expect, metrics)
    return Result(result.scenario, result.trace, metrics, result.events)
