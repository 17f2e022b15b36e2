"""A run's time estimate as this machine will take it: the cost model (each mechanism's
`estimate`, kvviz.size_guard.Estimate, in seconds of the machine its constants were measured
on) scaled by a factor a few-ms probe measures here, and a run of parts scheduled over the
worker processes as the pool runs them, the parts already kept left out.

The probe is a tiny AttentionStore run (one unrecorded LRU run of ~190 turns, after a warm-up)
by the Python reference engine, whichever engine runs scenarios, run a few times: its least CPU
time per turn over REFERENCE_PROBE_US_PER_TURN, which benchmarks/bench_estimate.py measured the
same way with the cost model's constants. The least, in CPU time: the machine's speed, not the
moment's load (the median of a few 3 ms runs read 1.0-1.9× the reference on this machine as
other work came and went, where the runs then took ~1.1×); time other processes take from a run
is `contention`'s, counted when the run is estimated. ASSUMPTION (ours): every mechanism is pure
Python on one core per process, so the one factor scales them all; AttentionStore's compiled
engine is assumed to scale with it too (its costs.py says so). The probe measures the
machine's speed at the moment it runs (the app: at start-up); the processes that share the
cores are counted when a run is estimated (`others_running`, `contention`).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING, Iterable, overload

from .executor import pool_seconds, worth_a_pool
from .size_guard import Estimate

if TYPE_CHECKING:
    from .mechanisms.attention_store.model import AttentionStoreScenario

# The probe's least CPU µs per turn when the cost model's constants were first measured (see the
# module docstring; benchmarks/bench_estimate.py --constants on a shared machine, two sessions:
# the least of its 15 medians 15.8 and 16.1). Every mechanism's constants are at this probe;
# --constants puts newer figures at it (AttentionStore's costs.py: sessions probing 17.1, 16.5).
REFERENCE_PROBE_US_PER_TURN = 16.0
PROBE_REPEAT = 5  # timed runs after the warm-up (the least is taken)
# A run estimated at this many seconds or more (one process, the reference machine) is worth
# the probe's few ms (once per process) to say how long it will take here.
WORTH_CALIBRATING_S = 1.0


@dataclass(frozen=True)
class Calibration:
    probe_us_per_turn: float
    factor: float  # probe / REFERENCE_PROBE_US_PER_TURN: > 1 on a slower or busier machine

    def describe(self) -> str:
        return f"probe {self.probe_us_per_turn:.1f} µs per turn, {self.factor:.2f}× the reference"


def calibration_from(probe_us_per_turn: float) -> Calibration:
    return Calibration(probe_us_per_turn, probe_us_per_turn / REFERENCE_PROBE_US_PER_TURN)


def probe_scenario() -> AttentionStoreScenario:
    """~190 turns of the synthetic ShareGPT-like workload, two policies, no truncation run."""
    from .loading import parse_scenario
    from .mechanisms.attention_store.model import AttentionStoreScenario
    sc = parse_scenario({"kind": "attention_store", "name": "calibration probe", "policies": ["lru", "fifo"],
                           "trace_policy": "fifo", "workload": {"conversations": 40},
                           "serving": {"compare_truncation": False}}, "<calibration probe>")
    assert isinstance(sc, AttentionStoreScenario)  # its kind says so
    return sc


def probe_us_per_turn(repeat: int = PROBE_REPEAT) -> float:
    """The least CPU µs per turn of the probe's unrecorded LRU run, here and now (~3 ms a run),
    by the Python reference engine whatever engine runs scenarios: REFERENCE_PROBE_US_PER_TURN
    was measured with it (timing the compiled engine instead would read ~0.1× and scale every
    mechanism's estimate, all pure Python, down ~10×)."""
    from .mechanisms.attention_store.parts import prepare, run_part
    sc = probe_scenario()
    prepared = prepare(sc)
    run_part(sc, prepared, "lru", engine="python")  # warm-up: the first run pays for first calls and imports
    times: list[float] = []
    for _ in range(repeat):
        t = time.thread_time()
        run_part(sc, prepared, "lru", engine="python")
        times.append(time.thread_time() - t)
    return min(times) / len(prepared.wl) * 1e6


@cache
def machine() -> Calibration:
    """This process's calibration, probed once (on first use)."""
    return calibration_from(probe_us_per_turn())


def others_running(samples: int = 5) -> float:
    """Processes (threads) running or waiting for a core now besides this one: the median of a
    few reads of /proc/stat's procs_running, 1 ms apart (Linux); 0 where it cannot be read."""
    counts = []
    for i in range(samples):
        try:
            with open("/proc/stat") as f:
                line = next((ln for ln in f if ln.startswith("procs_running")), "")
            counts.append(max(0, int(line.split()[1]) - 1))  # this process reads it, so it runs
        except (OSError, ValueError, IndexError):
            return 0.0
        if i + 1 < samples:
            time.sleep(0.001)
    return float(sorted(counts)[len(counts) // 2])


def contention(processes: int, others: float, cores: int) -> float:
    """How much longer `processes` busy processes take when `others` share the `cores`: 1 while
    all fit. ASSUMPTION (ours): the others keep running for the whole run, and every runnable
    process gets an equal share of the cores (Linux's fair scheduler, roughly)."""
    return max(1.0, (processes + others) / max(1, cores))


def wall_seconds(est: Estimate, factor: float = 1.0, workers: int = 1, skip: Iterable[str] = (),
                 others: float = 0.0, cores: int = 1, warm: bool = False) -> float:
    """Seconds the run of `est` takes here: its parts not in `skip` (those kept from an earlier
    run) over `workers` processes when they are worth a pool as kvviz.runs.run_parts decides
    (kvviz.executor.worth_a_pool: the pool's start, none for a `warm` one kept across runs, and
    sending the parts), one after the other otherwise, after what is not a part (reading and
    preparing); all × `factor`, and the parts × their contention with `others` processes on `cores`."""
    if not est.parts:
        return est.seconds * factor * contention(1, others, cores)
    skip = set(skip)
    todo = [s for name, s in est.parts if name not in skip]
    if not todo:
        return 0.0
    before = max(0.0, est.seconds - sum(s for _, s in est.parts)) * contention(1, others, cores)
    dispatch = est.dispatch * len(todo) / len(est.parts)  # as run_parts counts it
    if est.parallel and worth_a_pool(todo, workers, warm, dispatch):
        n = min(workers, len(todo))
        return factor * (before + pool_seconds(todo, n, warm, dispatch) * contention(n, others, cores))
    return factor * (before + sum(todo) * contention(1, others, cores))


@overload
def calibrated(est: Estimate, cal: Calibration | None = None, workers: int = 1, skip: Iterable[str] = (),
               others: float | None = None, cores: int | None = None, warm: bool = False) -> Estimate: ...
@overload
def calibrated(est: None, cal: Calibration | None = None, workers: int = 1, skip: Iterable[str] = (),
               others: float | None = None, cores: int | None = None, warm: bool = False) -> None: ...
def calibrated(est: Estimate | None, cal: Calibration | None = None, workers: int = 1,
               skip: Iterable[str] = (), others: float | None = None, cores: int | None = None,
               warm: bool = False) -> Estimate | None:
    """`est` with its seconds as `wall_seconds` gives them: by default with this machine's
    calibration, its cores and the processes running now; `warm`: the parts go to a pool
    already started (the app's), not one of their own (the CLI's)."""
    if est is None:
        return None
    cal = cal or machine()
    others = others_running() if others is None else others
    cores = cores or os.cpu_count() or 1
    return replace(est, seconds=wall_seconds(est, cal.factor, workers, skip, others, cores, warm), parts=())
