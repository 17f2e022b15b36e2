"""The cluster's speed against a single instance (issue 32, item 7: the conversation trace over 16
instances with global_cache_aware must cost no more than 2x a single-instance prefix-cache run
of the same trace).

Run: .venv/bin/python benchmarks/bench_cluster.py [--repeat 3]
Prints figures; asserts nothing about time. On the Mooncake conversation trace (12,031 requests,
512-token blocks), CPU time of the run alone (requests read and prepared beforehand: the prefix
cache's `engine.prepare`, the cluster's `prepared.prepare`, each once per workload, and the
compiled caches' dense ids made by the first repeat on both sides), median of --repeat, the
cases run in turn each round (so a passing load falls on all alike), no trace recorded:
- the cluster: scenarios/cluster_mooncake_routing.toml as shipped (16 instances, 8 prefill + 8
  decode, global_cache_aware), and the same with 16 instances each prefilling and decoding;
- one instance: the prefix cache's timed engine (kvviz.mechanisms.prefix_cache.timed.Run), LRU,
  with one cluster instance's tiers (HBM 762,939 tokens + DRAM 3M tokens = 1,490 + 5,859 blocks)
  and serving settings, `store.load_if_faster` as the cluster's instance (on);
- the cluster with one instance (the same workload and settings as the prefix cache run).
Then `kvviz run` of the bundled scenario as a user calls it (reading the trace, recording the
timeline), wall time, once.

Scale (issue 32: a 100-instance, 10x trace case in bounded memory; `--no-scale` skips it): the
conversation trace's 12,031 requests copied 10 times, copy c shifted by c/10 of the trace's span
and its block ids made its own (ASSUMPTION: ten user populations sharing no prefix), 120,310
requests over 100 instances (50 prefill + 50 decode), global_cache_aware, the Routing scenario's
other settings; run in a child process so its peak RSS is its own; CPU time once.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import describe  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from kvviz import load_scenario, simulate  # noqa: E402
from kvviz.loading import parse_scenario  # noqa: E402
from kvviz.mechanisms.cluster.prepared import prepare as prepare_work  # noqa: E402
from kvviz.mechanisms.cluster.run import ClusterRun  # noqa: E402
from kvviz.mechanisms.cluster.workload import load as load_work  # noqa: E402
from kvviz.mechanisms.prefix_cache.engine import prepare  # noqa: E402
from kvviz.mechanisms.prefix_cache.timed import Run  # noqa: E402
from kvviz.mechanisms.prefix_cache.workload import load as load_blocks  # noqa: E402

SCENARIO = ROOT / "scenarios" / "cluster_mooncake_routing.toml"
TRACE = ROOT / "resources" / "traces" / "mooncake_conversation_trace.jsonl"


PC_LABEL = "prefix cache, 1 instance (timed engine, LRU, HBM + DRAM)"


def cluster_run(sc, work, prep):
    return ClusterRun(sc, work, record=False, prep=prep).run()


def prefix_cache_scenario(cl):
    ins = cl.instance
    return parse_scenario({
        "kind": "prefix_cache", "policies": ["lru"], "workload": {"trace_file": str(TRACE)},
        "model": {"preset": cl.model.preset},
        "tiers": [{"name": "hbm", "capacity_blocks": ins.hbm_cache_tokens // 512},
                  {"name": "dram", "capacity_blocks": ins.dram_cache_tokens // 512, "read_gbps": ins.dram_read_gbps,
                   "write_gbps": ins.dram_write_gbps, "read_latency_us": 0.0, "write_latency_us": 0.0}],
        "store": {"load_if_faster": ins.load_if_faster},
        "serving": {"timing": True, "gpus": ins.gpus, "gpu_peak_tflops": ins.gpu_peak_tflops, "mfu": ins.mfu,
                    "hbm_tbps": ins.hbm_tbps, "hbm_efficiency": ins.hbm_efficiency, "max_batch": ins.max_batch,
                    "running_kv_gb": ins.running_kv_gb}}, "bench")


def copies_of(work, copies: int):
    """`copies` time-shifted copies of a cluster workload, each with its own block ids, in time order."""
    import numpy as np

    from kvviz.mechanisms.cluster.workload import Work
    n, span = len(work), float(work.times_s[-1] - work.times_s[0])
    base = int(work.ids.max()) + 1
    times = np.concatenate([work.times_s + c * span / copies for c in range(copies)])
    order = np.argsort(times, kind="stable")
    copy, req = np.divmod(order, n)
    lens = np.diff(work.offsets)[req]
    offsets = np.r_[0, np.cumsum(lens)]
    pos = np.repeat(work.offsets[:-1][req] - offsets[:-1], lens) + np.arange(offsets[-1])  # source positions
    ids = work.ids[pos] + np.repeat(copy, lens) * base
    return Work(ids, offsets, work.tokens[pos], work.input_tokens[req], work.output_tokens[req], times[order],
                work.block_tokens, f"{copies} copies of {work.source}")


def scale_case(copies: int, instances: int) -> None:
    import resource
    sc = load_scenario(SCENARIO, [f"cluster.instances={instances}", f"cluster.prefill_instances={instances // 2}"])
    work = copies_of(load_work(sc), copies)
    t = time.process_time()
    run = ClusterRun(sc, work, record=False).run()
    from kvviz.mechanisms.cluster.metrics import metrics
    m = metrics(run)
    dt = time.process_time() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"scale: {len(work):,} requests ({copies} copies), {instances} instances ({instances // 2} prefill), "
          f"global_cache_aware: {dt:.1f} s CPU, {len(work) / dt:,.0f} requests/s; peak RSS {peak:,.0f} MB; "
          f"per-job state as {'dicts' if run.sparse else 'lists'}; mean TTFT {m['mean_ttft_ms']:,.0f} ms; "
          f"notes: {'; '.join(m.get('notes', [])) or 'none'}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-scale", action="store_true", help="skip the 100-instance, 10x trace case")
    ap.add_argument("--scale-only", nargs=2, type=int, metavar=("COPIES", "INSTANCES"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.scale_only:
        scale_case(*args.scale_only)
        return 0
    print(describe(), f"· load average {os.getloadavg()[0]:.2f}")
    cases = []  # (label, requests, the run, preparation s)
    for label, sets in (("cluster, 16 instances (8 prefill + 8 decode), global_cache_aware", []),
                        ("cluster, 16 instances (each prefills and decodes), global_cache_aware",
                         ["cluster.prefill_instances=0"]),
                        ("cluster, 1 instance, global_cache_aware", ["cluster.instances=1",
                                                                     "cluster.prefill_instances=0"])):
        sc = load_scenario(SCENARIO, sets)
        work = load_work(sc)
        t = time.process_time()
        cprep = prepare_work(work)  # the workload's lists, as the prefix cache's prepare() below
        cases.append((label, len(work), partial(cluster_run, sc, work, cprep), time.process_time() - t))
    pc = prefix_cache_scenario(load_scenario(SCENARIO))
    blocks = load_blocks(pc)
    prep = prepare(blocks, {"lru"}, pc.cache.admission)
    caps = [t.blocks(blocks.block_tokens * pc.model.kv_bytes_per_token) for t in pc.tiers]
    # both sides run the compiled block cache where it is built (the prefix cache's and the cluster's)
    cases.append((PC_LABEL, len(blocks), lambda: Run(pc, blocks, prep, caps, ["lru"] * len(caps), False,
                                                     record=False).run(), None))
    # the cases in turn, `repeat` rounds: a load that comes and goes falls on every case alike
    times: list[list[float]] = [[] for _ in cases]
    runs: list = [None] * len(cases)
    for _ in range(args.repeat):
        for i, (_, _, fn, _) in enumerate(cases):
            t = time.process_time()
            runs[i] = fn()
            times[i].append(time.process_time() - t)
    med = {}
    for (label, n, _, t_prep), ts, r in zip(cases, times, runs):
        ts.sort()
        med[label] = m = ts[len(ts) // 2]
        print(f"{label}: {n:,} requests in {m:.2f} s CPU (median of {args.repeat}; {ts[0]:.2f}-{ts[-1]:.2f}): "
              f"{n / m:,.0f} requests/s; {r.loop.processed:,} events"
              + (f"; the workload prepared once beforehand in {t_prep:.2f} s" if t_prep is not None else ""))
    for label, _, _, _ in cases[:-1]:
        print(f"  {label}: {med[label] / med[PC_LABEL]:.2f}x the single-instance prefix cache (target: at most 2x)")
    if not args.no_scale:  # a child process: its peak RSS is the case's alone
        import subprocess
        subprocess.run([sys.executable, __file__, "--scale-only", "10", "100"], check=True)
    t = time.perf_counter()
    res = simulate(load_scenario(SCENARIO))
    print(f"kvviz run {SCENARIO.relative_to(ROOT)} (read, run, record): {time.perf_counter() - t:.2f} s wall; "
          f"mean TTFT {res.metrics['mean_ttft_ms']:,.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
