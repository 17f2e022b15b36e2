"""The load-or-recompute cut alone (kvviz.serving.tiered_cache.best_cut): calls per second on the
inputs of real runs, and each of its two walks (plain Python for few cuts, arrays for many) by
the number of cuts, which is where FEW_CUTS sits.

Run: .venv/bin/python benchmarks/bench_best_cut.py [--repeat 5]
Prints figures; asserts nothing about time. Each scenario below is run once with best_cut
wrapped to keep its arguments as they stood at the call (the links' queues, the bookings and
the prefetch landings copied), then best_cut is called again on each kept input, --repeat times,
the least time taken; its cut must be the one the run took. Scenarios:
- scenarios/prefix_cache_tiers.toml: 16-token blocks, so long hits (hundreds of cuts);
- scenarios/cluster_mooncake_routing.toml: 512-token blocks, tens of cuts, one tier below HBM.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import describe  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import kvviz.mechanisms.cluster.cache as cluster_cache  # noqa: E402
import kvviz.mechanisms.prefix_cache.timed_store as timed_store  # noqa: E402
from kvviz import load_scenario, simulate  # noqa: E402
from kvviz.serving import tiered_cache  # noqa: E402

SCENARIOS = ("prefix_cache_tiers", "cluster_mooncake_routing")
BUCKETS = (4, 8, 16, 32, 64, 128, 256, 10**9)  # cuts, upper bounds


def captured(name: str) -> list[tuple[tuple, int]]:
    """(best_cut's arguments, its cut) for every call of one scenario's run."""
    calls = []
    real = tiered_cache.best_cut

    def keep(src, hit_tokens, booked, links, now, L, bb, compute, landing=None):
        cut = real(src, hit_tokens, booked, links, now, L, bb, compute, landing)
        lands = None if landing is None else [landing(i) for i in range(len(src))]
        queues = [None if lk is None else SimpleNamespace(free=lk.free, read_lat=lk.read_lat, read_gbps=lk.read_gbps)
                  for lk in links]
        calls.append(((list(src), hit_tokens.copy(), list(booked), queues, now, L, bb, compute,
                       None if lands is None else lands.__getitem__), cut))
        return cut

    timed_store.best_cut = cluster_cache.best_cut = keep
    try:
        simulate(load_scenario(ROOT / "scenarios" / f"{name}.toml"))
    finally:
        timed_store.best_cut = cluster_cache.best_cut = real
    return calls


def least_time(fn, inputs: list[tuple], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for a in inputs:
            fn(*a)
        best = min(best, time.perf_counter() - t)
    return best


def walks() -> dict:
    """Each walk as best_cut calls it (the booked transfers folded into A, B first)."""
    def few(src, tok, booked, links, now, L, bb, compute, landing):
        A, B = fold(booked, now, L)
        return tiered_cache._few_cuts(src, tok.tolist(), A, B, links, now, L, bb, compute, landing)

    def many(src, tok, booked, links, now, L, bb, compute, landing):
        A, B = fold(booked, now, L)
        return tiered_cache._many_cuts(src, tok, A, B, links, now, L, bb, compute, landing)
    return {"python": few, "arrays": many}


def fold(booked, now, L):
    A = B = now
    for start, t1 in booked:
        A, B = max(A, int(start + (t1 - start) / L)), max(B, t1)
    return A, B


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(describe(), f"· load average {os.getloadavg()[0]:.2f} at the start")
    by_cuts: dict[int, list[tuple]] = {}
    for name in SCENARIOS:
        calls = captured(name)
        inputs = [a for a, _ in calls]
        wrong = sum(tiered_cache.best_cut(*a) != cut for a, cut in calls)
        t = least_time(tiered_cache.best_cut, inputs, args.repeat)
        cuts = sorted(len(a[0]) - a[0].count(0) + 1 for a in inputs)
        print(f"{name}: {len(inputs):,} calls, cuts median {cuts[len(cuts) // 2]}, max {cuts[-1]}: "
              f"{len(inputs) / t:,.0f} calls/s ({t / len(inputs) * 1e6:.1f} µs a call, least of {args.repeat})"
              + (f"; {wrong} cuts differ from the run's" if wrong else ""))
        for a in inputs:
            n = len(a[0]) - a[0].count(0) + 1
            by_cuts.setdefault(next(b for b in BUCKETS if n <= b), []).append(a)
    print(f"each walk by cuts (best_cut takes the Python one below FEW_CUTS = {tiered_cache.FEW_CUTS}), µs a call:")
    for b in sorted(by_cuts):
        inputs = by_cuts[b]
        line = ", ".join(f"{name} {least_time(fn, inputs, args.repeat) / len(inputs) * 1e6:.1f}"
                         for name, fn in walks().items())
        print(f"  cuts ≤ {b if b < 10**9 else 'any'} ({len(inputs)} calls): {line}")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
