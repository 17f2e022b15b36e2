"""Sweep speed: the Engram feasibility map, layer × pool latency, on both cores.

Run: make bench   (or .venv/bin/python benchmarks/bench_sweep.py)
Layers 0 and 1 leave no window under the seed's convention (window = Σ t_exec(1..k-1)) and are
refused as bad input, so the layer axis is 2..63 (62 values) × 50 latencies = 3,100 runs.
"""
from __future__ import annotations

import time

from kvviz.scenario import read_toml
from kvviz.sweep import Axis, run_sweep


def main():
    base = read_toml("scenarios/engram_qwen3_32b_rdma.toml")
    axes = [Axis("engram.layer", tuple(range(2, 64))),
            Axis("pool.latency_us", tuple(round(0.2 * i, 3) for i in range(1, 51)))]
    t = time.perf_counter()
    res = run_sweep(base, axes, "slack_us", source="engram_qwen3_32b_rdma.toml", workers=2)
    secs = time.perf_counter() - t
    n = sum(len(r) for r in res.values)
    feasible = sum(v >= 0 for r in res.values for v in r)
    print(f"sweep engram.layer 2..63 × pool.latency_us 0.2..10 (RDMA file): {n:,} runs in {secs:.2f} s "
          f"on 2 workers ({n / secs:,.0f} runs/s); {feasible:,} of {n:,} points feasible")


if __name__ == "__main__":
    main()
