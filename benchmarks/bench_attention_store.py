"""attention_store and replay speed.

Run: .venv/bin/python benchmarks/bench_attention_store.py   (or benchmarks/run_all.py)
Prints figures; asserts nothing about time (tests never do).
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from kvviz import load_scenario, simulate
from kvviz.replay import Requests, read_requests, replay

ROOT = Path(__file__).resolve().parents[1]


def best_of(fn, repeat=3):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def sharegpt():
    for sets in ((), ("store.ssd_read_priority=true",)):
        sc = load_scenario(ROOT / "scenarios" / "attention_store_sharegpt.toml", sets)
        secs, r = best_of(lambda: simulate(sc), repeat=2)
        m = r.metrics
        runs = len(sc.policies) + (1 if sc.serving.compare_truncation else 0)
        print(f"attention_store_sharegpt{''.join(' ' + x for x in sets)}: {m['conversations']:,} conversations, "
              f"{m['turns']:,} turns, {len(sc.policies)} policies (+{runs - len(sc.policies)} truncation run): "
              f"{secs:.2f} s (best of 2); {r.events:,} events, {len(r.trace.spans):,} spans in the trace")


def zipf_trace(n=1_000_000, objects=100_000, seed=1):
    """Zipf(0.9)-popular ids, sizes 1..100 KB fixed per object (a typical cache-sim trace)."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, objects + 1) ** 0.9
    ids = rng.choice(objects, n, p=p / p.sum())
    size_of = rng.integers(1_000, 100_000, objects)
    return ids, size_of[ids]


def replay_speed():
    ids, sizes = zipf_trace()
    reqs = Requests(ids.tolist(), sizes.tolist())
    total = int(sizes.sum())
    unique = int(np.unique(ids).size)
    for policy in ("lru", "fifo", "belady"):
        for frac in (0.01, 0.1):
            cap = int(total / len(ids) * unique * frac)
            secs, r = best_of(lambda: replay(reqs, policy, cap), repeat=3 if policy != "belady" else 1)
            print(f"replay {policy:<6} 1,000,000 requests, capacity {frac:.0%} of footprint: "
                  f"{len(ids) / secs / 1e6:.2f} M requests/s ({secs * 1000:.0f} ms; "
                  f"miss ratio {r.request_miss_ratio:.3f})")
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "trace.csv"
        with p.open("w") as f:
            f.write("time,id,size\n")
            f.writelines(f"{i},{k},{s}\n" for i, (k, s) in enumerate(zip(ids.tolist(), sizes.tolist())))
        secs, _ = best_of(lambda: read_requests(p), repeat=2)
        print(f"replay: reading the 1,000,000-row CSV: {secs * 1000:.0f} ms "
              f"({len(ids) / secs / 1e6:.2f} M rows/s)")


def main():
    sharegpt()
    replay_speed()


if __name__ == "__main__":
    main()
