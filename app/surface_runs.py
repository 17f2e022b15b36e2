"""The capacity surface's runs, coarse grid first, each run kept for reuse (no Qt here: the
points run in worker processes started by the simulator's fork server).

A run is kept by what it ran (the scenario's data with the two capacities set), with all of
its metrics: a second surface over the same cells with another metric of the same policy, a
grid with one more capacity, or Run again after Cancel runs only the cells it has not got.
The order is coarse to fine (every 4th value of each axis and the last, then every 2nd, then
all), so the first few runs already span the surface and the rest refine it."""
from __future__ import annotations

import json
import math
from collections import OrderedDict
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any, Callable

from kvviz import ScenarioError
from kvviz.metric_paths import metric_value
from kvviz.simulation import simulate
from kvviz.sweep import Axis, grid_point

KEEP_RUNS = 4000  # runs kept (each its metrics, a few kB)
POLL_S = 0.2      # how often a wait for the workers looks for a Cancel


def coarse_first(n_rows: int, n_cols: int) -> list[int]:
    """Every row-major grid index once: first the cells on a lattice of every 2^k-th row and
    column (the last row and column always with them, so the first level spans the grid), then
    the lattice halved, down to every cell."""
    stride = 1
    while stride * 2 < max(n_rows, n_cols):
        stride *= 2
    order: list[int] = []
    seen: set[int] = set()
    while stride >= 1:
        rows = sorted(set(range(0, n_rows, stride)) | {n_rows - 1})
        cols = sorted(set(range(0, n_cols, stride)) | {n_cols - 1})
        for r in rows:
            for c in cols:
                i = r * n_cols + c
                if i not in seen:
                    seen.add(i)
                    order.append(i)
        stride //= 2
    return order


def nearest_filled(grid: list[list[Any]]) -> tuple[list[list[Any]], int]:
    """The grid with each cell not run yet (None) showing its nearest run cell's value (by row
    and column distance; ties to the earlier cell), and how many cells were filled so."""
    done = [(i, j) for i, row in enumerate(grid) for j, v in enumerate(row) if v is not None]
    if not done:
        return grid, 0
    out, filled = [], 0
    for i, row in enumerate(grid):
        new = []
        for j, v in enumerate(row):
            if v is None:
                a, b = min(done, key=lambda p: (p[0] - i) ** 2 + (p[1] - j) ** 2)
                v = grid[a][b]
                filled += 1
            new.append(v)
        out.append(new)
    return out, filled


def pick(metrics: dict, metric: str) -> Any:
    """The surface's value of one run: a number, or None where the run has none."""
    try:
        v = metric_value(metrics, metric)
    except KeyError:
        raise ScenarioError(f"unknown metric {metric!r} (e.g. policies.lru.token_hit_rate)", "<surface>",
                            "metric") from None
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _run(base: dict, axes: tuple[Axis, ...], index: int, source: str, max_memory_gb) -> dict:
    """A worker's task: one grid point's metrics (validated and size-checked there)."""
    return simulate(grid_point(base, axes, index, source, max_memory_gb), max_memory_gb).metrics_dict()


class SurfaceRuns:
    """Runs kept across surfaces (one per view), and the job that fills a grid from them."""

    def __init__(self, keep: int = KEEP_RUNS):
        self.kept: OrderedDict[str, dict] = OrderedDict()
        self.keep = keep
        self.ran = 0      # runs simulated, ever (tests count them)
        self.reused = 0   # cells of the last grid taken from the kept runs

    @staticmethod
    def key(base: dict, axes: tuple[Axis, ...], index: int) -> str:
        at, rest = [], index
        for a in reversed(axes):
            rest, i = divmod(rest, len(a.values))
            at.append((a.path, a.values[i]))
        return json.dumps([base, sorted(at)], sort_keys=True, default=str)

    def _keep(self, key: str, metrics: dict) -> None:
        self.kept[key] = metrics
        self.kept.move_to_end(key)
        while len(self.kept) > self.keep:
            self.kept.popitem(last=False)

    def fill(self, base: dict, axes: tuple[Axis, Axis], metric: str, source: str, progress: Callable,
             on_value: Callable[[int, Any], None], pool_context=None, workers: int = 2,
             max_memory_gb: float | None = None) -> list:
        """Every cell's value, row-major: kept runs at once, the others run coarse-first on
        `workers` processes; `progress(done, total)` may raise to cancel (the workers are ended
        at once; the runs that finished stay kept)."""
        n_rows, n_cols = len(axes[0].values), len(axes[1].values)
        total = n_rows * n_cols
        values: list = [None] * total
        keys = {i: self.key(base, axes, i) for i in range(total)}
        todo, done = [], 0
        for i in coarse_first(n_rows, n_cols):
            got = self.kept.get(keys[i])
            if got is None:
                todo.append(i)
                continue
            values[i] = pick(got, metric)
            on_value(i, values[i])
            done += 1
        self.reused = done
        progress(done, total)
        if not todo:
            return values
        # every run in a worker process: a simulation in a thread here would share the
        # interpreter with the window (its first one too: the fork server starts it in ms)
        pool = ProcessPoolExecutor(min(workers, len(todo)), mp_context=pool_context)
        pending: dict = {}
        queue = iter(todo)
        try:
            while True:
                # a few in flight, submitted in the coarse-first order (the pool runs them in it)
                while len(pending) < 2 * workers and (i := next(queue, None)) is not None:
                    pending[pool.submit(_run, base, axes, i, source, max_memory_gb)] = i
                if not pending:
                    break
                finished, _ = wait(pending, timeout=POLL_S, return_when=FIRST_COMPLETED)
                for f in sorted(finished, key=pending.get):
                    i = pending.pop(f)
                    metrics = f.result()
                    self.ran += 1
                    self._keep(keys[i], metrics)
                    values[i] = pick(metrics, metric)
                    on_value(i, values[i])
                    done += 1
                progress(done, total)  # also when nothing finished: a Cancel is seen within POLL_S
        except BaseException:
            # a run cannot be interrupted: its worker is ended (as kvviz.sweep does on Cancel;
            # cancelling the futures first made the pool's broken-pool handler fail)
            procs = getattr(pool, "_processes", None) or {}
            for p in list(procs.values()):
                p.terminate()
            raise
        pool.shutdown()
        return values
