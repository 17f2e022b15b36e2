"""How honest the time estimate is: the calibrated estimate (kvviz.calibration) of a run against
its measured time, for the flagship run whole, an edit one policy reads (one part re-run, the
others kept) and the Mooncake run. Prints figures, asserts nothing about time.

Run: .venv/bin/python benchmarks/bench_estimate.py               (or benchmarks/run_all.py)
     .venv/bin/python benchmarks/bench_estimate.py --constants   the cost model's constants:
the probe and each part of the bundled runs timed in one process (CPU time), alternately, so the reference
probe (kvviz.calibration.REFERENCE_PROBE_US_PER_TURN) and the per-turn constants (attention_store's
SECONDS_PER_TURN_*, parts.py's relative costs) come from the same machine state.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from machine import describe

from kvviz import load_scenario, simulate
from kvviz.calibration import calibrated, machine, probe_us_per_turn
from kvviz.executor import map_indexed, workers
from kvviz.mechanisms import mechanisms
from kvviz.runs import MemoryCache

ROOT = Path(__file__).resolve().parents[1]


def _scenario(name: str, sets=()):
    return load_scenario(ROOT / "scenarios" / f"{name}.toml", list(sets))


def _import_mechanism(_):
    import kvviz.mechanisms.attention_store  # noqa: F401 (what a pool worker imports first)
    return 0


def constants():
    from kvviz.mechanisms.attention_store.parts import plan
    probes = [probe_us_per_turn(5)]
    for name in ("attention_store_sharegpt", "attention_store_mooncake"):
        sc = _scenario(name)
        p = plan(sc)
        t = time.thread_time()
        prep = p.prepare(sc)
        n = len(prep.wl)
        print(f"{name}: {n:,} turns; preparing {(time.thread_time() - t) / n * 1e6:.2f} µs per turn (CPU)")
        per = {}
        for part in p.order():
            t = time.thread_time()
            p.run(sc, prep, part.name)
            per[part.name] = (time.thread_time() - t) / n * 1e6
            probes.append(probe_us_per_turn(5))
        base = per["lru"]
        for name_, us in per.items():
            print(f"  {name_:<16} {us:7.1f} CPU µs per turn, {us / base:.2f}× lru's (cost model: "
                  f"{p.part(name_).cost:.2f})")
    starts = []
    for _ in range(3):
        t = time.perf_counter()
        map_indexed(_import_mechanism, [0, 1], n_workers=2)
        starts.append(time.perf_counter() - t)
    probes.sort()
    print(f"probe (its least of 5 runs): {probes[len(probes) // 2]:.1f} CPU µs per turn (median of {len(probes)}, "
          f"{probes[0]:.1f}–{probes[-1]:.1f}); pool of 2 started: {sorted(starts)[1]:.2f} s (median of 3)")


def _versus(what: str, est, actual: float):
    print(f"  {what:<46} estimated {est.seconds:6.2f} s, took {actual:6.2f} s: "
          f"{actual / est.seconds:.2f}× the estimate")


def accuracy():
    t = time.perf_counter()
    cal = machine()
    print(f"calibration: {cal.describe()} ({(time.perf_counter() - t) * 1000:.0f} ms of probe and set-up)")
    n = workers()
    print(f"estimate vs simulate() in this process, parts over {n} worker process{'es' * (n > 1)}:")
    for name, edit in (("attention_store_sharegpt", "serving.detail_job=100"),
                       ("attention_store_mooncake", "store.lookahead=waiting_queue")):
        sc = _scenario(name)
        est = mechanisms()[sc.kind].estimate(sc)
        kept = MemoryCache(4e9)
        t = time.perf_counter()
        simulate(sc, cache=kept)
        _versus(f"{name}, every part", calibrated(est, cal, n), time.perf_counter() - t)
        # a field only some runs read (the recorded one; the look-ahead policies): the others kept
        sc2 = _scenario(name, [edit])
        ran: list = []
        skip = [p for p, _ in est.parts]
        t = time.perf_counter()
        simulate(sc2, cache=kept, ran=ran)
        took = time.perf_counter() - t
        est2 = calibrated(mechanisms()[sc.kind].estimate(sc2), cal, n, [p for p in skip if p not in ran])
        _versus(f"{name}, {edit} ({len(ran)} of {len(est.parts)} parts run)", est2, took)


def main():
    print(describe())
    if "--constants" in sys.argv:
        constants()
    else:
        accuracy()


if __name__ == "__main__":
    os.environ.setdefault("KVVIZ_WORKERS", str(os.cpu_count() or 1))
    main()
