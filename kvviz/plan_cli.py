"""`kvviz plan FILE`: the cheapest mix on the scenario's `[plan]` grid meeting the targets
(kvviz.plan), its cost-latency front, runs made against the grid's size, and a figure."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .bundled import resolve_scenario
from .cli_flags import output_path
from .format import printable

if TYPE_CHECKING:
    from .cli_flags import Subparsers


def _fmt_point(p: dict[str, Any]) -> str:
    s = ", ".join(f"{k}={v:g}" for k, v in p["settings"].items())
    rest = ", ".join(f"{k} = {v:.6g}" if isinstance(v, (int, float)) else f"{k} = {v}"
                     for k, v in p.items() if k not in ("settings",))
    return f"{s}: {rest}"


def as_text(out: dict[str, Any]) -> str:
    lines = []
    rate = f" at rate {out['rate']:g}" if out["rate"] is not None else ""
    lines.append(f"targets{rate}: {'; '.join(out['targets'])}")
    if out["best"] is not None:
        lines.append(f"cheapest mix meeting them: {_fmt_point(out['best'])}")
    else:
        lines.append(f"{out['message']}; closest run: {_fmt_point(out['closest']) if out['closest'] else 'none'}")
    lines.append(f"timed runs: {out['runs']} of a {out['grid_runs']}-point grid "
                 f"({out['bound_pruned']} ruled out by the TTFT bound before any run), {out['seconds']:.1f} s")
    lines.append("cost-latency front (of the mixes run):")
    lines += [f"  {_fmt_point(p)}" for p in out["front"]]
    for b in out.get("monotonicity_broken", []):
        lines.append(f"warning: a monotone axis was not, here: missed at {b['missed']}, met below it at {b['met']}")
    return "\n".join(lines)


def cmd_plan(args: argparse.Namespace) -> int:
    from .outputs import check_outputs, scenario_inputs, write_run_outputs
    from .plan.figure import figure_svg
    from .plan.planner import plan
    from .scenario_data import apply_override, read_toml
    from .sweep import parse_values

    file = resolve_scenario(args.file)
    data = read_toml(file)
    for assignment in args.set or ():
        data = apply_override(data, assignment)
    rates = [float(v) for v in parse_values(args.rates, "--rates")] if args.rates else None
    outputs = [(flag, p, fmt) for flag, p, fmt in (("--svg", args.svg, "SVG"), ("--png", args.png, "PNG")) if p]
    if outputs:
        from .loading import parse_scenario
        check_outputs(outputs, scenario_inputs(file, parse_scenario(data, file)))

    def progress(done: int) -> None:
        if not args.quiet:
            print(f"{printable(file)}: {done} timed runs", file=sys.stderr)
    from .executor import workers
    plans = plan(data, file, args.target, args.axis, rates, args.exhaustive, workers=args.workers or workers(),
                 executor_spec=args.executor, progress=progress)
    outs = [p.to_dict() for p in plans]
    if outputs:
        svg = figure_svg(plans, f"kvviz plan {Path(file).name}")
        write_run_outputs([(args.png, "png")] if args.png else [], svg, args.dpi,
                          [(args.svg, svg)] if args.svg else [])
    if args.json:
        print(json.dumps(outs[0] if len(outs) == 1 and rates is None else {"rates": outs}, indent=2))
    else:
        print("\n\n".join(as_text(o) for o in outs))
    return 0


def add_parser(sub: Subparsers) -> None:
    c = sub.add_parser("plan", help="the cheapest tier mix (capacities, links, GPUs) that meets latency targets, "
                                    "and the cost-latency front")
    c.add_argument("file", help="prefix_cache scenario TOML file (or a bundled one's name) with a [plan] section")
    c.add_argument("--target", action="append", metavar="METRIC<=VALUE",
                   help="a target (repeatable; METRIC>=VALUE too), replacing the section's")
    c.add_argument("--axis", action="append", metavar="PATH=V1,V2,...",
                   help="a decision variable (repeatable), replacing the section's axes")
    c.add_argument("--rates", metavar="V1,V2,...", help="plan at each rate (the section's rate_path), one mix each")
    c.add_argument("--set", action="append", metavar="PATH=VALUE", help="override a field of every run (repeatable)")
    c.add_argument("--exhaustive", action="store_true", help="run every grid point (to check the search)")
    c.add_argument("--svg", metavar="PATH", type=output_path, help="write the cost-latency figure as SVG")
    c.add_argument("--png", metavar="PATH", type=output_path, help="write the cost-latency figure as PNG")
    c.add_argument("--dpi", type=int, default=150, help="PNG resolution (default 150)")
    c.add_argument("--workers", type=int, metavar="N", help="processes for the timed runs (default: the cores)")
    c.add_argument("--executor", metavar="local|ADDRESS", help="where runs go: local, or a Dask scheduler")
    c.add_argument("--json", action="store_true", help="print best, front, runs and grid_runs as JSON")
    c.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    c.set_defaults(fn=cmd_plan)
