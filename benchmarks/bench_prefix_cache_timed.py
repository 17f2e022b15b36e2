"""The timed prefix-cache engine's speed (issue 21's target: faster than AISimulate's published
1,000 Mooncake requests in 1.3 s, i.e. 769 requests/s, on this machine).

Run: .venv/bin/python benchmarks/bench_prefix_cache_timed.py [--repeat 3]
     (make bench runs it as it stands)
Prints figures; asserts nothing about time. On the bundled Mooncake trace (3,993 requests, its
512-token blocks) with scenarios/prefix_cache_mooncake.toml's tiers (HBM 80 GB + DRAM + SSD),
`serving.timing = true`, LRU: the `Run` alone (requests already read and prepared), CPU time,
median of --repeat; then the same with scheduler-aware prefetch under each link rule; then
`kvviz run` as a user calls it (reading the trace, every run), wall time, once.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import describe  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from kvviz import load_scenario, simulate  # noqa: E402
from kvviz.mechanisms.prefix_cache.engine import prepare  # noqa: E402
from kvviz.mechanisms.prefix_cache.timed import Run  # noqa: E402
from kvviz.mechanisms.prefix_cache.workload import load  # noqa: E402

SCENARIO = ROOT / "scenarios" / "prefix_cache_mooncake.toml"
AISIMULATE = 1000 / 1.3  # their README's figure, requests/s: a reference, not a result of ours


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(describe(), f"· load average {os.getloadavg()[0]:.2f}")
    base = ["serving.timing=true", 'policies=["lru"]', "trace_policy=lru"]
    for label, sets in (("LRU, no prefetch", []),
                        ("LRU + prefetch, links.rule = fifo", ["store.prefetch=true", "links.rule=fifo"]),
                        ("LRU + prefetch, links.rule = demand_first", ["store.prefetch=true",
                                                                       "links.rule=demand_first"])):
        sc = load_scenario(SCENARIO, base + sets)
        blocks = load(sc)
        prep = prepare(blocks, {"lru", "belady"}, sc.cache.admission)
        caps = [t.blocks(blocks.block_tokens * sc.model.kv_bytes_per_token) for t in sc.tiers]
        times = []
        for _ in range(args.repeat):
            t = time.process_time()
            r = Run(sc, blocks, prep, caps, ["lru"] * len(caps), sc.store.prefetch, record=False).run()
            times.append(time.process_time() - t)
        times.sort()
        med = times[len(times) // 2]
        print(f"{label}: {len(blocks):,} requests in {med:.2f} s CPU (median of {len(times)}; "
              f"{times[0]:.2f}-{times[-1]:.2f}): {len(blocks) / med:,.0f} requests/s = "
              f"{len(blocks) / med / AISIMULATE:.1f}× AISimulate's 769/s; {r.loop.processed:,} events")
    sc = load_scenario(SCENARIO, base)
    t = time.perf_counter()
    res = simulate(sc)
    print(f"kvviz run (timed, LRU + its Belady reference, reading the trace): {time.perf_counter() - t:.2f} s wall, "
          f"TTFT p50 {res.metrics['policies']['lru']['ttft_p50_ms'] / 1e3:,.0f} s (the trace overloads one group)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
