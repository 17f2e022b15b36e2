"""Fuzz the bundled scenarios with thousands of fresh hostile edits (tests/input_mutations.py)
and print how they ended: ran, refused (exit 2, one line each), or a known validator bug.
Any other exception stops the run with the case that raised it.

    python benchmarks/bench_fuzz_input.py [CASES]     (default 2,500)
"""
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hypothesis import HealthCheck, given, settings  # noqa: E402

from tests.input_mutations import cases, outcome  # noqa: E402


def main(n: int) -> int:
    seen: Counter = Counter()

    @settings(max_examples=n, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(cases())
    def run(case):
        seen[outcome(case[4])] += 1

    t = time.perf_counter()
    run()
    total = sum(seen.values())
    print(f"fuzz_input: {total:,} cases in {time.perf_counter() - t:.0f} s")
    for what, count in seen.most_common():
        print(f"  {what:<60} {count:>6,}")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2500))
