"""attention_store speed (cache replay: bench_replay.py).

Run: .venv/bin/python benchmarks/bench_attention_store.py   (or benchmarks/run_all.py)
     .venv/bin/python benchmarks/bench_attention_store.py --versus-before-only [--set PATH=VALUE ...]
Prints figures; asserts nothing about time (tests never do).

`versus_before` runs `kvviz run attention_store_sharegpt --json` with this tree and with the
engine before issue 24 (commit 977c692, checked out by `git archive` into a temporary folder),
turn about, and prints the time ratio (wall, and CPU of the run and its worker processes: the
CPU figure is the steadier one on a shared machine) and whether the metrics are identical.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

from machine import describe, median_of, spread

from kvviz import load_scenario, simulate
from kvviz.mechanisms.attention_store import workload_of
from kvviz.mechanisms.attention_store.serving import Prepared, Run

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "977c692"  # the commit before issue 24 (the faster engine)


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


def _kvviz_run(tree: Path, sets: list[str]) -> tuple[float, float, dict]:
    """(wall s, CPU s of the process and its workers, the --json output) of one `kvviz run`."""
    args = [sys.executable, "-m", "kvviz", "run", "scenarios/attention_store_sharegpt.toml", "--json"]
    for x in sets:
        args += ["--set", x]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("KVVIZ_WORKERS", None)  # the command sets it to the number of cores, as a user gets it
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(args, cwd=tree, env=env, capture_output=True, text=True, check=True).stdout
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, json.loads(out)


def versus_before(sets: list[str] = (), rounds: int = 3):
    """`kvviz run attention_store_sharegpt` now and at BEFORE, alternating, `rounds` times each."""
    sets = list(sets)
    with tempfile.TemporaryDirectory(prefix="kvviz-before-") as tmp:
        old = Path(tmp)
        tar = subprocess.run(["git", "-C", str(ROOT), "archive", BEFORE], capture_output=True, check=True).stdout
        with tarfile.open(fileobj=BytesIO(tar)) as tf:
            tf.extractall(old, filter="data")
        times: dict[str, list[tuple[float, float]]] = {"before": [], "now": []}
        outs = {}
        for _ in range(rounds):
            for name, tree in (("before", old), ("now", ROOT)):
                wall, cpu, out = _kvviz_run(tree, sets)
                times[name].append((wall, cpu))
                outs.setdefault(name, out)
                if out != outs[name]:
                    print(f"  warning: two runs at {name} disagree")
    med = {k: (sorted(w for w, _ in v)[len(v) // 2], sorted(c for _, c in v)[len(v) // 2]) for k, v in times.items()}
    mb, mn = outs["before"]["metrics"], outs["now"]["metrics"]
    # the model has changed since BEFORE (load-or-recompute, run notes, ...): name what differs
    differ = sorted(k for k in set(mb) | set(mn) if mb.get(k) != mn.get(k))
    label = "attention_store_sharegpt" + "".join(f" --set {x}" for x in sets)
    print(f"kvviz run {label} --json, {rounds} runs each, alternating (median):")
    for k in ("before", "now"):
        print(f"  {k + (' (' + BEFORE + ')' if k == 'before' else ''):<18} wall {med[k][0]:6.2f} s, "
              f"CPU {med[k][1]:6.2f} s  (walls {', '.join(f'{w:.2f}' for w, _ in times[k])})")
    print(f"  now / before: wall {med['now'][0] / med['before'][0]:.2f}×, CPU {med['now'][1] / med['before'][1]:.2f}×; "
          f"metrics {'identical' if not differ else 'differ in ' + ', '.join(differ) + ' (model changes since ' + BEFORE + ')'}")


def main():
    print(describe())
    if "--versus-before-only" in sys.argv:
        sets = [sys.argv[i + 1] for i, a in enumerate(sys.argv) if a == "--set"]
        versus_before(sets)
        return
    versus_before()
    sharegpt()


if __name__ == "__main__":
    main()
