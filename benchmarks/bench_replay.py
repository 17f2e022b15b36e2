"""Cache replay speed: kvviz against libCacheSim's own Python API, in one run.

Run: .venv/bin/python benchmarks/bench_replay.py [--requests 1000000] [--repeat 3]
     (make bench runs it at 1M requests; --requests 10000000 for the 10M figures)
Prints figures; asserts nothing about time (tests never do). Wall-clock medians; the machine's
other load moves them, so compare the ratios printed side by side, not figures across runs.

- reading the CSV: kvviz's reader (pyarrow), its own numpy reader (the fallback without pyarrow),
  Python's csv module (kvviz's reader before issue 14) and libCacheSim's CSV reader (which has
  no arrays to give back: it reads while simulating);
- end to end, one process per run (start, read the CSV, simulate, print): `kvviz replay` against
  a script on libCacheSim's Python API (its CSV reader; default hash power, and again with the
  hash power kvviz sizes from the object count), per policy at 1% and 10% of the footprint;
- the same simulations in process on the requests already read: libCacheSim through kvviz's
  engine, kvviz's own Python kernels;
- an LRU curve of 12 capacities (lru_curve_sampling): one exact pass (stack distances), one
  SHARDS pass at R = 0.01 with its error, and 12 separate libCacheSim LRU runs.
"""
from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import median_of  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
KVVIZ = str(Path(PY).with_name("kvviz"))
POLICIES = ("lru", "fifo", "belady", "s3fifo", "sieve")
LCS_CLASS = {"lru": "LRU", "fifo": "FIFO", "belady": "Belady", "s3fifo": "S3FIFO", "sieve": "Sieve"}

# libCacheSim's Python API reading the same CSV: what a libCacheSim user would write.
LCS_SCRIPT = """
import sys, libcachesim as lcs
p = lcs.ReaderInitParam(has_header=True, delimiter=",")
p.time_field, p.obj_id_field, p.obj_size_field = 1, 2, 3
r = lcs.TraceReader(sys.argv[1], lcs.TraceType.CSV_TRACE, p)
if sys.argv[2] == "Belady":  # a CSV has no future: libCacheSim's Belady needs it converted to oracleGeneral
    lcs.Util.convert_to_oracleGeneral(r._reader, sys.argv[1] + ".oracleGeneral")
    r = lcs.TraceReader(sys.argv[1] + ".oracleGeneral", lcs.TraceType.ORACLE_GENERAL_TRACE)
tuned = {"hashpower": int(sys.argv[4])} if len(sys.argv) > 4 else {}  # else the library's default, 2^24 buckets
print(getattr(lcs, sys.argv[2])(int(sys.argv[3]), **tuned).process_trace(r))
"""


def zipf_trace(n, objects, seed=1):
    """Zipf(0.9)-popular integer ids, sizes 1..100 KB fixed per object (as bench_attention_store)."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, objects + 1) ** 0.9
    ids = rng.choice(objects, n, p=p / p.sum())
    size_of = rng.integers(1_000, 100_000, objects)
    return ids, size_of[ids]


def write_csv(path, ids, sizes):
    with open(path, "w") as f:
        f.write("time,id,size\n")
        chunk = 1_000_000
        for a in range(0, len(ids), chunk):
            f.write("".join(f"{a + i},{k},{s}\n" for i, (k, s) in
                            enumerate(zip(ids[a:a + chunk].tolist(), sizes[a:a + chunk].tolist()))))


def old_csv_reader(path):
    """kvviz's reader before issue 14: csv module, then numbers via Python."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    cols = list(zip(*rows[1:]))
    index: dict = {}
    ids = [index.setdefault(x, len(index)) for x in cols[1]]
    return np.fromiter(map(float, cols[0]), float, len(ids)), np.fromiter(map(int, cols[2]), int, len(ids)), ids


def run(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{out.stderr[-2000:]}")
    return out.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    import libcachesim as lcs

    from kvviz.replay import replay
    from kvviz.replay.libcachesim_engine import OracleTraceFile, hashpower
    from kvviz.requests.csv_format import read_csv

    n, rep = args.requests, args.repeat
    ids, sizes = zipf_trace(n, max(1000, n // 10))
    with tempfile.TemporaryDirectory() as d:
        path = str(Path(d) / "trace.csv")
        write_csv(path, ids, sizes)
        print(f"replay benchmark: {n:,} requests, {len(np.unique(ids)):,} objects, libCacheSim {lcs.__version__}, "
              f"medians of {rep}")

        secs, reqs = median_of(lambda: read_csv(path), rep)
        exact, _ = median_of(lambda: read_csv(path, fast=False), 1 if n > 2_000_000 else rep)
        old = median_of(lambda: old_csv_reader(path), rep)[0] if n <= 2_000_000 else None
        lcs_read, _ = median_of(lambda: run([PY, "-c", LCS_SCRIPT, path, "LRU", str(reqs.footprint // 100)]), rep)
        print(f"  read the CSV: kvviz {secs:.2f} s ({n / secs / 1e6:.1f} M rows/s, pyarrow); kvviz's own reader "
              f"(no pyarrow) {exact:.2f} s" + (f"; csv module {old:.2f} s" if old else "") +
              f"; libCacheSim reading while simulating LRU, whole process {lcs_read:.2f} s")

        top, power = reqs.footprint, hashpower(reqs.objects)
        print(f"  end to end (process start, read, simulate, print), capacity as a share of the footprint "
              f"{top:,} B; libCacheSim's API as its users call it (default hash power 24), and with the hash "
              f"power kvviz sizes from the objects ({power}):")
        print(f"    {'policy':<7} {'share':>5}  {'kvviz CLI':>9}  {'libCacheSim':>11}  ratio  {'lcs, power ' + str(power):>14}"
              f"  ratio  miss ratios (kvviz, lcs)")
        for policy in POLICIES:
            for share in (0.01, 0.1):
                cap = int(top * share)
                kv, out = median_of(lambda: run([KVVIZ, "replay", path, "--policy", policy, "--capacity", str(cap),
                                                 "--json"]), rep)
                lc, lout = median_of(lambda: run([PY, "-c", LCS_SCRIPT, path, LCS_CLASS[policy], str(cap)]), rep)
                lt, _ = median_of(lambda: run([PY, "-c", LCS_SCRIPT, path, LCS_CLASS[policy], str(cap), str(power)]),
                                  rep)
                ours = json.loads(out)[0]["request_miss_ratio"]
                theirs = float(lout.strip().strip("()").split(",")[0])
                print(f"    {policy:<7} {share:>5.0%}  {kv:>8.2f}s  {lc:>10.2f}s  {kv / lc:>4.2f}x  {lt:>13.2f}s  "
                      f"{kv / lt:>4.2f}x  {ours:.4f} {theirs:.4f}")

        print("  in process, requests already read (simulation alone):")
        with OracleTraceFile(reqs.ids, reqs.sizes, reqs.times) as trace:
            for policy in ("lru", "fifo", "belady"):
                cap = int(top * 0.01)
                a, _ = median_of(lambda: trace.run(policy, cap), rep)
                b, _ = median_of(lambda: replay(reqs, policy, cap, engine="python"), 1)
                print(f"    {policy:<7} 1%: libCacheSim via kvviz {a:.2f} s (hash power {hashpower(reqs.objects)}); "
                      f"kvviz Python kernel {b:.2f} s ({b / a:.0f}x)")

        lru_curve_sampling(reqs, rep)


def lru_curve_sampling(reqs, rep, rate=0.01):
    """The LRU curve of 12 capacities three ways: one exact pass, one SHARDS pass at `rate` (with
    its error against the exact curve), 12 libCacheSim LRU runs (hash power from the objects)."""
    from kvviz.replay.libcachesim_engine import OracleTraceFile
    from kvviz.replay.stack_distance import lru_curve

    top = reqs.footprint
    caps = [int(c) for c in np.geomspace(top / 1000, top, 12)]
    exact_s, exact = median_of(lambda: lru_curve(reqs.ids, reqs.sizes, caps), rep)
    shards_s, est = median_of(lambda: lru_curve(reqs.ids, reqs.sizes, caps, sample_rate=rate), rep)
    with OracleTraceFile(reqs.ids, reqs.sizes, reqs.times, objects=reqs.objects) as trace:
        twelve_s, _ = median_of(lambda: [trace.run("lru", c) for c in caps], rep)
    err = np.abs([(e[0] - x[0]) / len(reqs) for e, x in zip(est, exact)])
    byte_err = np.abs([(e[1] - x[1]) / reqs.bytes for e, x in zip(est, exact)])
    print(f"  LRU curve of 12 capacities, from the requests in memory: one exact pass {exact_s:.2f} s; "
          f"SHARDS R={rate:g} {shards_s:.3f} s; 12 libCacheSim LRU runs {twelve_s:.2f} s "
          f"({twelve_s / exact_s:.1f}x the exact pass, {twelve_s / shards_s:.0f}x SHARDS)")
    print(f"    SHARDS error against the exact curve: request miss ratio max {err.max():.4f} mean {err.mean():.4f}; "
          f"byte miss ratio max {byte_err.max():.4f} mean {byte_err.mean():.4f}")


if __name__ == "__main__":
    main()
