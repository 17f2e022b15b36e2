"""Running any scenario: refused up front if too large, dispatched to its mechanism by `kind`,
and its `[[expect]]` checks evaluated on the metrics."""
from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

import numpy as np

from .checks import evaluate
from .errors import ScenarioError
from .mechanisms import mechanisms
from .result import Result
from .runs import PartCache, complete
from .size_guard import Estimate, check_size

if TYPE_CHECKING:
    from .scenario import ScenarioBase


def check_run_size(scenario: ScenarioBase, max_memory_gb: float | None = None) -> Estimate | None:
    """The run's estimate, asked of its mechanism's record; a ScenarioError at the field that
    drives the size if it is beyond the memory limit."""
    return check_size(mechanisms()[scenario.kind].estimate(scenario), max_memory_gb)


@contextmanager
def representable() -> Iterator[None]:
    """Numpy overflow and invalid casts (a float beyond int64 cast to ns) raise instead of
    warning and going on with garbage, and reach the user as one ScenarioError."""
    try:
        with np.errstate(over="raise", invalid="raise"):
            yield
    except (OverflowError, ZeroDivisionError, FloatingPointError) as e:
        # validation bounds each value (kvviz.limits); values can still combine past int64 ns
        raise ScenarioError(f"the values combine beyond what the simulation can represent ({e}); "
                            "look for a time, size or count far too large or too small") from None


def simulate(scenario: ScenarioBase, max_memory_gb: float | None = None, cache: PartCache | None = None,
             ran: list[str] | None = None) -> Result:
    """Run any scenario: dispatches on its `kind`. Pure and deterministic. A scenario's
    `[[expect]]` checks are evaluated on the metrics and reported under `metrics.checks`.
    A run estimated to need more memory than `max_memory_gb` (default: kvviz.size_guard's
    limit) is refused before it starts. `cache` (kvviz.runs.MemoryCache or DiskCache) keeps the
    parts of a run made of parts (Mechanism.plan) and reuses those whose inputs are unchanged;
    `ran`, if given, gets the names of the parts that ran."""
    check_run_size(scenario, max_memory_gb)
    record = mechanisms()[scenario.kind]
    with representable():
        result: Result
        if record.plan is not None and (cache is not None or ran is not None):
            result = complete(record.plan(scenario), scenario, cache, ran)
        else:
            result = record.simulate(scenario)
    return with_checks(result)


def with_checks(result: Result) -> Result:
    """`result` with its scenario's `[[expect]]` checks evaluated under `metrics.checks`."""
    expect = getattr(result.scenario, "expect", ())
    if not expect:
        return result
    metrics = result.metrics_dict()
    metrics["checks"] = evaluate(expect, metrics)
    return Result(result.scenario, result.trace, metrics, result.events)
