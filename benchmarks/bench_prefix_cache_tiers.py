"""`kvviz run scenarios/prefix_cache_tiers.toml` at this checkout against commit 517b27d (issue 30's
reference: before the tiered block cache, its compiled twin and load-or-recompute's closed form),
in the same run: 517b27d is checked out into a temporary git worktree, and the two commands
alternate (HEAD, base, HEAD, base, ...) so a change in the machine's load hits both.

Run: .venv/bin/python benchmarks/bench_prefix_cache_tiers.py [--repeat 5] [--base 517b27d]
Prints, per side, the wall time and the child's CPU time (user + sys, from the process's
rusage: what the load of other processes on a shared machine changes least), the median of
--repeat and the range, and the ratios base / HEAD. Asserts nothing about time.

Each side is warmed up once first (its bytecode cache written, unless PYTHONDONTWRITEBYTECODE is
set: then every run compiles the modules it imports, on both sides alike; --no-bytecode keeps
that setting, the default clears it for the children, as an installed kvviz runs). The base
worktree has no compiled modules of its own: 517b27d's prefix cache is pure Python. The two
sides' metrics differ (load-or-recompute, c39afbe, came after 517b27d); HEAD's own results are
held by the tests (tests/test_block_cache_twin.py, the prefix cache's expectations).
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import describe  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = "scenarios/prefix_cache_tiers.toml"


def one(tree: Path, env: dict) -> tuple[float, float]:
    """(wall s, CPU s) of one `kvviz run` in `tree` (its own code: cwd first on sys.path)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "kvviz", "run", SCENARIO, "--json"], cwd=tree, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def summary(xs: list) -> str:
    xs = sorted(xs)
    return f"{xs[len(xs) // 2]:.2f} s (median of {len(xs)}; {xs[0]:.2f}-{xs[-1]:.2f})"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--base", default="517b27d")
    ap.add_argument("--no-bytecode", action="store_true", help="keep PYTHONDONTWRITEBYTECODE as it is")
    args = ap.parse_args()
    env = dict(os.environ)
    if not args.no_bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    print(describe(), f"· load average {os.getloadavg()[0]:.2f} at the start")
    tmp = Path(tempfile.mkdtemp(prefix="kvviz-base-"))
    base = tmp / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), args.base], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        trees = {"HEAD": ROOT, args.base: base}
        for tree in trees.values():
            one(tree, env)  # warm-up: bytecode written, files in the page cache
        times = {name: ([], []) for name in trees}
        for _ in range(args.repeat):
            for name, tree in trees.items():
                wall, cpu = one(tree, env)
                times[name][0].append(wall)
                times[name][1].append(cpu)
        for name, (wall, cpu) in times.items():
            print(f"{name}: wall {summary(wall)}, CPU {summary(cpu)}")
        h, b = times["HEAD"], times[args.base]
        med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
        print(f"{args.base} / HEAD: wall {med(b[0]) / med(h[0]):.2f}x, CPU {med(b[1]) / med(h[1]):.2f}x "
              f"(the target: 5x) · load average {os.getloadavg()[0]:.2f} at the end")
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
