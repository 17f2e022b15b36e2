"""One plan: a scenario (its `[plan]` section, or flags) -> per rate, the cheapest mix meeting the
targets, the cost-latency front, and how many timed runs it took against the grid's size."""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ..errors import ScenarioError
from ..loading import parse_scenario
from ..mechanisms.prefix_cache.model import PrefixCacheScenario, Workload
from ..mechanisms.prefix_cache.pricing import hourly_in_blocks
from ..mechanisms.prefix_cache.workload import load
from ..plan_spec import PlanAxis, PlanSpec
from ..scenario_data import apply_override
from ..sweep import _fmt
from .bound import TTFTBound
from .grid import COST_METRIC, MISSING, Grid, PointValues, build_grid, run_point
from .search import OnResult, Outcome, exhaustive, search
from .targets import Target, parse_target

MAX_LOOKUPS = 50_000_000
# grid points a plan takes: the search holds which point is above which (a bool per pair, 25 MB here)
MAX_POINTS = 5_000

Progress = Callable[[int], None]  # timed runs done so far (in this rate's plan)
PlanResult = Callable[[int, int, PointValues], None]  # (rate index, point, its values) as each run ends


@dataclass
class RatePlan:
    rate: float | None
    targets: tuple[Target, ...]
    grid: Grid
    outcome: Outcome
    lower_bounds: np.ndarray | None  # per point, the bound on the first target's metric (None: no bound)
    seconds: float

    def point(self, i: int) -> dict[str, Any]:
        v = self.outcome.values.get(i, {})
        out: dict[str, Any] = {"settings": dict(sorted(self.grid.settings[i].items())), COST_METRIC: float(self.grid.cost[i])}
        out.update({t.metric: v.get(t.metric) for t in self.targets})
        return out

    def front(self) -> list[int]:
        """The points run, cheapest first, each better on the first target's metric than every
        cheaper one (the cost-latency Pareto front of what was measured)."""
        t = self.targets[0]
        sign = 1.0 if t.op == "<=" else -1.0
        out, best = [], math.inf
        ran = sorted(self.outcome.values, key=lambda i: (self.grid.cost[i], i))
        for i in ran:
            v = self.outcome.values[i].get(t.metric)
            if v is not None and sign * v < best:
                out.append(i)
                best = sign * v
        return out

    def closest(self) -> int | None:
        """With no feasible point: the run that misses the targets by least (its largest relative
        miss); the search runs the grid's top point(s) then, so one is among them."""
        if not self.outcome.values:
            return None
        return min(self.outcome.values, key=lambda i: (max(t.violation(self.outcome.values[i].get(t.metric))
                                                           for t in self.targets), self.grid.cost[i], i))

    def to_dict(self) -> dict[str, Any]:
        o = self.outcome
        out: dict[str, Any] = {"rate": self.rate, "targets": [str(t) for t in self.targets],
               "best": self.point(o.best) if o.best is not None else None,
               "front": [self.point(i) for i in self.front()],
               "runs": o.runs, "grid_runs": len(self.grid), "bound_pruned": o.bound_pruned,
               "verified": len(o.verified),  # of the runs: inferred misses run as the search's check
               "seconds": round(self.seconds, 3)}
        if o.best is None:
            c = self.closest()
            out["closest"] = self.point(c) if c is not None else None
            out["message"] = "no mix on the grid meets every target"
        if o.broken:
            out["monotonicity_broken"] = [{"missed": self.grid.settings[a], "met": self.grid.settings[b]}
                                          for a, b in o.broken]
        return out


def resolve_targets(spec: PlanSpec, flags: list[str] | None, source: str) -> tuple[Target, ...]:
    if flags:
        return tuple(parse_target(t, source, "--target") for t in flags)
    if not spec.targets:
        raise ScenarioError("no target: give [plan] targets or --target METRIC<=VALUE", source, "plan.targets")
    return tuple(parse_target(t, source, f"plan.targets[{k}]") for k, t in enumerate(spec.targets))


def resolve_axes(spec: PlanSpec, flags: list[str] | None, source: str) -> tuple[PlanAxis, ...]:
    """`--axis PATH=V1,V2,...` (each monotone) replaces the section's axes."""
    from ..sweep import parse_values
    if flags:
        axes = []
        for text in flags:
            path, eq, values = text.partition("=")
            if not eq or not path.strip():
                raise ScenarioError(f"expected PATH=V1,V2,..., got {text!r}", source, "--axis")
            vals = parse_values(values, "--axis")
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
                raise ScenarioError(f"an axis takes numbers, got {values!r}", source, "--axis")
            try:
                axes.append(PlanAxis(paths=[path.strip()], values=sorted(set(vals))))
            except ValueError as e:
                raise ScenarioError(str(e).splitlines()[-1].strip(), source, "--axis") from None
        return tuple(axes)
    if not spec.axes:
        raise ScenarioError("no decision variable: give [[plan.axes]] or --axis PATH=V1,V2,...", source, "plan.axes")
    return tuple(spec.axes)


class Pricing:
    """Each point's cost per hour before it runs (pricing.py, whole blocks as the run holds them),
    and the bound, both from the workload (loaded once per distinct workload)."""

    def __init__(self) -> None:
        self._bounds: dict[tuple[Workload, bool], TTFTBound] = {}

    def bound(self, sc: PrefixCacheScenario) -> TTFTBound:
        key = (sc.workload, sc.cache.partial_block)
        if key not in self._bounds:
            self._bounds[key] = TTFTBound(load(sc, MAX_LOOKUPS))
        return self._bounds[key]

    def price(self, sc: PrefixCacheScenario) -> float:
        bb = self.bound(sc).blocks.block_tokens * sc.model.kv_bytes_per_token
        return hourly_in_blocks(sc, bb)["total"]


def _runner(targets: Sequence[Target], executor: Executor | None, workers: int, progress: Progress | None,
            counter: list[int], source: str, field: str) -> Callable[[list[int], Grid, OnResult | None], list[PointValues]]:
    paths = sorted({t.metric for t in targets})

    def run(points: list[int], grid: Grid, on_result: OnResult | None = None) -> list[PointValues]:
        from ..executor import map_indexed
        tasks = [(grid.scenarios[i], paths) for i in points]

        def got(k: int, v: PointValues) -> None:  # the result first: a progress signal then shows the run that just ended
            counter[0] += 1
            if on_result:
                on_result(points[k], v)
            if progress:
                progress(counter[0])
        out = map_indexed(run_point, tasks, executor=executor, n_workers=workers, on_result=got)
        for v in out:
            if v.get(MISSING):
                raise ScenarioError(f"unknown metric {v[MISSING][0]!r} (a metric path as `kvviz sweep --metric` "
                                    f"takes it, e.g. policies.lru.ttft_p99_ms)", source, field)
        return out
    return run


def bound_check(grid: Grid, targets: Sequence[Target], pricing: Pricing) -> tuple[np.ndarray, np.ndarray | None]:
    """(per point: the bound proves it misses a `<=` target; per point: the bound on the first
    target's metric, or None where it has none)."""
    infeasible = np.zeros(len(grid), dtype=bool)
    lower = None
    for t in targets:
        if t.op != "<=":
            continue
        bounds = [pricing.bound(s).metric_bound(s, t.metric) for s in grid.scenarios]
        if any(v is None for v in bounds):
            continue
        lb = np.array(bounds)
        if t is targets[0]:
            lower = lb
        infeasible |= lb > t.value
    return infeasible, lower


def plan(data: dict[str, Any], source: str, targets_flags: list[str] | None = None,
         axes_flags: list[str] | None = None, rates: Sequence[float] | None = None, exhaustive_grid: bool = False,
         workers: int = 1, executor_spec: str | None = None, progress: Progress | None = None,
         on_result: PlanResult | None = None, use_bound: bool = True) -> list[RatePlan]:
    """Plan every rate (the scenario's own when none). `data`: the scenario as read (overrides
    applied). `on_result(rate index, point, values)` as each run ends."""
    sc = parse_scenario(data, source)
    if not isinstance(sc, PrefixCacheScenario):
        raise ScenarioError(f"kvviz plan takes a prefix_cache scenario (this is {sc.kind})", source, "kind")
    spec = sc.plan
    targets = resolve_targets(spec, targets_flags, source)
    axes = resolve_axes(spec, axes_flags, source)
    n = 1
    for a in axes:
        n *= len(a.values)
    if n > MAX_POINTS:
        field = "--axis" if axes_flags else "plan.axes"
        raise ScenarioError(f"the grid has {n:,} points; a plan takes at most {MAX_POINTS:,} (fewer values per "
                            f"axis)", source, field)
    each_rate: list[float | None] = list(rates) if rates else list(spec.rates)
    pricing = Pricing()
    plans: list[RatePlan] = []
    from contextlib import nullcontext

    from ..executor import open_executor
    pooled = workers > 1 or (executor_spec not in (None, "local"))
    with (open_executor(executor_spec, workers) if pooled else nullcontext(None)) as pool:
        for k, rate in enumerate(each_rate or [None]):
            d = data if rate is None else apply_override(data, f"{spec.rate_path}={_fmt(rate)}", "--rates")
            t0 = time.perf_counter()
            grid = build_grid(d, axes, source, pricing.price)
            counter = [0]
            run = _runner(targets, pool, workers, progress, counter, source, "--target" if targets_flags else "plan.targets")

            def runs(points: list[int], cb: OnResult | None = None, grid: Grid = grid,
                     run: Callable[[list[int], Grid, OnResult | None], list[PointValues]] = run,
                     k: int = k) -> list[PointValues]:
                return run(points, grid, partial(on_result, k) if on_result else None)
            infeasible, lower = bound_check(grid, targets, pricing) if use_bound else (None, None)
            if exhaustive_grid:
                outcome = exhaustive(grid, targets, runs)
            else:
                outcome = search(grid, targets, runs, infeasible, batch=max(1, workers), tolerance=spec.tolerance)
            plans.append(RatePlan(rate, targets, grid, outcome, lower, time.perf_counter() - t0))
    return plans
