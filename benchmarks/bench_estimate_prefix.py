"""How honest the prefix cache's time estimate is (kvviz/mechanisms/prefix_cache/costs.py): each
bundled prefix-cache scenario and the timed one at a few workload sizes, estimated (calibrated on
this machine, kvviz.calibration) and run (simulate(), wall time); prints actual / estimate per
row. Asserts nothing about time.

Run: .venv/bin/python benchmarks/bench_estimate_prefix.py [--sizes 50,200,1000] [--repeat 1] [--only-sizes]
     .venv/bin/python benchmarks/bench_estimate_prefix.py --constants   each timed run's CPU time
beside the cost model's counts (lookups, requests, pinned blocks walked), put at the reference
probe (× REFERENCE_PROBE_US_PER_TURN / this session's probe): the figures costs.py keeps.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from machine import describe

from kvviz import load_scenario, simulate
from kvviz.calibration import REFERENCE_PROBE_US_PER_TURN, calibrated, machine, probe_us_per_turn
from kvviz.mechanisms import mechanisms

ROOT = Path(__file__).resolve().parents[1]
TIERS = "prefix_cache_tiers"


def _scenario(name: str, sets=()):
    return load_scenario(ROOT / "scenarios" / f"{name}.toml", list(sets))


def _arg(flag: str, default: str) -> str:
    return sys.argv[sys.argv.index(flag) + 1] if flag in sys.argv else default


def cases(sizes):
    out = [] if "--only-sizes" in sys.argv else \
        [(p.stem, ()) for p in sorted((ROOT / "scenarios").glob("prefix_cache*.toml"))] + \
        [("prefix_cache_mooncake", ("serving.timing=true",))]
    out += [(TIERS, (f"workload.requests={n}",)) for n in sizes]
    return out


def accuracy(sizes, repeat: int):
    cal = machine()
    print(f"calibration: {cal.describe()}")
    print(f"{'scenario':<58} {'estimate':>9} {'actual (min/median)':>22} {'actual/est':>10}")
    for name, sets in cases(sizes):
        sc = _scenario(name, sets)
        est = calibrated(mechanisms()[sc.kind].estimate(sc), cal, others=0)
        took = []
        for _ in range(repeat):
            t = time.perf_counter()
            simulate(sc)
            took.append(time.perf_counter() - t)
        took.sort()
        med = took[len(took) // 2]
        label = name + (" " + " ".join(sets) if sets else "")
        print(f"{label:<58} {est.seconds:8.2f}s {took[0]:9.2f}s / {med:8.2f}s {med / est.seconds:9.2f}×",
              flush=True)


def constants(sizes):
    """Every timed run of each case alone (CPU time), with the model's counts and its figure."""
    from kvviz.mechanisms.prefix_cache import costs
    from kvviz.mechanisms.prefix_cache import workload as wl
    from kvviz.mechanisms.prefix_cache.engine import prepare
    from kvviz.mechanisms.prefix_cache.timed import Run
    probes = [probe_us_per_turn(5)]
    rows = []
    timed = [("prefix_cache_mooncake", ("serving.timing=true",))] + [(TIERS, (f"workload.requests={n}",))
                                                                      for n in sizes]
    for name, sets in timed:
        sc = _scenario(name, sets)
        t = time.thread_time()
        blocks = wl.load(sc)
        caps = [x.blocks(blocks.block_tokens * sc.model.kv_bytes_per_token) for x in sc.tiers]
        prep = prepare(blocks, {"lru", "fifo", "leaf_lru", "belady"}, sc.cache.admission)
        load_s = time.thread_time() - t
        n, R = len(blocks.ids), len(blocks)
        s = sc.serving
        held = costs.held_blocks(caps[0], int(s.running_kv_gb * 1e9) // sc.model.kv_bytes_per_token,
                                 s.max_batch, float(blocks.input_tokens.mean()), blocks.block_tokens)
        print(f"{name} {' '.join(sets)}: {R:,} requests, {n:,} lookups, held {held:.0f} blocks; "
              f"reading and preparing {load_s / n * 1e6:.2f} CPU µs per lookup", flush=True)
        for ev, pf in (("lru", False), ("lru", True), ("fifo", False), ("leaf_lru", False), ("belady", False)):
            t = time.thread_time()
            Run(sc, blocks, prep, caps, [ev] * len(caps), pf, record=False).run()
            cpu = time.thread_time() - t
            rows.append((f"{name[13:]} {sets[0]} {ev}{'+pf' * pf}", cpu, costs.timed_run_s(ev, pf, n, R, held)))
            probes.append(probe_us_per_turn(5))
    probes.sort()
    k = REFERENCE_PROBE_US_PER_TURN / probes[len(probes) // 2]
    print(f"probe: median {probes[len(probes) // 2]:.1f} µs per turn of {len(probes)} "
          f"({probes[0]:.1f}-{probes[-1]:.1f}); CPU times below × {k:.2f}")
    for label, cpu, model in rows:
        print(f"  {label:<50} {cpu * k:7.2f} s  model {model:7.2f} s  {cpu * k / model:5.2f}×")


def main():
    print(describe())
    sizes = [int(x) for x in _arg("--sizes", "50,200,1000").split(",")]
    if "--constants" in sys.argv:
        constants(sizes)
    else:
        accuracy(sizes, int(_arg("--repeat", "1")))


if __name__ == "__main__":
    main()
