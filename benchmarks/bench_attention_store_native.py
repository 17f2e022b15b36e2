"""An experiment, not a shipped path: what compiling attention_store's engine with mypyc gives
(issue 24, item 1), and whether the compiled engine gives the same results.

Run: MYPYC=/path/to/venv/bin/mypyc .venv/bin/python benchmarks/bench_attention_store_native.py
     (mypyc comes with `pip install mypy`; it is not a kvviz dependency)

It copies the engine's modules (events, batching, store, load_rule, gpu, placement) into a
temporary package, applies the few edits mypyc needs that the source does not carry (below:
types of what Run hands over, a float i*, registration without class decorators), compiles them,
then in a child process swaps the compiled classes into serving.Run and
- checks every run of tests/test_attention_store_speed.py against its golden outcome;
- times each policy's run per turn, reference and compiled, alternating (min of ROUNDS).
Prints figures; asserts nothing about time.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "kvviz" / "mechanisms" / "attention_store"
MODULES = ["events.py", "batching.py", "store.py", "load_rule.py", "gpu.py"]
PLACEMENT = ["__init__.py", "base.py", "belady.py", "fifo.py", "lru.py", "recompute.py", "scheduler_aware.py"]
ROUNDS = 3

# (file, pattern, replacement): each must apply (the experiment stops where the source moved on).
EDITS = [
    ("events.py", r"from \.\.\.engine import", "from kvviz.engine import"),
    ("batching.py", r"from \.model import GB", "from kvviz.mechanisms.attention_store.model import GB"),
    ("batching.py", r"        self\.conv, self\.keep, self\.inn, self\.out = run\.conv, run\.keep, run\.inn, run\.out\n",
     "        self.conv: list[int] = run.conv\n        self.keep: list[int] = run.keep\n"
     "        self.inn: list[int] = run.inn\n        self.out: list[int] = run.out\n"),
    ("batching.py", r"        self\.run, self\.loop, self\.store = run, run\.loop, run\.store\n",
     "        self.run = run\n        self.loop: Loop = run.loop\n        self.store: Store = run.store\n"),
    ("batching.py", r"        self\.gpu = prep\.gpu", "        self.gpu: Roofline = prep.gpu"),
    ("batching.py", r"from \.store import HIT_HBM\n", "from .events import Loop\nfrom .gpu import Roofline\nfrom .store import HIT_HBM, Store\n"),
    ("store.py", r"        self\.conv = run\.conv\n", "        self.conv: list[int] = run.conv\n"),
    ("store.py", r"        self\.next_row = run\.next_row", "        self.next_row: list[int] = run.next_row"),
    ("store.py", r"        self\.policy = PLACEMENTS", "        self.policy: Placement = PLACEMENTS"),
    ("store.py", r"from \.placement\.base import ", "from .placement.base import Placement, "),
    ("gpu.py", r"            i_star = 0\n", "            i_star: float = 0.0\n"),
    ("gpu.py", r"            i_star = math\.ceil\(\(C - M0\) / g\)\n", "            i_star = float(math.ceil((C - M0) / g))\n"),
    ("placement/base.py", r"    def __init__\(self, store\):", "    def __init__(self, store: Store) -> None:"),
    ("placement/base.py", r"from collections import OrderedDict\n",
     "from collections import OrderedDict\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..store import Store\n"),
    ("placement/__init__.py", r"from \.base import PLACEMENTS, Placement  # noqa: F401\n",
     "from .base import PLACEMENTS, Placement  # noqa: F401\nPLACEMENTS.update(recompute=recompute.Recompute, lru=lru.LRU, "
     "fifo=fifo.FIFO, scheduler_aware=scheduler_aware.SchedulerAware, belady=belady.Belady)\n"),
]
# mypyc makes a decorated class a non-extension class, which may not derive from a compiled one.
DECORATED = re.compile(r'@register\("\w+"\)\n')

CHILD = r'''
import json, sys, time
sys.path.insert(0, sys.argv[1])
import asn.batching, asn.events, asn.gpu, asn.store
from kvviz import load_scenario
from kvviz.mechanisms.attention_store import serving, workload_of
REF = (serving.Store, serving.Batcher, serving.Loop, serving.Roofline)
NATIVE = (asn.store.Store, asn.batching.Batcher, asn.events.Loop, asn.gpu.Roofline)
assert asn.batching.__file__.endswith(".so"), asn.batching.__file__
def use(classes):
    serving.Store, serving.Batcher, serving.Loop, serving.Roofline = classes
sys.path.insert(0, sys.argv[2])
import test_attention_store_speed as t
use(NATIVE)
golden = t._golden()
same = sum(t.outcome(t.run_variant(n)) == golden["variants"][n] for n in t.VARIANTS)
same += sum(t.outcome(t.run_random(s)) == golden["random"][str(s)] for s in t.RANDOM)
out = {"same": same, "of": len(t.VARIANTS) + len(t.RANDOM), "us": {}}
sc = load_scenario(t.ROOT / "scenarios/attention_store_sharegpt.toml", ["workload.conversations=2000"])
wl = workload_of(sc)
for _ in range(int(sys.argv[3])):
    for name, classes in (("reference", REF), ("mypyc", NATIVE)):
        use(classes)
        prep = serving.Prepared(sc, wl)
        for pol in ("recompute", "lru", "fifo", "scheduler_aware", "belady"):
            c = time.process_time()
            serving.Run(sc, prep, pol, "decoupled", False).run()
            us = (time.process_time() - c) / len(wl) * 1e6
            out["us"].setdefault(pol, {})[name] = min(out["us"].get(pol, {}).get(name, 1e9), us)
print(json.dumps(out))
'''


def build(tmp: Path, mypyc: str) -> None:
    pkg = tmp / "asn"
    (pkg / "placement").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for m in MODULES:
        shutil.copy(ENGINE / m, pkg / m)
    for m in PLACEMENT:
        text = DECORATED.sub("", (ENGINE / "placement" / m).read_text())
        (pkg / "placement" / m).write_text(text.replace(", register", ""))
    for f, pat, rep in EDITS:
        p = pkg / f
        text, n = re.subn(pat, rep, p.read_text())
        if n == 0:
            raise SystemExit(f"{f}: the edit for {pat!r} no longer applies")
        p.write_text(text)
    files = [f"asn/{m}" for m in MODULES] + [f"asn/placement/{m}" for m in PLACEMENT]
    r = subprocess.run([mypyc, "--ignore-missing-imports", "--check-untyped-defs", *files], cwd=tmp,
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if r.returncode:
        raise SystemExit("mypyc failed:\n" + "\n".join(ln for ln in r.stdout.splitlines() if "error" in ln))


def main():
    mypyc = os.environ.get("MYPYC") or shutil.which("mypyc")
    if not mypyc:
        print("mypyc not found: set MYPYC to a mypyc from `pip install mypy` (any venv of this Python)")
        return
    from machine import describe
    print(describe())
    rounds = int(os.environ.get("ROUNDS", ROUNDS))
    with tempfile.TemporaryDirectory(prefix="kvviz-native-") as tmp:
        build(Path(tmp), mypyc)
        r = subprocess.run([sys.executable, "-c", CHILD, tmp, str(ROOT / "tests"), str(rounds)],
                           capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    print(f"compiled engine (mypyc): {out['same']} of {out['of']} golden runs identical (metrics, trace, events)")
    print("µs per turn, attention_store_sharegpt at 2,000 conversations, one policy's run, "
          f"min of {rounds} alternating:")
    tot = {"reference": 0.0, "mypyc": 0.0}
    for pol, v in out["us"].items():
        print(f"  {pol:<16} reference {v['reference']:6.1f}   mypyc {v['mypyc']:6.1f}   ×{v['reference'] / v['mypyc']:.2f}")
        for k in tot:
            tot[k] += v[k]
    print(f"  all five: ×{tot['reference'] / tot['mypyc']:.2f}")


if __name__ == "__main__":
    main()
