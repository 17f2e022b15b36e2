"""Sweeps: run one scenario over a 1-D or 2-D grid of `--set` overrides, collect one metric
(or, on a 1-D grid, a family of them: `policies.*.hit_rate` gives one series per policy).

Every grid point is validated before anything runs, so bad input fails fast and whole.
Runs are spread over worker processes (one per core); results come back in grid order.
"""
from __future__ import annotations

import csv
import io
import multiprocessing
import os
import sys
import time
from dataclasses import dataclass
from itertools import product
from typing import Any, Callable

import math

from .errors import ScenarioError
from .scenario import parse_value, apply_override, parse_scenario


MAX_RUNS = 20_000  # grid points a sweep may run (every point is a whole simulation)
VALIDATE_TICK = 50  # grid points validated between two chances to cancel


@dataclass(frozen=True)
class Axis:
    path: str
    values: tuple


@dataclass(frozen=True)
class SweepResult:
    axes: tuple[Axis, ...]
    metric: str
    values: list  # 1-D: list; 2-D: list of rows (first axis) of lists (second axis)
    series: tuple[str, ...] = ()  # a wildcard metric: the names `*` matched; each value is then a
                                  # list with one entry per series

    def to_dict(self) -> dict:
        out = {"params": [{"path": a.path, "values": list(a.values)} for a in self.axes],
               "metric": self.metric, "values": self.values}
        if self.series:
            out["series"] = list(self.series)
        return out

    def to_csv(self) -> str:
        def cell(v):
            return "" if v is None else str(v)
        if self.series:
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


def parse_values(text: str, source: str = "--values") -> tuple:
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
        vals = [start + i * step for i in range(n)]
        if all(isinstance(p, int) for p in parts):
            return tuple(int(v) for v in vals)
        return tuple(round(v, 12) for v in vals)
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


def metric_paths(metrics: dict, prefix: str = "") -> dict[str, Any]:
    """Every scalar metric by the dotted path `metric_value` takes, nested ones too
    (`policies.lru.hit_rate`, `rungs.2.hbm_hit_pct`), in the metrics' order."""
    out: dict[str, Any] = {}
    items = metrics.items() if isinstance(metrics, dict) else enumerate(metrics)
    for k, v in items:
        path = f"{prefix}{k}"
        if isinstance(v, (dict, list, tuple)):
            out.update(metric_paths(v, path + "."))
        else:
            out[path] = v
    return out


def metric_value(metrics: dict, name: str) -> Any:
    """A metric by dotted path (`speedup`, `layers.0.stall_us`, `policies.lru.hit_rate`)."""
    node: Any = metrics
    for part in name.split("."):
        if isinstance(node, (list, tuple)) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise KeyError(name)
    return node


def grid_scenarios(base: dict, axes: tuple[Axis, ...], source: str,
                   tick: Callable[[], None] | None = None) -> list:
    """Validated scenarios for every grid point, in row-major order. `tick()` is called every
    VALIDATE_TICK points, so a caller can cancel a long validation (it raises to stop)."""
    scenarios = []
    for i, combo in enumerate(product(*(a.values for a in axes))):
        if tick is not None and i % VALIDATE_TICK == 0:
            tick()
        data = base
        for axis, v in zip(axes, combo):
            data = apply_override(data, f"{axis.path}={_fmt(v)}", source)
        try:
            scenarios.append(parse_scenario(data, source))
        except ScenarioError as e:
            at = ", ".join(f"{a.path}={_fmt(v)}" for a, v in zip(axes, combo))
            e.message = f"{e.message} (at sweep point {at})"
            raise
    return scenarios


def _ignore_sigint():
    """Workers leave Ctrl-C to the parent, which cancels the grid and exits cleanly."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def metric_family(metrics: dict, pattern: str) -> dict[str, Any]:
    """The metrics a path with one `*` segment matches, by what `*` stood for
    (`policies.*.hit_rate` -> {"lru": 0.8, "fifo": 0.9, ...}); those without the rest are skipped."""
    head, _, tail = pattern.partition("*")
    head, tail = head.rstrip("."), tail.lstrip(".")
    node = metric_value(metrics, head) if head else metrics
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, (list, tuple)) else ()
    out = {}
    for k, sub in items:
        try:
            v = metric_value(sub, tail) if tail else sub
        except (KeyError, TypeError):
            continue
        if not isinstance(v, (dict, list, tuple)):  # a family of values, not of tables
            out[str(k)] = v
    return out


def _scalar(value) -> Any:
    return value if isinstance(value, (int, float, bool, str)) or value is None else str(value)


def _pick(metrics: dict, metric: str, series: tuple[str, ...]) -> Any:
    """The swept value(s) of one run: the metric, or the family's members in `series` order."""
    if series:
        family = metric_family(metrics, metric)
        return [_scalar(family.get(name)) for name in series]
    return _scalar(metric_value(metrics, metric))


def _run_one(args) -> Any:
    from .registry import simulate  # imported in the worker
    scenario, metric, series, max_memory_gb = args
    return _pick(simulate(scenario, max_memory_gb).metrics_dict(), metric, series)


def run_sweep(base: dict, axes: list[Axis], metric: str, source: str = "<sweep>",
              workers: int | None = None, progress: Callable[[int, int], None] | None = None,
              max_memory_gb: float | None = None) -> SweepResult:
    if not 1 <= len(axes) <= 2:
        raise ScenarioError("a sweep takes one or two --param axes", source, "--param")
    if "*" in metric and (metric.count("*") > 1 or "*" not in metric.split(".") or len(axes) > 1):
        raise ScenarioError("a metric family takes one `*` as a whole path segment (policies.*.hit_rate) "
                            "and one --param axis (one line per match)", source, "--metric")
    axes_t = tuple(axes)
    if len(axes_t) == 2 and axes_t[0].path == axes_t[1].path:
        raise ScenarioError(f"the same --param twice ({axes_t[0].path})", source, "--param")
    points = math.prod(len(a.values) for a in axes_t)
    if points > MAX_RUNS:
        raise ScenarioError(f"the grid has {points:,} points; a sweep runs at most {MAX_RUNS:,}", source, "--values")
    # progress(0, n) while validating: the app's Cancel raises from it within a few points
    scenarios = grid_scenarios(base, axes_t, source, (lambda: progress(0, points)) if progress else None)
    from .size_guard import check_size
    for s in scenarios:  # a point too large fails the sweep now, not after the others ran
        try:
            check_size(s, max_memory_gb)
        except ScenarioError as e:
            e.file = source
            raise
    # Fail on an unknown metric before spending the grid on it.
    from .registry import simulate
    first = simulate(scenarios[0], max_memory_gb).metrics_dict()
    series: tuple[str, ...] = ()
    try:
        if "*" in metric:
            series = tuple(metric_family(first, metric))
            if not series:
                raise KeyError(metric)
        else:
            metric_value(first, metric)
    except KeyError:
        names = ", ".join(k for k, v in first.items() if not isinstance(v, (dict, list)))
        raise ScenarioError(f"unknown metric {metric!r} (scalar metrics: {names}; nested ones by path, "
                            f"e.g. policies.lru.hit_rate or policies.*.hit_rate)", source, "--metric") from None

    n = len(scenarios)
    workers = workers or min(os.cpu_count() or 1, 8)
    workers = max(1, min(workers, 64))  # a pool of thousands of processes would take the machine down
    flat: list = [_pick(first, metric, series)]  # the check run is the grid's first point: not run twice
    if progress:
        progress(1, n)
    tasks = [(s, metric, series, max_memory_gb) for s in scenarios[1:]]
    if workers <= 1 or n < 8:
        for t in tasks:
            flat.append(_run_one(t))
            if progress:
                progress(len(flat), n)
    else:
        chunk = max(1, len(tasks) // (workers * 8))
        # Pool's context exit terminates the workers, so Ctrl-C stops at once, not after
        # the chunks in progress.
        with multiprocessing.get_context("spawn").Pool(workers, initializer=_ignore_sigint) as pool:
            for v in pool.imap(_run_one, tasks, chunksize=chunk):
                flat.append(v)
                if progress:
                    progress(len(flat), n)
    if len(axes_t) == 1:
        values = flat
    else:
        m = len(axes_t[1].values)
        values = [flat[i:i + m] for i in range(0, n, m)]
    return SweepResult(axes_t, metric, values, series)


class StderrProgress:
    """Progress on stderr once a sweep has run for a second: redrawn in place on a terminal at
    most 5 times a second, one line per 10% when stderr is a file or pipe."""

    def __init__(self, stream=None):
        self.t0 = self.last = time.monotonic()
        self.stream = stream if stream is not None else sys.stderr  # the current one, not import time's
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self.shown_pct = -10

    def __call__(self, done: int, total: int):
        now = time.monotonic()
        if now - self.t0 < 1.0:
            return
        pct = 100 * done // total
        if self.tty:
            if now - self.last < 0.2 and done < total:
                return
            end = "\n" if done == total else ""
            self.stream.write(f"\rsweep: {done}/{total} runs ({pct}%)" + end)
        else:
            if pct < self.shown_pct + 10 and done < total:
                return
            self.shown_pct = pct
            self.stream.write(f"sweep: {done}/{total} runs ({pct}%)\n")
        self.last = now
        self.stream.flush()
