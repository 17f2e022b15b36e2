"""Run every benchmark in this folder and print its figures.

    python benchmarks/run_all.py [--record]

--record (what `make bench` runs): each benchmark in its own process through record.py, its
output kept in benchmarks/results/NAME.txt with the machine, load, commit and date, for the
documentation's Performance page. A benchmark that fails keeps its previous record; the others
still run, and the exit code is 1.
"""
import runpy
import sys
from pathlib import Path

here = Path(__file__).parent
sys.path.insert(0, str(here))
benches = sorted(here.glob("bench_*.py"))
if "--record" in sys.argv[1:]:
    from record import record
    failed = []
    for f in benches:
        print(f"== {f.name}", flush=True)
        if record(f.stem, []) != 0:
            failed.append(f.stem)
    if failed:
        print(f"run_all.py: failed, previous records kept: {', '.join(failed)}", file=sys.stderr)
    sys.exit(1 if failed else 0)
for f in benches:
    print(f"== {f.name}", flush=True)
    try:
        runpy.run_path(str(f), run_name="__main__")
    except SystemExit as e:  # a benchmark's own exit (sys.exit(main())) must not end the others
        if e.code not in (0, None):
            raise
