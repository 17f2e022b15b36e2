"""`kvviz replay --prefix` speed: block lookups per second (issue 21's target: >= 5 M/s for LRU).

Run: .venv/bin/python benchmarks/bench_replay_prefix.py [--requests 100000] [--repeat 3]
     (make bench runs it as it stands)
Prints figures; asserts nothing about time. A lookup is one block of one request checked at one
capacity, so a replay at k capacities of a trace of n blocks makes k × n lookups. Timed in
process on requests already read (reading the JSONL is the reader's cost, printed apart).

- a generated trace shaped like the published ones: every request opens with one of 4 system
  prompts (4 blocks), then a document (5-60 blocks) picked by Zipf(0.9) popularity from 5,000,
  then 1-7 blocks of its own; one request in 5 continues an earlier conversation, re-sending its
  context plus 1-3 new blocks (the agent/multi-turn loop);
- the bundled Mooncake trace (121,877 blocks);
- the worst case for the LRU pass: ids with no structure (uniform over 50,000 blocks, requests of
  1-60 blocks), where no run of blocks always travels together and the pass is plain stack
  distances over every block.
LRU answers every capacity from one pass; FIFO and Belady replay each capacity in Python.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import describe, median_of  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from kvviz.replay.prefix import block_ids, distinct_blocks, lru_counts, prefix_replay, request_of_block, runs  # noqa: E402
from kvviz.requests import prompts  # noqa: E402
from kvviz.requests.prompts import PromptRequests  # noqa: E402

MOONCAKE = ROOT / "resources" / "traces" / "mooncake_synthetic_trace.jsonl"


def as_requests(lists: list[np.ndarray]) -> PromptRequests:
    counts = np.fromiter(map(len, lists), np.int64, len(lists))
    offsets = np.concatenate(([0], np.cumsum(counts)))
    n = len(lists)
    zeros = np.zeros(n, np.int64)
    return PromptRequests("plain", 16, np.arange(1, n + 1), np.arange(n, dtype=np.float64), zeros, zeros,
                          offsets, np.concatenate(lists).astype(np.int64))


def shaped(n_req: int, seed: int = 1) -> PromptRequests:
    rng = np.random.default_rng(seed)
    systems = [np.arange(k * 4, k * 4 + 4) for k in range(4)]
    base = 16
    docs = []
    for _ in range(5000):
        m = int(rng.integers(5, 61))
        docs.append(np.arange(base, base + m))
        base += m
    p = 1.0 / np.arange(1, 5001) ** 0.9
    pick = rng.choice(5000, n_req, p=p / p.sum())
    contexts: list[np.ndarray] = []
    out = []
    for i in range(n_req):
        if contexts and rng.random() < 0.2:
            k = int(rng.integers(0, len(contexts)))
            m = int(rng.integers(1, 4))
            req = np.concatenate((contexts[k], np.arange(base, base + m)))
            contexts[k] = req
        else:
            m = int(rng.integers(1, 8))
            req = np.concatenate((systems[i % 4], docs[pick[i]], np.arange(base, base + m)))
            contexts.append(req)
            if len(contexts) > 2000:
                contexts.pop(0)
        base += m
        out.append(req)
    return as_requests(out)


def unstructured(n_req: int, seed: int = 2) -> PromptRequests:
    rng = np.random.default_rng(seed)
    return as_requests([rng.integers(0, 50_000, int(rng.integers(1, 61))) for _ in range(n_req)])


def report(name: str, reqs: PromptRequests, repeat: int, kernels: bool) -> None:
    n = len(reqs.hashes)
    d = distinct_blocks(reqs)
    n_runs = len(runs(block_ids(reqs), request_of_block(reqs)))
    print(f"  {name}: {len(reqs):,} requests, {n:,} blocks ({d:,} distinct, {n_runs:,} runs)")
    caps12 = sorted({max(1, int(c)) for c in np.geomspace(max(d / 1000, 1), d, 12)})
    for caps in ([max(1, d // 10)], caps12):
        secs, _ = median_of(lambda caps=caps: lru_counts(reqs, caps), repeat)
        print(f"    lru at {len(caps):>2} capacit{'y' if len(caps) == 1 else 'ies'}: {secs:.3f} s, "
              f"{n * len(caps) / secs / 1e6:.1f} M block lookups/s")
    if kernels:
        for policy in ("fifo", "belady"):
            secs, _ = median_of(lambda policy=policy: prefix_replay(reqs, [policy], [max(1, d // 10)]), 1)
            print(f"    {policy} at 1 capacity: {secs:.2f} s, {n / secs / 1e6:.2f} M block lookups/s")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=100_000, help="requests of the generated traces")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    print(describe())
    t = time.perf_counter()
    mooncake = prompts.read(MOONCAKE)
    print(f"  reading the bundled Mooncake JSONL: {time.perf_counter() - t:.2f} s")
    report("bundled Mooncake trace", mooncake, a.repeat, kernels=True)
    report("generated, shaped like the published traces", shaped(a.requests), a.repeat, kernels=False)
    report("generated, no structure (worst case)", unstructured(a.requests // 4), a.repeat, kernels=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
