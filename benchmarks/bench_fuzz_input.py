"""Fuzz kvviz's inputs with thousands of fresh hostile cases and print how they ended, per
surface: scenarios (hostile edits of every bundled one, tests/input_mutations.py), trace files
in every format, command-line flags, output paths and the size guard on what is read
(tests/input_surfaces.py). Each ends as
"ran", "refused" (exit 2, at most 21 error lines) or "other" (a traceback, another exit code,
too many lines): other must be 0. Cases are drawn fresh from SEED (default: the clock).

    python benchmarks/bench_fuzz_input.py [CASES] [--seed SEED]     (default 3,200 cases)
"""
import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402

from tests.input_mutations import cases, outcome, source_of  # noqa: E402
from tests.input_surfaces import SURFACES, run_case  # noqa: E402


def _scenarios(n: int, rng_seed: int, seen: Counter, others: list) -> None:
    @seed(rng_seed)
    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(cases())
    def run(case):
        try:
            what = outcome(case[4], source_of(case[0]))
        except Exception as e:  # noqa: BLE001 - counted, and the case shown
            what = f"other: {type(e).__name__}"
            others.append(("scenario", case[:4], str(e)[:200]))
        seen["scenario", "refused" if what.startswith("validator bug") else what] += 1

    run()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", type=int, nargs="?", default=3200)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    rng_seed = args.seed if args.seed is not None else time.time_ns() % 2 ** 32
    seen: Counter = Counter()
    others: list = []
    t = time.perf_counter()
    k = len(SURFACES)
    per = args.cases // (k + 1)
    _scenarios(args.cases - k * per, rng_seed, seen, others)
    rng = random.Random(rng_seed)
    with tempfile.TemporaryDirectory(prefix="kvviz-fuzz-") as d:
        for i in range(k * per):
            surface = list(SURFACES)[i % k]
            tmp = Path(d) / str(i)
            tmp.mkdir()
            argv = SURFACES[surface](rng, tmp)
            what = run_case(argv)
            if what.startswith("other"):
                others.append((surface, argv[:10], what))
                what = "other"
            seen[surface, what] += 1
    total = sum(seen.values())
    print(f"fuzz_input: {total:,} cases (seed {rng_seed}) in {time.perf_counter() - t:.0f} s")
    print(f"  {'surface':<10} {'refused':>8} {'ran':>8} {'other':>6}")
    for surface in ["scenario", *SURFACES]:
        print(f"  {surface:<10} {seen[surface, 'refused']:>8,} {seen[surface, 'ran']:>8,} "
              f"{sum(v for (s, w), v in seen.items() if s == surface and w not in ('ran', 'refused')):>6,}")
    counts = {w: sum(v for (s, x), v in seen.items() if (x if x in ('ran', 'refused') else 'other') == w)
              for w in ("refused", "ran", "other")}
    print(f"  {'all':<10} {counts['refused']:>8,} {counts['ran']:>8,} {counts['other']:>6,}")
    for o in others[:20]:
        print("  other:", *o)
    return 1 if counts["other"] else 0


if __name__ == "__main__":
    sys.exit(main())
