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
LRU: the compiled pass (the compiled block cache's prefix_counts, one pass per capacity, what
prefix_replay runs) and the numpy one-pass curve (stack distances, its fallback) answering every
capacity at once; FIFO and Belady replay each capacity through the prefix_cache engine, on the
compiled block cache (kvviz/serving/native/_block_cache.pyx, what prefix_replay runs) and on the
Python one (its reference, what prefix_replay ran before), both timed in the same run.

Against a plain loop and libCacheSim (issue 30, build item 6):
     .venv/bin/python benchmarks/bench_replay_prefix.py --versus [--copies 10] [--capacity 10000] [--repeat 5]
writes `--copies` time-shifted copies of the Mooncake conversation trace (shared/traces) into a
scratch dir: copy k's timestamps are the original's + k × (the last timestamp + 1 s), and its
hash ids the original's + k × (the largest id + 1), so no block of one copy is a block of another
(fresh ids: each copy has the conversation trace's prefix sharing within itself, none across).
Then, alternating round by round, each as its own process (start, read, simulate, print):
- kvviz: `kvviz replay FILE --prefix --format mooncake --unit blocks --capacities C --policy lru`
  (its lean path: kvviz/replay/prefix_lean.py, no numpy imported); its modules' bytecode cached
  as an installed kvviz has it (pip compiles it at install): PYTHONPYCACHEPREFIX is a scratch
  folder, written by an untimed warm-up run (with PYTHONDONTWRITEBYTECODE set, as in the
  sessions that build kvviz, each run compiles kvviz's ~35 modules from source: 0.035-0.126 s
  of `compile` under cProfile here, the machine shared; timed too, as "kvviz, no bytecode
  cache");
- the plain loop: PLAIN_LOOP below, json.loads per line and an OrderedDict prefix LRU, the
  twenty-odd lines anyone would write first (it must and does give kvviz's hit counts);
- libCacheSim 0.3.5's LRU on the same stream of blocks, fed as an oracleGeneral file written
  before the clock starts (its fastest input; making the stream from the JSONL is not timed for
  it). Plain LRU: it counts every resident block a hit, not the leading run, so its hit count
  differs; what it does per lookup (find, move to front, insert, evict) is the same work.
and, for scale, `python -c pass` (the interpreter's start, the floor of any process) and
`python -c "import numpy"` (what the lean path does not import); and the same three in one
process, reading and simulating only (no interpreter start, no imports): kvviz's lean path
(compiled scan, compiled LRU) and its full path (prompts.read and prefix_replay: numpy arrays,
the compiled LRU), with kvviz's two slower readers as well: orjson (where the compiled scanner
is not built) and the strict line-by-line reader (the reader before issue 30, without orjson
either); and the lean path's steps in CPU time. Min and median of `--repeat` rounds, and the
machine's load average before and after (the machine is shared: the rounds alternate so load
hits all alike).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import describe, median_of  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from kvviz.replay.native import prefix_pass  # noqa: E402
from kvviz.replay.prefix import (  # noqa: E402
    block_ids,
    distinct_blocks,
    engine_counts,
    longest_request,
    lru_counts,
    prefix_replay,
    prepared,
    request_of_block,
    runs,
)
from kvviz.requests import prompts  # noqa: E402
from kvviz.requests.prompts import PromptRequests  # noqa: E402

MOONCAKE = ROOT / "resources" / "traces" / "mooncake_synthetic_trace.jsonl"
compiled = prefix_pass()  # None where not built: its lines are left out


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
        print(f"    lru at {len(caps):>2} capacit{'y' if len(caps) == 1 else 'ies'}, stack distances (numpy, one pass): "
              f"{secs:.3f} s, {n * len(caps) / secs / 1e6:.1f} M block lookups/s")
        if compiled is not None:  # what prefix_replay runs: one compiled pass per capacity
            x, counts = block_ids(reqs), reqs.hash_counts
            k = int(x.max()) + 1
            secs, got = median_of(lambda caps=caps: compiled.prefix_counts(x, counts, caps, True, k), repeat)
            assert [tuple(g) for g in got] == lru_counts(reqs, caps) or min(caps) < longest_request(reqs)
            print(f"    lru at {len(caps):>2} capacit{'y' if len(caps) == 1 else 'ies'}, compiled (a pass each): "
                  f"{secs:.3f} s, {n * len(caps) / secs / 1e6:.1f} M block lookups/s")
    if kernels:
        cap = max(1, d // 10)
        for policy in ("fifo", "belady"):
            secs, _ = median_of(lambda policy=policy: prefix_replay(reqs, [policy], [cap]), 1)
            print(f"    {policy} at 1 capacity, prefix_replay (what kvviz replay --prefix runs, its preparing included): "
                  f"{secs:.2f} s, {n / secs / 1e6:.2f} M block lookups/s")
            # the replay itself on either block cache, the stream prepared once (before: the Python
            # cache was the only one; after: its compiled twin where it has one)
            prep = prepared(reqs, [policy])
            engine_counts(prep, policy, cap, True, compiled=True)  # builds the compiled cache's arrays once
            counts = {}
            for on in (False, True):
                secs, (counts[on], ran) = median_of(
                    lambda policy=policy, on=on: engine_counts(prep, policy, cap, True, compiled=on), repeat)
                print(f"    {policy} at 1 capacity, the replay alone ({'after' if on else 'before'}: {ran}): "
                      f"{secs:.3f} s, {n / secs / 1e6:.2f} M block lookups/s")
            assert counts[True] == counts[False], (policy, counts)  # the twin counts the same


CONVERSATION = Path("/work/shared/traces/mooncake_conversation_trace.jsonl")
if not CONVERSATION.exists():
    CONVERSATION = ROOT.parent / "shared" / "traces" / "mooncake_conversation_trace.jsonl"

PLAIN_LOOP = """
import json, sys
from collections import OrderedDict

def plain_loop(path, capacity):
    cache = OrderedDict()
    requests = blocks = hit_blocks = hit_requests = 0
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            ids = json.loads(line)["hash_ids"]
            requests += 1
            blocks += len(ids)
            hit = 0
            for h in ids:              # the longest resident prefix is the hit
                if h not in cache:
                    break
                hit += 1
            hit_blocks += hit
            hit_requests += hit > 0
            for h in ids:              # then every block in order: touched, or inserted
                if h in cache:
                    cache.move_to_end(h)
                else:
                    cache[h] = None
                    if len(cache) > capacity:
                        cache.popitem(last=False)
    return requests, blocks, hit_blocks, hit_requests

if __name__ == "__main__":
    print(*plain_loop(sys.argv[1], int(sys.argv[2])))
"""

LIBCACHESIM = """
import sys, libcachesim as lcs
reader = lcs.TraceReader(sys.argv[1], lcs.TraceType.ORACLE_GENERAL_TRACE)
miss_ratio, _ = lcs.LRU(int(sys.argv[2]), hashpower=int(sys.argv[3])).process_trace(reader)
print(miss_ratio)
"""


def time_shifted_copies(src: Path, dst: Path, copies: int) -> None:
    """`copies` copies of a Mooncake trace one after another in time, each with its own ids."""
    import json
    recs = [json.loads(line) for line in src.read_text().splitlines() if line.strip()]
    span = max(r["timestamp"] for r in recs) + 1000
    top = max((max(r["hash_ids"], default=-1) for r in recs), default=-1) + 1
    with open(dst, "w") as f:
        for k in range(copies):
            f.writelines(json.dumps({**r, "timestamp": r["timestamp"] + k * span,
                                     "hash_ids": [h + k * top for h in r["hash_ids"]]}) + "\n" for r in recs)


def versus(copies: int, capacity: int, repeat: int) -> None:
    """kvviz, the plain loop and libCacheSim on `copies` time-shifted copies with fresh ids."""
    import os
    import subprocess
    import tempfile

    import libcachesim as lcs

    from kvviz.replay.libcachesim_engine import OracleTraceFile, hashpower
    from kvviz.replay.prefix import block_ids, distinct_blocks
    from kvviz.requests import fast_jsonl

    def run(cmd, cached=True):
        t = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env if cached else bare)
        if out.returncode:
            raise SystemExit(f"failed: {' '.join(cmd)}\n{out.stderr[-2000:]}")
        return time.perf_counter() - t, out.stdout

    def plain_in_process(path):
        scope: dict = {"__name__": "plain"}
        exec(PLAIN_LOOP, scope)
        return scope["plain_loop"](path, capacity)

    def kvviz_in_process(path):
        reqs = prompts.read(path)
        distinct_blocks(reqs)
        return reqs, prefix_replay(reqs, ["lru"], [capacity])[0]

    def lean_in_process(path):
        from kvviz.replay import prefix_lean
        trace, counts = prefix_lean.read(path)
        return prefix_lean.lru(trace, counts, [capacity], True)[0]

    def steps(path) -> str:
        """Where the lean path's time goes, step by step (CPU time: less moved by other load)."""
        from kvviz.io import read_capped
        from kvviz.requests.native import scanned
        m = prefix_pass()
        data = read_capped(path, "trace file")
        got = scanned(data)
        ids, counts = got[5], got[4]
        k = m.id_range(ids)[1] + 1
        parts = {"read": lambda: read_capped(path, "trace file"), "scan (the strict reader's checks)": lambda: scanned(data),
                 "id range + distinct count": lambda: m.distinct(ids, m.id_range(ids)[1] + 1),
                 "LRU pass": lambda: m.prefix_counts(ids, counts, [capacity], True, k)}
        out = []
        for name, fn in parts.items():
            ts = []
            for _ in range(repeat):
                t = time.process_time()
                fn()
                ts.append(time.process_time() - t)
            out.append(f"{name} {sorted(ts)[len(ts) // 2]:.3f}")
        return ", ".join(out)

    def reader_in_process(path, scanner, orjson):
        """kvviz with the compiled scanner and orjson on or off (both off: the strict reader)."""
        keep = fast_jsonl.scanner, fast_jsonl.orjson
        fast_jsonl.scanner = keep[0] if scanner else (lambda: None)
        fast_jsonl.orjson = keep[1] if orjson else None
        try:
            return kvviz_in_process(path)
        finally:
            fast_jsonl.scanner, fast_jsonl.orjson = keep

    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="kvviz-bench-") as d:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env |= {"PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": str(Path(d) / "pycache")}
        bare = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}  # compiles kvviz each run
        path = Path(d) / f"conversation_x{copies}.jsonl"
        time_shifted_copies(CONVERSATION, path, copies)
        reqs, res = kvviz_in_process(path)
        x = block_ids(reqs)
        objects = distinct_blocks(reqs)
        trace = OracleTraceFile(x, np.ones(len(x), np.int64), None, directory=d, objects=objects, future=False)
        power = hashpower(objects)
        print(f"  {path.name}: {len(reqs):,} requests, {len(x):,} block lookups ({objects:,} distinct), "
              f"{path.stat().st_size / 1e6:.0f} MB; capacity {capacity:,} blocks; libCacheSim {lcs.__version__} "
              f"(hash power {power}); Mooncake scanner {'built' if fast_jsonl.scanner() else 'NOT BUILT'}, "
              f"orjson {'installed' if fast_jsonl.orjson else 'NOT INSTALLED'}")
        kv_cmd = [py, "-m", "kvviz", "replay", str(path), "--prefix", "--format", "mooncake", "--unit", "blocks",
                  "--capacities", str(capacity), "--policy", "lru", "--json"]
        procs = {"kvviz": kv_cmd, "kvviz, no bytecode cache": kv_cmd, "plain loop": [py, "-c", PLAIN_LOOP, str(path), str(capacity)],
                 "libCacheSim": [py, "-c", LIBCACHESIM, trace.path, str(capacity), str(power)],
                 "python -c pass": [py, "-c", "pass"], "python -c 'import numpy'": [py, "-c", "import numpy"]}
        run(kv_cmd)  # untimed: writes kvviz's bytecode to the cache, as an install does
        inproc = {"kvviz": lambda: lean_in_process(path), "kvviz, full path": lambda: kvviz_in_process(path),
                  "kvviz, orjson reader": lambda: reader_in_process(path, False, True),
                  "kvviz, strict reader": lambda: reader_in_process(path, False, False),
                  "plain loop": lambda: plain_in_process(path), "libCacheSim": lambda: trace.run("lru", capacity)}
        times: dict = {("process", k): [] for k in procs} | {("in process", k): [] for k in inproc}
        outs: dict = {}
        load = os.getloadavg()
        for _ in range(repeat):  # one round: each contender once, so load changes hit all alike
            for k, cmd in procs.items():
                secs, outs[k] = run(cmd, cached=k != "kvviz, no bytecode cache")
                times["process", k].append(secs)
            for k, fn in inproc.items():
                t = time.perf_counter()
                outs["in " + k] = fn()
                times["in process", k].append(time.perf_counter() - t)
        print(f"  load average (1, 5, 15 min) before the rounds {', '.join(f'{x:.2f}' for x in load)}, after "
              f"{', '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} cores)")
        ours = json.loads(outs["kvviz"])[0]
        lean, full = outs["in kvviz"], outs["in kvviz, full path"][1]
        if (lean.hit_blocks, lean.hit_requests) != (full.hit_blocks, full.hit_requests) or ours["engine"] != lean.engine:
            raise SystemExit(f"the lean path and the full path differ: {lean} {full} {ours}")
        loop = [int(v) for v in outs["plain loop"].split()]
        same = loop == [ours["requests"], ours["blocks"], ours["hit_blocks"], ours["hit_requests"]]
        print(f"  hit blocks, hit requests: kvviz {ours['hit_blocks']:,}, {ours['hit_requests']:,}; plain loop "
              f"{loop[2]:,}, {loop[3]:,} ({'equal' if same else 'DIFFERENT'}); libCacheSim's plain LRU "
              f"{round(len(x) * (1 - float(outs['libCacheSim']))):,} hit blocks (every resident block, not only the prefix)")
        print(f"  kvviz's lean path in steps, CPU seconds (process_time), median of {repeat}: {steps(path)}")
        print(f"  {'':<11} {'':<24} {'min':>7} {'median':>7}  vs kvviz (medians)")
        for (where, k), ts in times.items():  # the two pythons: the floor of any process, and numpy's import
            ts = sorted(ts)
            base = sorted(times[where, "kvviz"])[len(ts) // 2]
            print(f"  {where:<11} {k:<24} {ts[0]:>6.3f}s {ts[len(ts) // 2]:>6.3f}s  {ts[len(ts) // 2] / base:5.2f}x")
        for where in ("process", "in process"):
            med = {k: sorted(v)[len(v) // 2] for (w, k), v in times.items() if w == where}
            print(f"  {where}: the plain loop takes {med['plain loop'] / med['kvviz']:.2f}x kvviz's time (the target "
                  f"is >= 5), libCacheSim {med['libCacheSim'] / med['kvviz']:.2f}x (>= 1)")
        trace.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=100_000, help="requests of the generated traces")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--versus", action="store_true", help="only kvviz against a plain loop and libCacheSim")
    ap.add_argument("--copies", type=int, default=10, help="--versus: copies of the conversation trace")
    ap.add_argument("--capacity", type=int, default=10_000, help="--versus: LRU capacity in blocks")
    a = ap.parse_args()
    print(describe())
    if a.versus:
        versus(a.copies, a.capacity, a.repeat)
        return 0
    t = time.perf_counter()
    mooncake = prompts.read(MOONCAKE)
    print(f"  reading the bundled Mooncake JSONL: {time.perf_counter() - t:.2f} s")
    report("bundled Mooncake trace", mooncake, a.repeat, kernels=True)
    report("generated, shaped like the published traces", shaped(a.requests), a.repeat, kernels=False)
    report("generated, no structure (worst case)", unstructured(a.requests // 4), a.repeat, kernels=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
