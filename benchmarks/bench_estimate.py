"""How honest the time estimate is: the calibrated estimate (kvviz.calibration) of a run against
its measured time, for the flagship run whole, an edit one policy reads (one part re-run, the
others kept) and the Mooncake run. Prints figures, asserts nothing about time.

Run: .venv/bin/python benchmarks/bench_estimate.py               (or benchmarks/run_all.py)
     .venv/bin/python benchmarks/bench_estimate.py --constants   the cost model's constants:
the probe and each part of the bundled runs under both engines (the Python reference and the
compiled one) timed in one process (CPU time), alternately, so the per-turn constants
(kvviz/mechanisms/attention_store/costs.py: REFERENCE, COMPILED, the workload's and the
preparing's) are put at the reference probe (kvviz.calibration.REFERENCE_PROBE_US_PER_TURN)
from the same machine state; and what a pool costs before the parts (kvviz/executor.py
POOL_START_S, WARM_DISPATCH_S).
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


ENGINES = (("python", "REFERENCE"), ("native", "COMPILED"))


def _cpu(fn) -> float:
    t = time.thread_time()
    fn()
    return time.thread_time() - t


def _echo(task):
    """A part's round trip without its run: the prepared workload in, its output back."""
    return task[2]


def _pool_cost(sc, prep, outputs: list, executor=None) -> float:
    """Wall seconds of sending every part's inputs to a pool of 2 (`executor`, or one started
    for them) and its output back, the runs left out: what a pool adds to the parts."""
    t = time.perf_counter()
    map_indexed(_echo, [(sc, prep, out) for out in outputs], executor=executor, n_workers=2)
    return time.perf_counter() - t


def constants(rounds: int = 3):
    """Each part of the bundled runs under both engines, `rounds` times alternately (the least
    CPU time of each), a probe after each, the reading/preparing, and what a pool costs; printed
    at the reference probe (× REFERENCE_PROBE_US_PER_TURN / this session's probe median) in
    kvviz/mechanisms/attention_store/costs.py's and kvviz/executor.py's shape."""
    from kvviz.calibration import REFERENCE_PROBE_US_PER_TURN as REF
    from kvviz.executor import WarmPool
    from kvviz.mechanisms.attention_store.parts import plan, run_part
    probes = [probe_us_per_turn(5)]
    found, pools = {}, []
    for name in ("attention_store_sharegpt", "attention_store_mooncake"):
        sc = _scenario(name)
        p = plan(sc)
        prep_s = min(_cpu(lambda: p.prepare(sc)) for _ in range(rounds))
        prep = p.prepare(sc)
        n = len(prep.wl)
        per = {eng: {} for eng, _ in ENGINES}
        for _ in range(rounds):
            for part in p.order():
                for eng, _label in ENGINES:
                    us = _cpu(lambda: run_part(sc, prep, part.name, eng)) / n * 1e6
                    per[eng][part.name] = min(us, per[eng].get(part.name, us))
                probes.append(probe_us_per_turn(5))
        found[name] = (n, prep_s / n * 1e6, per)
        if name == "attention_store_sharegpt":  # what a pool costs the flagship's parts
            outputs = [p.run(sc, prep, q.name) for q in p.order()]
            pools.append(("spawned", [_pool_cost(sc, prep, outputs) for _ in range(rounds)]))
            warm = WarmPool(2)
            try:
                _pool_cost(sc, prep, outputs[:2], warm.executor)  # its workers' first call
                pools.append(("warm", [_pool_cost(sc, prep, outputs, warm.executor) for _ in range(rounds)]))
            finally:
                warm.close()
    probes.sort()
    probe = probes[len(probes) // 2]
    k = REF / probe  # this session's figures at the reference probe
    print(f"probe (its least of 5 runs, the Python engine): {probe:.1f} CPU µs per turn (median of {len(probes)}, "
          f"{probes[0]:.1f}–{probes[-1]:.1f}); figures below × {k:.2f} (REFERENCE_PROBE_US_PER_TURN {REF})")
    for name, (n, prep_us, per) in found.items():
        print(f"{name}: {n:,} turns; reading and preparing {prep_us * k:.2f} µs per turn")
        for eng, label in ENGINES:
            us, lru = per[eng], per[eng]["lru"]
            rec = next(q for q in plan(_scenario(name)).parts if q.needed and q.name != "workload").name
            print(f"  {label:<9} ({eng}): unrecorded lru {lru * k:.2f} µs per turn; recorded {rec} "
                  f"{us[rec] / us['truncation']:.2f}× its unrecorded run (truncation); workload "
                  f"{us['workload'] * k:.2f} µs per turn")
            ratios = {q: us[q] / lru for q in us if q not in ("workload", "truncation", rec)}
            ratios[rec] = us["truncation"] / lru  # its unrecorded run: the truncation run
            print("            policy ratios: " + ", ".join(f"{q} {r:.2f}" for q, r in ratios.items()))
    med = {}
    for what, xs in pools:
        med[what] = sorted(xs)[len(xs) // 2] * k
        print(f"pool of 2 ({what}): the flagship's parts sent and their outputs back, no run: "
              f"{', '.join(f'{x:.3f}' for x in xs)} s (× {k:.2f}: {med[what]:.3f} s, the median)")
    n = found["attention_store_sharegpt"][0]
    print(f"  DISPATCH_S_PER_TURN {med['warm'] / n * 1e6:.1f} µs (warm / {n:,} turns); "
          f"POOL_START_S {med['spawned'] - med['warm']:.2f} s (spawned - warm)")


def _wall(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


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
