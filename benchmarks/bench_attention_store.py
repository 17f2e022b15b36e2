"""attention_store and replay speed.

Run: .venv/bin/python benchmarks/bench_attention_store.py   (or benchmarks/run_all.py)
Prints figures; asserts nothing about time (tests never do).
"""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np

from kvviz import load_scenario, simulate
from kvviz.mechanisms.attention_store import workload_of
from kvviz.mechanisms.attention_store.serving import Prepared, Run
from kvviz.replay import Requests, read_requests, replay

ROOT = Path(__file__).resolve().parents[1]


def median_of(fn, repeat=3):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2], out


def sharegpt():
    """The bundled run (five policies + the truncation run), its runs over every core, and how
    time grows with the number of conversations (one policy, serial: the engine's own cost)."""
    os.environ.setdefault("KVVIZ_WORKERS", str(os.cpu_count() or 1))
    for sets in ((), ("store.ssd_read_priority=true",)):
        sc = load_scenario(ROOT / "scenarios" / "attention_store_sharegpt.toml", sets)
        secs, r = median_of(lambda: simulate(sc), repeat=3)
        m = r.metrics
        runs = len(sc.policies) + (1 if sc.serving.compare_truncation else 0)
        print(f"attention_store_sharegpt{''.join(' ' + x for x in sets)}: {m['conversations']:,} conversations, "
              f"{m['turns']:,} turns, {runs} runs on {os.environ['KVVIZ_WORKERS']} processes: {secs:.2f} s "
              f"(median of 3); {r.events:,} events, {len(r.trace.spans):,} spans in the trace")
    base = None
    for n in (1_000, 9_000, 36_000):
        sc = load_scenario(ROOT / "scenarios" / "attention_store_sharegpt.toml",
                           [f"workload.conversations={n}", 'policies=["scheduler_aware"]',
                            "serving.compare_truncation=false"])
        wl = workload_of(sc)
        prep = Prepared(sc, wl)
        secs, run = median_of(lambda: Run(sc, prep, "scheduler_aware", "decoupled", record=False).run(),
                              repeat=3 if n < 36_000 else 1)
        per = secs / len(wl) * 1e6
        base = base or (secs, len(wl))
        print(f"  scheduler_aware alone, {n:,} conversations ({len(wl):,} turns): {secs:.2f} s, {per:.0f} µs "
              f"per turn; time ×{secs / base[0]:.1f} for turns ×{len(wl) / base[1]:.1f}")


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
            secs, r = median_of(lambda: replay(reqs, policy, cap), repeat=3 if policy != "belady" else 1)
            print(f"replay {policy:<6} 1,000,000 requests, capacity {frac:.0%} of footprint: "
                  f"{len(ids) / secs / 1e6:.2f} M requests/s ({secs * 1000:.0f} ms; "
                  f"miss ratio {r.request_miss_ratio:.3f})")
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "trace.csv"
        with p.open("w") as f:
            f.write("time,id,size\n")
            f.writelines(f"{i},{k},{s}\n" for i, (k, s) in enumerate(zip(ids.tolist(), sizes.tolist())))
        secs, _ = median_of(lambda: read_requests(p), repeat=2)
        print(f"replay: reading the 1,000,000-row CSV: {secs * 1000:.0f} ms "
              f"({len(ids) / secs / 1e6:.2f} M rows/s)")


def main():
    sharegpt()
    replay_speed()


if __name__ == "__main__":
    main()
