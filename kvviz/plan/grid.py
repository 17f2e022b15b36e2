"""The plan's grid: every combination of the axes' values, each point a set of `--set`
overrides on the scenario; its validated scenario, its cost per hour (known before any run:
prices × the capacities and links it sets), and the timed run that measures its targets."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import product
from typing import Any

import numpy as np

from ..errors import ScenarioError
from ..loading import parse_scenario
from ..mechanisms.prefix_cache.model import PrefixCacheScenario
from ..metric_paths import metric_value
from ..plan_spec import PlanAxis
from ..scenario_data import apply_override
from ..simulation import check_run_size, simulate
from ..sweep import _fmt

COST_METRIC = "cost_per_hour"
# A timed run's measures: metric path -> its value (a number, or None where the run has no number
# there), and under MISSING the paths its metrics do not have (a list of them)
PointValues = dict[str, Any]


def settings_of(axes: tuple[PlanAxis, ...], combo: tuple[int, ...]) -> dict[str, float]:
    out: dict[str, float] = {}
    for axis, i in zip(axes, combo):
        out.update(axis.settings(axis.values[i]))
    return out


def with_settings(data: dict[str, Any], settings: dict[str, float], source: str) -> dict[str, Any]:
    for path, v in settings.items():
        v = int(v) if float(v).is_integer() and path.endswith(("gpus", "count", "blocks")) else v
        data = apply_override(data, f"{path}={_fmt(v)}", source)
    return data


@dataclass(frozen=True)
class Grid:
    axes: tuple[PlanAxis, ...]
    combos: np.ndarray          # (points, axes) value indices, row-major
    settings: tuple[dict[str, float], ...]  # per point: setting path -> value
    cost: np.ndarray            # per point, cost_per_hour
    scenarios: tuple[PrefixCacheScenario, ...]  # per point, the validated scenario

    def __len__(self) -> int:
        return len(self.combos)

    def at_most(self, i: int) -> np.ndarray:
        """Points p <= point i: equal on the axes not monotone, <= on the rest."""
        return self._order(self.combos <= self.combos[i], i)

    def at_least(self, i: int) -> np.ndarray:
        return self._order(self.combos >= self.combos[i], i)

    def _order(self, le: np.ndarray, i: int) -> np.ndarray:
        free = np.array([not a.monotone for a in self.axes], dtype=bool)
        le[:, free] = self.combos[:, free] == self.combos[i, free]
        return np.asarray(le.all(axis=1))  # a row per point: numpy's stubs allow a scalar


def build_grid(data: dict[str, Any], axes: tuple[PlanAxis, ...], source: str,
               price: Callable[[PrefixCacheScenario], float]) -> Grid:
    """Every point validated now (a bad value is refused before any run, naming the point), and
    priced by `price(scenario)`."""
    combos = np.array(list(product(*(range(len(a.values)) for a in axes))), dtype=np.int64).reshape(-1, len(axes))
    settings, scenarios, cost = [], [], []
    for combo in combos:
        s = settings_of(axes, tuple(combo))
        try:
            sc = parse_scenario(with_settings(data, s, source), source)
            if not isinstance(sc, PrefixCacheScenario):  # an axis that sets `kind`
                raise ScenarioError(f"kvviz plan takes a prefix_cache scenario (this is {sc.kind})", source, "kind")
            check_run_size(sc)
        except ScenarioError as e:
            at = ", ".join(f"{p}={_fmt(v)}" for p, v in s.items())
            e.message = f"{e.message} (at plan point {at})"
            e.file = source
            raise
        settings.append(s)
        scenarios.append(sc)
        cost.append(price(sc))
    return Grid(axes, combos, tuple(settings), np.array(cost, dtype=np.float64), tuple(scenarios))


def metric_or_none(metrics: dict[str, Any], path: str) -> float | None:
    try:
        v = metric_value(metrics, path)
    except KeyError:
        return None
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


MISSING = "_missing"


def run_point(task: tuple[PrefixCacheScenario, list[str]]) -> PointValues:
    """A worker's task: (scenario, metric paths) -> {path: value} of its timed run, with its
    cost_per_hour, and under MISSING the paths its metrics do not have."""
    sc, paths = task
    m = simulate(sc).metrics_dict()
    out: PointValues = {p: metric_or_none(m, p) for p in paths}
    out[COST_METRIC] = m["cost"]["per_hour"]["total"]
    missing = []
    for p in paths:
        try:
            metric_value(m, p)
        except KeyError:
            missing.append(p)
    if missing:
        out[MISSING] = missing
    return out
