"""Launch → first paint and launch → first result of `kvviz-gui SCENARIO`, for every bundled
scenario, each launch in a fresh process (benchmarks/start_probe.py), as a user starting the app.

Run (a real X window on a virtual X server when Xvfb is installed, else offscreen):
    Xvfb :98 -screen 0 1600x1000x24 &
    DISPLAY=:98 .venv/bin/python benchmarks/bench_app_start.py [--repeat N] [--against DIR]
`--against DIR` times another checkout too (e.g. a worktree of main), launches alternated
(this one, then DIR, per scenario and repeat) so both see the same load. Columns, in seconds
from the launch: the main window first painted (with its panels), the first result drawn (the
first part of a run made of parts, else the whole run), the whole first run drawn. The median
of the repeats, the range beside it when there are several. One untimed launch per checkout
first (its bytecode written, as pip writes an installed app's). Prints figures, asserts nothing.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def launch(checkout: Path, scenario: str, env: dict) -> dict:
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, str(HERE / "start_probe.py"), repr(t0), scenario], cwd=checkout, env=env,
                       capture_output=True, text=True, timeout=900)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode or not lines:
        return {"error": (p.stderr.strip().splitlines() or ["no output"])[-1]}
    out = json.loads(lines[-1])
    if "result" in out:
        out["first"] = min(out["result"], out.get("partial", out["result"]))
    return out


def _cell(xs: list[float]) -> str:
    if not xs:
        return "—"
    xs = sorted(xs)
    mid = xs[len(xs) // 2]
    return f"{mid:5.2f}" + (f" ({xs[0]:.2f}–{xs[-1]:.2f})" if len(xs) > 1 else "")


def main() -> int:
    from machine import describe
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 1
    against = Path(sys.argv[sys.argv.index("--against") + 1]).resolve() if "--against" in sys.argv else None
    env = dict(os.environ)
    if not env.get("DISPLAY"):
        env.setdefault("QT_QPA_PLATFORM", "offscreen")
    env.pop("KVVIZ_WORKERS", None)  # as kvviz-gui sets it (every core)
    # as an installed app starts: from compiled bytecode (pip compiles it), not from source
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.path.insert(0, str(ROOT))
    from kvviz.bundled import bundled_scenarios
    names = [p.stem for p in bundled_scenarios()]
    checkouts = [("this", ROOT)] + ([("against", against)] if against else [])
    print(describe())
    shown = "offscreen" if env.get("QT_QPA_PLATFORM") == "offscreen" else f"X display {env['DISPLAY']}"
    print(f"platform: {shown}; "
          f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    times = {(c, n): [] for c, _ in checkouts for n in names}
    for _, checkout in checkouts:  # untimed: writes each checkout's bytecode, warms the disk cache
        launch(checkout, names[0], env)
    for name in names:
        for _ in range(repeat):
            for label, checkout in checkouts:
                times[(label, name)].append(launch(checkout, name, env))
    for label, checkout in checkouts:
        print(f"\n{checkout} ({label}): seconds from launch, median of {repeat}")
        print(f"  {'scenario':<28} {'first paint':<18} {'first result':<18} {'whole run':<18}")
        for name in names:
            runs = times[(label, name)]
            errors = [r["error"] for r in runs if "error" in r]
            col = {k: [r[k] for r in runs if k in r] for k in ("paint", "first", "result")}
            print(f"  {name:<28} {_cell(col['paint']):<18} {_cell(col['first']):<18} {_cell(col['result']):<18}"
                  + (f"  ⚠ {errors[0]}" if errors else ""))
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main())
