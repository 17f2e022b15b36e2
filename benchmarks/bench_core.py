"""Core speed: engine events per second, and rope_window at 131,072 tokens.

Run: make bench   (or .venv/bin/python benchmarks/bench_core.py)
Prints figures; asserts nothing about time (tests never do).
"""
from __future__ import annotations

import time

import numpy as np

from kvviz import parse_scenario, simulate
from kvviz.engine import EventLoop


def best_of(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def engine_events_per_s(n=500_000) -> float:
    def run():
        loop = EventLoop()
        rng = np.random.default_rng(1)
        for t in rng.integers(0, 10**9, n).tolist():
            loop.at(t, int)
        loop.run()
        return loop.processed
    secs, processed = best_of(run)
    return processed / secs


def rope_large():
    rng = np.random.default_rng(7)
    queries = np.sort(rng.choice(131_072, 1000, replace=False)).tolist()
    return parse_scenario({
        "kind": "rope_window", "name": "bench: 128K tokens, 1000 queries",
        "sequence": {"length": 131_072, "queries": queries,
                     "query_times_us": [50.0 * i for i in range(1000)]},
        "cache": {"slots": 4096},
        "prefetch": {"window": 64},
        "storage": {"latency_us": 25},
    })


def main():
    print(f"engine: {engine_events_per_s():,.0f} events/s (500,000 scheduled + processed, best of 3)")
    sc = rope_large()
    for mode in ("outside_window", "lazy"):
        s = sc.model_copy(update={"prefetch": sc.prefetch.model_copy(update={"eviction": mode})})
        secs, r = best_of(lambda: simulate(s))
        print(f"rope_window 131,072 tokens, 1,000 queries, W=64, 4,096 slots, eviction={mode}: "
              f"{secs * 1000:.0f} ms (best of 3); {len(r.trace.spans):,} spans, "
              f"{r.metrics['positions_fetched']:,} positions fetched, {r.events:,} events")


if __name__ == "__main__":
    main()
