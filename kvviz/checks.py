"""Expectations a scenario states about its own results, checked after every run.

A scenario may list `[[expect]]` tables: a metric path (as `kvviz sweep --metric` takes it) and
a bound (`equals`, with a relative tolerance, `min`/`max`, or another metric it must exceed,
`greater_than`, or not fall below, `at_least`). They are checks, never inputs: the
simulation runs the same with or without them, and a failed one is reported, not hidden. The
bundled scenarios use them to pin what each seed states and the simulation reproduces, so
`kvviz check scenarios/*.toml` re-checks every claim headless.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .format import format_value
from .metric_paths import metric_value

if TYPE_CHECKING:  # pydantic is imported by the scenario's loading, not here
    from .scenario import Expectation


def evaluate(expectations: Iterable[Expectation], metrics: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per expectation: metric, expect, actual, ok (and why)."""
    rows = []
    for e in expectations:
        try:
            v = metric_value(metrics, e.metric)
        except KeyError:
            rows.append({"metric": e.metric, "expect": e.wanted(), "actual": "no such metric", "ok": False,
                         "why": e.why})
            continue
        others: dict[str, Any] = {}
        expect = e.wanted()
        for path in (e.greater_than, e.at_least):
            if path:
                try:
                    others[path] = metric_value(metrics, path)
                    expect += f" ({format_value(others[path])})"
                except KeyError:
                    expect += " (no such metric)"
        actual = f'"{v}"' if isinstance(v, str) else format_value(v)
        rows.append({"metric": e.metric, "expect": expect, "actual": actual, "ok": e.holds(v, others), "why": e.why})
    return rows
