"""Run every benchmark in this folder and print its figures."""
import runpy
import sys
from pathlib import Path

here = Path(__file__).parent
sys.path.insert(0, str(here))
for f in sorted(here.glob("bench_*.py")):
    print(f"== {f.name}", flush=True)
    try:
        runpy.run_path(str(f), run_name="__main__")
    except SystemExit as e:  # a benchmark's own exit (sys.exit(main())) must not end the others
        if e.code not in (0, None):
            raise
