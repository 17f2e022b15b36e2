"""attention_store speed (cache replay: bench_replay.py).

Run: .venv/bin/python benchmarks/bench_attention_store.py   (or benchmarks/run_all.py)
Prints figures; asserts nothing about time (tests never do).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from machine import describe, median_of, spread

from kvviz import load_scenario, simulate
from kvviz.mechanisms.attention_store import workload_of
from kvviz.mechanisms.attention_store.serving import Prepared, Run

ROOT = Path(__file__).resolve().parents[1]


def sharegpt():
    """The bundled run (five policies + the truncation run) serial and over every core, and how
    time grows with the number of conversations (one policy, serial: the engine's own cost)."""
    cores = str(os.cpu_count() or 1)
    for sets in ((), ("store.ssd_read_priority=true",)):
        sc = load_scenario(ROOT / "scenarios" / "attention_store_sharegpt.toml", sets)
        runs = len(sc.policies) + (1 if sc.serving.compare_truncation else 0)
        walls = {}
        for workers in ("1", cores):
            os.environ["KVVIZ_WORKERS"] = workers
            times = []
            for _ in range(5 if not sets else 3):
                t = time.perf_counter()
                r = simulate(sc)
                times.append(time.perf_counter() - t)
            walls[workers] = times
            print(f"attention_store_sharegpt{''.join(' ' + x for x in sets)}: {r.metrics['turns']:,} turns, "
                  f"{runs} runs on {workers} process{'es' * (workers != '1')}: {spread(times)}; "
                  f"{r.events:,} events, {len(r.trace.spans):,} spans")
        med = {k: sorted(v)[len(v) // 2] for k, v in walls.items()}
        print(f"  parallel over serial: {med['1'] / med[cores]:.2f}× faster on {cores} cores")
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
    print(describe())
    sharegpt()


if __name__ == "__main__":
    main()
