"""Sweep speed through each executor: the local process pool, an in-process Dask cluster, and a
two-worker Dask cluster of processes on 127.0.0.1 (the same path a remote cluster takes).

Run: make bench   (or .venv/bin/python benchmarks/bench_sweep.py)
Grids: the Engram feasibility map, layer × pool latency: layers 0 and 1 leave no window under
the seed's convention and are refused, so 2..63 (62 values) × 50 latencies = 3,100 fast runs;
and an 8-point AttentionStore grid (SSD sizes), whose runs take seconds each.
"""
from __future__ import annotations

import time

from machine import describe

from kvviz.scenario_data import read_toml
from kvviz.sweep import Axis, run_sweep


def grids():
    engram = (read_toml("scenarios/engram_qwen3_32b_rdma.toml"), "slack_us",
              [Axis("engram.layer", tuple(range(2, 64))),
               Axis("pool.latency_us", tuple(round(0.2 * i, 3) for i in range(1, 51)))])
    store = read_toml("scenarios/attention_store_sharegpt.toml")
    store["serving"]["compare_truncation"] = False
    store["policies"] = ["lru", "scheduler_aware"]
    store["trace_policy"] = "scheduler_aware"
    store["workload"]["conversations"] = 3000
    attention = (store, "policies.scheduler_aware.hit_rate",
                 [Axis("hardware.ssd_gb", tuple(500 * k for k in range(1, 9)))])
    return {"engram 3,100 runs": engram, "attention_store 8 runs": attention}


def timed(base, metric, axes, executor):
    first = []
    t = time.perf_counter()
    res = run_sweep(base, axes, metric, source="bench", workers=2, executor=executor,
                    on_result=lambda i, v: first.append(time.perf_counter() - t) if len(first) < 2 else None)
    return time.perf_counter() - t, res, first


def main():
    print(describe())
    import distributed
    with distributed.LocalCluster(processes=False, n_workers=2, threads_per_worker=1, dashboard_address=":0") as inproc, \
            distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1, host="127.0.0.1",
                                     scheduler_port=0, dashboard_address=":0") as tcp:
        for name, (base, metric, axes) in grids().items():
            local = None
            for label, ex in (("local pool", "local"), ("Dask in-process", inproc.scheduler_address),
                              ("Dask 2 processes, TCP", tcp.scheduler_address)):
                secs, res, first = timed(base, metric, axes, ex)
                n = len(res.values) * (len(res.values[0]) if isinstance(res.values[0], list) else 1)
                local = local or secs
                same = "" if label == "local pool" else f"; ×{secs / local:.2f} the local pool's time"
                second = f"; second result after {first[1]:.2f} s" if len(first) > 1 else ""
                print(f"sweep {name}, {label}: {secs:.2f} s ({n / secs:,.1f} runs/s{same}{second})")


if __name__ == "__main__":
    main()
