"""attention_store speed (cache replay: bench_replay.py).

Run: .venv/bin/python benchmarks/bench_attention_store.py   (or benchmarks/run_all.py)
Prints figures; asserts nothing about time (tests never do).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from kvviz import load_scenario, simulate
from kvviz.mechanisms.attention_store import workload_of
from kvviz.mechanisms.attention_store.serving import Prepared, Run

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


def main():
    sharegpt()


if __name__ == "__main__":
    main()
