"""A scenario's `[plan]` section: what `kvviz plan` searches (kvviz.plan) — the targets, the
decision variables with their values, the rates. Never an input of a run: a run ignores it.

Held apart from kvviz.plan so a scenario model can declare it without importing the planner."""
from __future__ import annotations

from pydantic import model_validator

from .scenario import FieldError, Section, param


class PlanAxis(Section):
    """One decision variable: each value sets every path in `paths` (to value × per_unit, where
    per_unit is given: an SSD count sets the SSD tier's capacity and bandwidth together)."""
    name: str = param("", description="What the axis is called in the output (default: its first path)")
    paths: list[str] = param(min_length=1, description="Setting paths (as `kvviz run --set PATH=VALUE` takes "
                                                       "them, e.g. tiers.0.capacity_gb) this axis sets")
    per_unit: list[float] = param([], description="Per path, the amount one unit of the axis sets (empty: each "
                                                  "value is set as it is)")
    values: list[float] = param(min_length=1, description="The values searched, ascending")
    monotone: bool = param(True, description="true: more of this never makes a target worse (the search infers "
                                             "from it, and a test holds it on the bundled scenario); false: "
                                             "searched value by value, nothing inferred")

    @model_validator(mode="after")
    def _check(self) -> PlanAxis:
        if self.per_unit and len(self.per_unit) != len(self.paths):
            raise FieldError("per_unit", f"one amount per path ({len(self.paths)}), got {len(self.per_unit)}")
        if any(b <= a for a, b in zip(self.values, self.values[1:])):
            raise FieldError("values", "must be ascending, each value once")
        return self

    @property
    def label(self) -> str:
        return self.name or self.paths[0]

    def settings(self, value: float) -> dict[str, float]:
        if not self.per_unit:
            return {p: value for p in self.paths}
        return {p: value * u for p, u in zip(self.paths, self.per_unit)}


class PlanSpec(Section):
    """`kvviz plan`'s search: the cheapest grid point (least cost_per_hour) meeting every target."""
    targets: list[str] = param([], description="Targets every mix must meet, METRIC<=VALUE or METRIC>=VALUE "
                                               "(METRIC a metric path, e.g. policies.lru.ttft_p99_ms <= 20000)")
    axes: list[PlanAxis] = param([], description="The decision variables and their values (the grid is "
                                                 "every combination)")
    tolerance: float = param(0.05, ge=0, le=1, unit="share",
                             description="The search infers from a run only when it misses a target by more "
                                         "than this share of its value (or meets it with this much to spare). "
                                         "5%: the largest rise of TTFT p99 with more capacity measured on the "
                                         "bundled plan grid (2.1%) and as much again; before answering, the "
                                         "search runs the edge of what it inferred, and a wrong inference there "
                                         "makes it run every point it had inferred (docs/mechanisms/plan.md)")
    rate_path: str = param("workload.session_rate_per_s", description="The setting the rates set")
    rates: list[float] = param([], description="Arrival rates to plan for, one mix each (empty: the "
                                               "scenario's own)")
