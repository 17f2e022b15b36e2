"""Running any scenario: refused up front if too large, dispatched to its mechanism by `kind`,
and its `[[expect]]` checks evaluated on the metrics."""
from __future__ import annotations

import numpy as np

from .checks import evaluate
from .errors import ScenarioError
from .mechanisms import mechanisms
from .result import Result
from .size_guard import Estimate, check_size


def check_run_size(scenario, max_memory_gb: float | None = None) -> Estimate | None:
    """The run's estimate, asked of its mechanism's record; a ScenarioError at the field that
    drives the size if it is beyond the memory limit."""
    return check_size(mechanisms()[scenario.kind].estimate(scenario), max_memory_gb)


def simulate(scenario, max_memory_gb: float | None = None) -> Result:
    """Run any scenario: dispatches on its `kind`. Pure and deterministic. A scenario's
    `[[expect]]` checks are evaluated on the metrics and reported under `metrics.checks`.
    A run estimated to need more memory than `max_memory_gb` (default: kvviz.size_guard's
    limit) is refused before it starts."""
    check_run_size(scenario, max_memory_gb)
    try:
        # numpy overflow and invalid casts (a float beyond int64 cast to ns) raise instead of
        # warning and going on with garbage
        with np.errstate(over="raise", invalid="raise"):
            result = mechanisms()[scenario.kind].simulate(scenario)
    except (OverflowError, ZeroDivisionError, FloatingPointError) as e:
        # validation bounds each value (kvviz.limits); values can still combine past int64 ns
        raise ScenarioError(f"the values combine beyond what the simulation can represent ({e}); "
                            "look for a time, size or count far too large or too small") from None
    expect = getattr(scenario, "expect", ())
    if not expect:
        return result
    metrics = result.metrics_dict()
    metrics["checks"] = evaluate(expect, metrics)
    return Result(result.scenario, result.trace, metrics, result.events)
