"""Sweeps: run one scenario over a grid of `--set` overrides (any number of axes), collect one
metric (or, on a 1-D grid, a family of them: `policies.*.hit_rate` gives one series per policy,
or several metrics named one by one: one series per metric).

The first grid point runs here first (it checks the metric and times one run); the rest go to
an executor (kvviz.executor: a local process pool or a Dask cluster) in chunks of about a
second of work, each point built and validated by its worker, a bounded window in flight.
Results stream back as they complete (`on_result(index, value)`) and are stored by grid index,
so the output never depends on which worker finished first.
"""
from __future__ import annotations

import csv
import io
import math
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from itertools import product
from typing import TYPE_CHECKING, Any, Callable, TextIO

from .errors import ScenarioError
from .loading import parse_scenario
from .metric_paths import metric_family, metric_value
from .scenario_data import apply_override, parse_value
from .simulation import check_run_size, simulate

if TYPE_CHECKING:
    from .runs import PartCache
    from .scenario import ScenarioBase

# What one run gives a sweep: a metric's value, or one per series (None where a run has none)
Scalar = bool | int | float | str | None
Picked = Scalar | list[Scalar]
# simulate's arguments after the scenario: max_memory_gb, cache
RunOptions = tuple[float | None, "PartCache | None"]
# a worker's task: (the grid point by index, the metric or several, the series, options, start, stop)
ChunkTask = tuple["GridPoints", "str | tuple[str, ...]", tuple[str, ...], RunOptions, int, int]

MAX_RUNS = 20_000  # grid points a sweep may run (every point is a whole simulation)


@dataclass(frozen=True)
class Axis:
    path: str
    values: tuple[Any, ...]  # TOML values, as --set takes them


@dataclass(frozen=True)
class SweepResult:
    axes: tuple[Axis, ...]
    metric: str
    values: list[Any]  # 1-D: list; 2-D: list of rows (first axis) of lists (second axis);
                  # more axes: the flat list in row-major order (the long form)
    series: tuple[str, ...] = ()  # a wildcard metric: the names `*` matched; each value is then a
                                  # list with one entry per series
    paths: tuple[str, ...] = ()   # several metrics: their full paths (series: the same paths
                                  # without the segments they all begin with)

    def points(self) -> Iterator[tuple[tuple[Any, ...], Any]]:
        """(values of every axis, result) per grid point, row-major (the long form)."""
        flat = self.values if len(self.axes) != 2 else [v for row in self.values for v in row]
        return zip(product(*(a.values for a in self.axes)), flat)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"params": [{"path": a.path, "values": list(a.values)} for a in self.axes],
               "metric": self.metric, "values": self.values}
        if len(self.axes) > 2:
            out["layout"] = "row-major"
        if self.series:
            out["series"] = list(self.series)
        if self.paths:
            out["metrics"] = list(self.paths)
        return out

    def to_csv(self) -> str:
        def cell(v: object) -> str:
            return "" if v is None else str(v)
        if len(self.axes) > 2:
            rows = [[a.path for a in self.axes] + [self.metric]]
            rows += [[*map(cell, combo), cell(v)] for combo, v in self.points()]
        elif self.series:
            rows = [[self.axes[0].path, *self.series]]
            rows += [[cell(x), *map(cell, row)] for x, row in zip(self.axes[0].values, self.values)]
        elif len(self.axes) == 1:
            rows = [[self.axes[0].path, self.metric]]
            rows += [[cell(x), cell(v)] for x, v in zip(self.axes[0].values, self.values)]
        else:
            a, b = self.axes
            rows = [[f"{a.path} \\ {b.path}", *map(cell, b.values)]]
            rows += [[cell(x), *map(cell, row)] for x, row in zip(a.values, self.values)]
        out = io.StringIO()
        csv.writer(out, lineterminator="\n").writerows(rows)  # quotes a value holding a comma
        return out.getvalue()


def parse_values(text: str, source: str = "--values") -> tuple[Any, ...]:
    """`a,b,c` (TOML values), a TOML array `[a, b, c]`, or an inclusive range `start:stop[:step]`."""
    text = text.strip()
    if ":" in text and "," not in text and not text.startswith(("[", '"', "'")):
        parts = [parse_value(p) for p in text.split(":")]
        if len(parts) not in (2, 3) or not all(isinstance(p, (int, float)) and not isinstance(p, bool)
                                               for p in parts):
            raise ScenarioError(f"expected start:stop[:step] with numbers, got {text!r}", source)
        if not all(math.isfinite(p) for p in parts):
            raise ScenarioError(f"start, stop and step must be finite numbers, got {text!r}", source)
        start, stop = parts[0], parts[1]
        step = parts[2] if len(parts) == 3 else 1
        if step <= 0 or stop < start:
            raise ScenarioError(f"range {text!r} is empty (need start <= stop and step > 0)", source)
        count = (stop - start) / step
        if not count < MAX_RUNS:  # counted before any list is built (0:1:1e-9 would be 10^9 values)
            raise ScenarioError(f"range {text!r} has {count + 1:,.0f} values; a sweep runs at most "
                                f"{MAX_RUNS:,} points", source)
        n = int(count + 1e-9) + 1
        steps = [start + i * step for i in range(n)]
        if all(isinstance(p, int) for p in parts):
            return tuple(int(v) for v in steps)
        return tuple(round(v, 12) for v in steps)
    if text.startswith("[") and text.endswith("]"):  # a TOML array: [1, 2] (its commas are its own)
        whole = parse_value(text)
        if not isinstance(whole, list):
            raise ScenarioError(f"expected a TOML array of values, got {text!r}", source)
        vals = tuple(whole)
    else:
        vals = tuple(parse_value(v) for v in text.split(",") if v.strip())
    if not vals:
        raise ScenarioError("no values given", source)
    if len(vals) > MAX_RUNS:
        raise ScenarioError(f"{len(vals):,} values; a sweep runs at most {MAX_RUNS:,} points", source)
    return vals


def _fmt(v: Any) -> str:
    """A value as it would be written after `=` in a --set."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace('"', '\\"') + '"'
    return repr(v) if not isinstance(v, (list, tuple)) else "[" + ",".join(_fmt(x) for x in v) + "]"


def shaped(axes: Sequence[Axis], flat: list[Any]) -> list[Any]:
    """Row-major values as SweepResult holds them: rows of the second axis for a 2-D grid, the
    flat list otherwise (one axis, or the long form of three and more)."""
    if len(axes) != 2:
        return flat
    m = len(axes[1].values)
    return [flat[i:i + m] for i in range(0, len(flat), m)]


def grid_size(axes: Iterable[Axis]) -> int:
    n = 1
    for a in axes:
        n *= len(a.values)
    return n


def grid_point(base: dict[str, Any], axes: tuple[Axis, ...], index: int, source: str,
               max_memory_gb: float | None = None) -> ScenarioBase:
    """The validated scenario at row-major `index` of the grid (refused if too large to run)."""
    combo = _combo(axes, index)
    data = base
    for axis, v in zip(axes, combo):
        data = apply_override(data, f"{axis.path}={_fmt(v)}", source)
    try:
        scenario = parse_scenario(data, source)
        check_run_size(scenario, max_memory_gb)
        return scenario
    except ScenarioError as e:
        raise _at_point(e, axes, combo, source) from None


def _combo(axes: tuple[Axis, ...], index: int) -> list[Any]:
    """The values of the axes at row-major `index`."""
    combo: list[Any] = []
    for a in reversed(axes):
        index, i = divmod(index, len(a.values))
        combo.append(a.values[i])
    combo.reverse()
    return combo


def _at_point(e: ScenarioError, axes: tuple[Axis, ...], combo: list[Any], source: str) -> ScenarioError:
    at = ", ".join(f"{a.path}={_fmt(v)}" for a, v in zip(axes, combo))
    e.message = f"{e.message} (at sweep point {at})"
    e.file = source
    return e


@dataclass(frozen=True)
class GridPoints:
    """The grid's points by row-major index, sent to the workers (picklable): a point as its
    validated scenario, or run. A refusal names the sweep's file and the point, whether its
    scenario refused it or its run did (a workload no running pool holds is known once read)."""
    base: dict[str, Any]
    axes: tuple[Axis, ...]
    source: str
    max_memory_gb: float | None = None

    def __call__(self, index: int) -> ScenarioBase:
        return grid_point(self.base, self.axes, index, self.source, self.max_memory_gb)

    def run(self, index: int, opts: RunOptions) -> dict[str, Any]:
        """Point `index` simulated: its metrics."""
        scenario = self(index)
        try:
            return simulate(scenario, *opts).metrics_dict()
        except ScenarioError as e:
            raise _at_point(e, self.axes, _combo(self.axes, index), self.source) from None


def _scalar(value: object) -> Scalar:
    return value if isinstance(value, (int, float, bool, str)) or value is None else str(value)


def _has(metrics: dict[str, Any], path: str) -> bool:
    try:
        metric_value(metrics, path)
        return True
    except KeyError:
        return False


def _get(metrics: dict[str, Any], path: str) -> Scalar:
    try:
        return _scalar(metric_value(metrics, path))
    except KeyError:
        return None


def _pick(metrics: dict[str, Any], metric: str | tuple[str, ...], series: tuple[str, ...]) -> Picked:
    """The swept value(s) of one run: the metric, the family's members in `series` order, or
    (metric a tuple of paths) each of several metrics, None where a run has not got it."""
    if isinstance(metric, tuple):
        return [_get(metrics, p) for p in metric]
    if series:
        family = metric_family(metrics, metric)
        return [_scalar(family.get(name)) for name in series]
    return _scalar(metric_value(metrics, metric))


def _run_chunk(task: ChunkTask) -> list[tuple[int, Picked]]:
    """A worker's task: [(grid index, value)] for grid points start..stop-1, each built and
    validated here (in the worker: the parent only hands out index ranges)."""
    point, metric, series, opts, start, stop = task
    return [(i, _pick(point.run(i, opts), metric, series)) for i in range(start, stop)]


def _short_names(paths: list[str]) -> tuple[str, ...]:
    """Metric paths without the leading segments they all share (at least one segment kept)."""
    parts = [p.split(".") for p in paths]
    k = 0
    while all(len(x) > k + 1 and x[k] == parts[0][k] for x in parts):
        k += 1
    return tuple(".".join(x[k:]) for x in parts)


def run_sweep(base: dict[str, Any], axes: Sequence[Axis], metric: str | list[str] | tuple[str, ...],
              source: str = "<sweep>", workers: int | None = None, progress: Callable[[int, int], None] | None = None,
              executor: str | None = None, on_result: Callable[[int, Picked], None] | None = None,
              max_memory_gb: float | None = None, cache: PartCache | None = None) -> SweepResult:
    """`progress(done, total)` may raise to cancel: queued work is dropped at once and local
    workers stopped (runs already on a cluster finish there, their results unused).
    `metric`: one path, or a list of several (one --param axis; a series per metric).
    `cache`: a kvviz.runs.DiskCache the runs' parts are kept in and reused from (a folder on
    each worker's machine)."""
    if not axes:
        raise ScenarioError("give at least one --param axis", source, "--param")
    several: tuple[str, ...] = ()
    if isinstance(metric, (list, tuple)):
        several = tuple(metric) if len(metric) > 1 else ()
        metric = ", ".join(metric)
    if several and (len(axes) > 1 or "*" in metric or len(set(several)) < len(several)):
        raise ScenarioError("several --metric take one --param axis, each metric once and none with `*`",
                            source, "--metric")
    if "*" in metric and (metric.count("*") > 1 or "*" not in metric.split(".") or len(axes) > 1):
        raise ScenarioError("a metric family takes one `*` as a whole path segment (policies.*.hit_rate) "
                            "and one --param axis (one line per match)", source, "--metric")
    axes_t = tuple(axes)
    paths = [a.path for a in axes_t]
    if len(set(paths)) < len(paths):
        twice = ", ".join(sorted(p for p in set(paths) if paths.count(p) > 1))
        raise ScenarioError(f"the same parameter twice ({twice}): sweep each once", source, "--param")
    n = grid_size(axes_t)
    if n > MAX_RUNS:
        raise ScenarioError(f"the grid has {n:,} points; a sweep runs at most {MAX_RUNS:,}", source, "--values")
    point = GridPoints(base, axes_t, source, max_memory_gb)
    # Fail on an unknown metric before spending the grid on it; time one run to size the chunks.
    t0 = time.perf_counter()
    opts: RunOptions = (max_memory_gb, cache)  # simulate's arguments after the scenario
    first = point.run(0, opts)
    t_first = time.perf_counter() - t0
    series: tuple[str, ...] = ()
    if several:
        series = _short_names(list(several))
        missing = [p for p in several if not _has(first, p)]
    elif "*" in metric:
        try:
            series = tuple(metric_family(first, metric))
        except KeyError:
            pass
        missing = [] if series else [metric]
    else:
        missing = [] if _has(first, metric) else [metric]
    if missing:
        names = ", ".join(k for k, v in first.items() if not isinstance(v, (dict, list)))
        raise ScenarioError(f"unknown metric {missing[0]!r} (scalar metrics: {names}; nested ones by path, "
                            f"e.g. policies.lru.hit_rate or policies.*.hit_rate)", source, "--metric")
    label, picked = metric, several or metric  # what _pick takes: a path, or the tuple of several

    flat: list[Picked] = [None] * n
    done = 0

    def got(i: int, v: Picked) -> None:
        nonlocal done
        flat[i] = v
        done += 1
        if on_result:
            on_result(i, v)
        if progress:
            progress(done, n)

    got(0, _pick(first, picked, series))  # the check run is the grid's first point: not run twice
    from .executor import default_spec, pool_size
    spec = executor or default_spec()
    workers = workers or pool_size()
    workers = max(1, min(workers, 64))  # a pool of thousands of processes would take the machine down
    # Locally, a pool pays when the rest of the grid would take longer than starting it (~1 s).
    if spec == "local" and (workers <= 1 or t_first * (n - 1) < 1.0):
        for i in range(1, n):
            got(*_run_chunk((point, picked, series, opts, i, i + 1))[0])
    elif n > 1:
        _stream((point, picked, series, opts), n, t_first, spec, min(workers, n - 1), got)
    return SweepResult(axes_t, label, shaped(axes_t, flat), series, several)


def _stream(run: tuple[GridPoints, str | tuple[str, ...], tuple[str, ...], RunOptions],
            n: int, t_first: float, spec: str, workers: int, got: Callable[[int, Picked], None]) -> None:
    """Grid points 1..n-1 through the executor, about a second of work per task, a bounded
    window of tasks in flight, results handed to `got`. `run`: a task's first four items
    (the grid point, the metric, the series, the options)."""
    from concurrent.futures import FIRST_COMPLETED, wait

    from .executor import open_executor
    # ~1 s of work a task by the first run's time (which includes warming up, so at least a
    # 16th of a worker's share), and never so few tasks that a worker idles
    per_task = max(1, min(max(int(1.0 / max(t_first, 1e-6)), (n - 1) // (workers * 16)),
                          (n - 1) // (workers * 4) or 1))
    starts = iter(range(1, n, per_task))
    window = workers * 4
    with open_executor(spec, workers) as pool:
        pending: set[Future[list[tuple[int, Picked]]]] = set()
        try:
            while True:
                while len(pending) < window:
                    start = next(starts, None)
                    if start is None:
                        break
                    pending.add(pool.submit(_run_chunk, (*run, start, min(start + per_task, n))))
                if not pending:
                    return
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in finished:
                    for i, v in f.result():
                        got(i, v)
        except BaseException:
            _drop(pool, pending)
            raise


def _drop(pool: Executor, pending: Iterable[Future[Any]]) -> None:
    """Cancel: queued tasks are dropped at once. Local workers are ended now, not after their
    runs (a run cannot be interrupted; ProcessPoolExecutor has no public call for it before
    Python 3.14, and cancelling its futures first makes its broken-pool handler fail); on a
    cluster, running tasks finish there and their results are not used."""
    procs = getattr(pool, "_processes", None)
    if procs is not None:
        for p in list(procs.values()):
            p.terminate()
        return
    for f in pending:
        f.cancel()
    pool.shutdown(wait=False)  # Dask's executor: cancels what it still holds on the cluster


class StderrProgress:
    """Progress on stderr once a sweep has run for a second: redrawn in place on a terminal at
    most 5 times a second, one line per 10% when stderr is a file or pipe."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.t0 = self.last = time.monotonic()
        self.stream = stream if stream is not None else sys.stderr  # the current one, not import time's
        self.tty = self.stream.isatty()
        self.shown_pct = -10

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.t0 < 1.0:
            return
        pct = 100 * done // total
        left = (now - self.t0) / done * (total - done) if done else 0.0
        eta = f", about {left:.0f} s left" if done < total else ""
        if self.tty:
            if now - self.last < 0.2 and done < total:
                return
            end = "\n" if done == total else ""
            self.stream.write(f"\rsweep: {done}/{total} runs ({pct}%{eta})   " + end)
        else:
            if pct < self.shown_pct + 10 and done < total:
                return
            self.shown_pct = pct
            self.stream.write(f"sweep: {done}/{total} runs ({pct}%{eta})\n")
        self.last = now
        self.stream.flush()
