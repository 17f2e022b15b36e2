"""`kvviz plan` against `--exhaustive` on the bundled plan scenario (issue 34): timed runs, grid
points, wall time, and whether the answers agree; with --dump, every grid point's metrics (the
exhaustive run) to a JSON file, for checking monotonicity and other targets offline.

    PYTHONPATH=. python benchmarks/bench_plan.py [SCENARIO] [--target T ...] [--set PATH=VALUE ...]
        [--workers N] [--dump FILE] [--skip-exhaustive]
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from kvviz.plan.planner import plan
from kvviz.scenario_data import apply_override, read_toml


def replay(rp, limits: list[float]) -> list[dict]:
    """The search on the exhaustive run's own values, at other values of the first target."""
    from kvviz.plan.planner import Pricing, bound_check
    from kvviz.plan.search import exhaustive, search
    from kvviz.plan.targets import Target
    values = rp.outcome.values
    t0 = rp.targets[0]
    out, pricing = [], Pricing()
    tol = rp.grid.scenarios[0].plan.tolerance
    for v in limits:
        t = (Target(t0.metric, t0.op, v),)
        infeasible, _ = bound_check(rp.grid, t, pricing)
        o = search(rp.grid, t, lambda pts, cb=None: [values[i] for i in pts], infeasible, tolerance=tol)
        e = exhaustive(rp.grid, t, lambda pts, cb=None: [values[i] for i in pts])
        out.append({"target": str(t[0]), "same_best": o.best == e.best, "runs": o.runs,
                    "bound_pruned": o.bound_pruned, "feasible": e.best is not None})
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("scenario", nargs="?", default="scenarios/plan_prefix_tiers.toml")
    p.add_argument("--target", action="append")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--dump", help="write every grid point's settings and metrics (the exhaustive run) here")
    p.add_argument("--skip-exhaustive", action="store_true")
    p.add_argument("--replay-targets", metavar="V1,V2,...",
                   help="after --exhaustive, the search replayed on its measured values at each of these values "
                        "of the first target: same best, and runs")
    p.add_argument("--set", action="append", default=[], metavar="PATH=VALUE", help="override a field")
    a = p.parse_args(argv)
    data = read_toml(a.scenario)
    for assignment in a.set:
        data = apply_override(data, assignment)
    t_start = time.perf_counter()

    def progress(done):
        print(f"{time.perf_counter() - t_start:8.1f} s: {done} runs", file=sys.stderr, flush=True)
    rows = {}
    for ex in ((False,) if a.skip_exhaustive else (False, True)):
        t0 = time.perf_counter()
        rp = plan(data, a.scenario, a.target, None, None, ex, workers=a.workers, progress=progress)[0]
        wall = time.perf_counter() - t0
        d = rp.to_dict()
        print(f"{'exhaustive' if ex else 'plan'} done: {wall:.1f} s", file=sys.stderr, flush=True)
        rows["exhaustive" if ex else "plan"] = {"wall_s": round(wall, 2), "runs": d["runs"],
                                                "grid_runs": d["grid_runs"], "bound_pruned": d["bound_pruned"],
                                                "best": d["best"]}
        if ex:
            from kvviz.plan.slack import monotone_slack
            t = rp.targets[0]
            rows["monotone_slack"] = monotone_slack(rp.grid, rp.outcome.values, t.metric, t.op == "<=")
        if ex and a.replay_targets:
            rows["replayed"] = replay(rp, [float(v) for v in a.replay_targets.split(",")])
        if ex and a.dump:
            with open(a.dump, "w") as f:
                json.dump([{"settings": rp.grid.settings[i], "cost": float(rp.grid.cost[i]),
                            "combo": rp.grid.combos[i].tolist(), "values": rp.outcome.values[i],
                            "bounds": None if rp.lower_bounds is None else float(rp.lower_bounds[i])}
                           for i in range(len(rp.grid))], f)
    same = "exhaustive" not in rows or rows["plan"]["best"] == rows["exhaustive"]["best"]
    print(json.dumps({"scenario": a.scenario, "set": a.set, "workers": a.workers, **rows, "same_best": same}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
