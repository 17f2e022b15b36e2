"""kvviz command line: run, check, claims, operating-point, sweep, replay, validate, list, schema.

Exit codes: 0 success, 2 bad input (one clear message naming file and field; nothing written).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .bundled import bundled_scenarios, resolve_scenario
from .claims_cli import add_parser as add_claims_parser
from .cli_flags import (
    MAX_CAPACITIES,
    MAX_WORKERS,
    OneLineParser,
    bytes_per_token,
    check_figure_args,
    float_flag,
    output_path,
    positive_float,
    worker_count,
)
from .errors import ScenarioError
from .export import EXPORT_FORMATS, Files
from .export.figure_size import DEFAULT_DPI, DEFAULT_WIDTH_PX, PX_PER_IN
from .format import bytes_for_people, format_value, printable
from .limits import MAX_DECOMPRESSED_BYTES, MAX_DECOMPRESSED_RATIO
from .operating_point_cli import add_parser as add_operating_point_parser
from .plan_cli import add_parser as add_plan_parser
from .replay_prefix_cli import add_prefix_args, cmd_replay_prefix
from .requests.blocks import DEFAULT_KV_BYTES_PER_TOKEN
from .requests.csv_layout import HEADER_CHOICES
from .requests.formats import names as trace_formats
from .size_guard import DEFAULT_MAX_MEMORY_GB

# The modules each command needs are imported in it, not here: `kvviz replay --prefix` starts
# without numpy, pydantic or the mechanisms (tests/test_replay_prefix_lean.py holds it so).
if TYPE_CHECKING:
    from .result import Result
    from .runs import DiskCache, PartCache
    from .scenario import ScenarioBase
    from .sweep import SweepResult

BAD_INPUT = 2
CHECK_FAILED = 1  # a scenario's [[expect]] check did not hold


def _is_scalar(v: object) -> bool:
    return not isinstance(v, (dict, list))


def _table(rows: list[tuple[str, dict[str, Any]]], first: str, limit: int = 20) -> list[str]:
    """Rows of scalar fields as an aligned text table (nested values left to --json)."""
    cols: list[str] = []
    for _, d in rows:
        cols += [k for k, v in d.items() if _is_scalar(v) and k not in cols]
    cells = [[printable(name)] + [format_value(d.get(c, "")) if c in d else "" for c in cols] for name, d in rows[:limit]]
    heads = [printable(h) for h in [first] + cols]  # names of a user's tiers, lanes, policies
    widths = [max(len(x) for x in col) for col in zip(heads, *cells)]
    lines = ["  " + "  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(heads, widths)))]
    lines += ["  " + "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
              for row in cells]
    if len(rows) > limit:
        lines.append(f"  … {len(rows) - limit} more (see --json)")
    return lines


def summary_lines(metrics: dict[str, Any]) -> list[str]:
    """A person's view of the metrics: scalars first, then each table-shaped group."""
    scalars = {printable(k): v for k, v in metrics.items() if _is_scalar(v)}
    width = max((len(k) for k in scalars), default=0)
    lines = [f"  {k:<{width}}  {format_value(v)}" for k, v in scalars.items()]
    for key, v in metrics.items():
        if isinstance(v, dict) and v and all(isinstance(x, dict) for x in v.values()):
            lines += ["", f"{printable(key)}:"] + _table(list(v.items()), key)
        elif isinstance(v, dict) and v:
            w = max(len(printable(k)) for k in v)
            lines += ["", f"{printable(key)}:"] + [f"  {printable(k):<{w}}  {format_value(x) if _is_scalar(x) else '…'}"
                                                 for k, x in v.items()]
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            lines += ["", f"{printable(key)}:"] + _table([(str(i), x) for i, x in enumerate(v)], "#")
    return lines


def simulate(sc: ScenarioBase, max_memory_gb: float | None = None, cache: PartCache | None = None) -> Result:
    """kvviz.simulation.simulate, imported when a command simulates."""
    from .simulation import simulate as run
    return run(sc, max_memory_gb, cache=cache)


def _cached_parts(sc: ScenarioBase, cache: DiskCache | None) -> list[str]:
    """The parts of `sc`'s run that --cache already holds (they will not run)."""
    from .mechanisms import mechanisms
    make = mechanisms()[sc.kind].plan
    if cache is None or make is None:
        return []
    return [p.name for p in make(sc).parts if p.key in cache]


def _simulate(sc: ScenarioBase, file: str, max_memory_gb: float | None = None, cache_dir: str | None = None
              ) -> Result:
    from .calibration import WORTH_CALIBRATING_S, calibrated
    from .cli_notes import say_engine_note
    from .runs import disk_cache
    from .simulation import check_run_size
    say_engine_note(sc.kind)  # outside the try: the engine choice is not the scenario file's
    try:
        est = check_run_size(sc, max_memory_gb)
        cache = disk_cache(cache_dir)
        if est is not None and est.seconds >= WORTH_CALIBRATING_S:  # a long run says so before it starts
            from .executor import workers
            est = calibrated(est, workers=workers(), skip=_cached_parts(sc, cache))
            if est.seconds >= 10:
                print(f"{printable(Path(file).name)}: simulating, {est.describe()} (estimated)", file=sys.stderr)
        result = simulate(sc, max_memory_gb, cache=cache)
        if cache is not None and cache.write_error:
            print(printable(f"warning: --cache {cache_dir}: {cache.write_error}; this run was not cached"),
                  file=sys.stderr)
        return result
    except ScenarioError as e:  # refusals from the mechanism name the file too
        e.file = e.file or file
        raise


def _timeline_svg(args: argparse.Namespace, result: Result) -> str | None:
    """The timeline figure, drawn once for --svg, --png and --pdf (None when none is asked for)."""
    if not (args.svg or args.png or args.pdf):
        return None
    from .export.svg import timeline_svg
    from .units import us_to_ns
    size = args.figure
    return timeline_svg(result, width=round(size.width_px),
                        height=None if size.height_px is None else round(size.height_px),
                        t0_ns=None if args.from_us is None else us_to_ns(args.from_us),
                        t1_ns=None if args.to_us is None else us_to_ns(args.to_us))


def _data_outputs(args: argparse.Namespace, result: Result) -> Files:
    """(path, data) of every file of the data formats asked for (kvviz.export's registry, in its
    order), rendered before anything is written."""
    out: Files = []
    for f in EXPORT_FORMATS.values():
        if f.render is not None and (target := getattr(args, f.dest, None)):
            out.extend(f.render(result, target))
    return out


def _output_flags(args: argparse.Namespace) -> list[tuple[str, str, str | None]]:
    """`kvviz run`'s outputs as (flag, path, format): the figures, then each data format's files."""
    outs: list[tuple[str, str, str | None]] = [(flag, path, fmt) for flag, path, fmt in (
        ("--png", args.png, "PNG"), ("--pdf", args.pdf, "PDF"), ("--svg", args.svg, "SVG")) if path]
    for f in EXPORT_FORMATS.values():
        if not f.ranged and (target := getattr(args, f.dest, None)):
            outs += [(f.flag, p, f.said) for p in f.paths(target)]
    return outs


def cmd_run(args: argparse.Namespace) -> int:
    from .loading import load_scenario
    from .outputs import check_outputs, scenario_inputs, write_run_outputs
    check_figure_args(args)
    if args.metric and args.json:
        raise ScenarioError("give --metric or --json, not both", "kvviz run", "--metric")
    if args.relative_to_set and not args.metric:
        raise ScenarioError("--relative-to-set needs --metric (the value it changes)", "kvviz run", "--relative-to-set")
    rasters = [(p, fmt) for p, fmt in ((args.png, "png"), (args.pdf, "pdf")) if p]
    flags = _output_flags(args)
    file = resolve_scenario(args.file)
    sc = load_scenario(file, args.set or [], args.max_memory_gb)
    check_outputs(flags, scenario_inputs(file, sc))  # before a long run; never over what it reads
    result = _simulate(sc, file, args.max_memory_gb, args.cache)
    svg = _timeline_svg(args, result)  # written where --svg says; --png and --pdf are rendered from it
    texts: list[tuple[str | None, str | bytes]] = [(args.svg, svg)] if svg is not None else []
    write_run_outputs(rasters, svg, args.figure.dpi, texts + list(_data_outputs(args, result)))
    if args.metric:
        print(printable(_metric_line(args, file, result)))
    elif args.json:
        print(result.to_json(indent=2))
    else:
        print(f"{printable(sc.name)}  [{sc.kind}]")
        print("\n".join(summary_lines(result.metrics_dict())))
    # `run` explores (an override may move a result on purpose): failed checks are reported,
    # and `kvviz check` is the command whose exit status gates on them
    for c in result.metrics.get("checks", ()):
        if not c["ok"]:
            print(printable(f"check failed: {file}: {c['metric']} = {c['actual']}, expected {c['expect']}"),
                  file=sys.stderr)
    if note := result.metrics.get("overload"):  # also in the summary and the JSON: said where it is seen
        print(printable(f"warning: {file}: {note}"), file=sys.stderr)
    return 0


def _metric_line(args: argparse.Namespace, file: str, result: Result) -> str:
    """One metric's value as the claims table prints it; with --relative-to-set, its relative
    change against a run with those overrides (a claim's command: kvviz.claims.command)."""
    from .claims import fmt, relative_change
    from .loading import load_scenario
    from .metric_paths import finite_number, metric_value

    def value(metrics: dict[str, Any]) -> object:
        try:
            v = metric_value(metrics, args.metric)
        except KeyError:
            raise ScenarioError(f"no such metric: {args.metric}", file, "--metric") from None
        if isinstance(v, (dict, list, tuple)):
            raise ScenarioError(f"{args.metric} is a table, not a value (--json shows it)", file, "--metric")
        return v
    v = value(result.metrics_dict())
    if not args.relative_to_set:
        return fmt(v)
    ref_sc = load_scenario(file, args.relative_to_set, args.max_memory_gb)
    ref = value(_simulate(ref_sc, file, args.max_memory_gb, args.cache).metrics_dict())
    if not (finite_number(v) and finite_number(ref) and ref):
        raise ScenarioError(f"{args.metric} = {fmt(v)} against {fmt(ref)}: no relative change", file, "--metric")
    return fmt(relative_change(v, ref))


def cmd_check(args: argparse.Namespace) -> int:
    """Run scenarios and their [[expect]] checks; one line per check, a summary, exit 1 on any failure."""
    from .loading import load_scenario
    bad = total = 0
    for name in args.files:
        file = resolve_scenario(name)
        sc = load_scenario(file, args.set or [], args.max_memory_gb)
        checks = _simulate(sc, file, args.max_memory_gb).metrics.get("checks", ())
        if not checks:
            print(f"{printable(file)}: no checks")
        for c in checks:
            mark = "ok  " if c["ok"] else "FAIL"
            why = f"  ({c['why']})" if c["why"] else ""
            print(printable(f"{mark} {file}: {c['metric']} = {c['actual']}, expected {c['expect']}{why}"))
        total += len(checks)
        bad += sum(not c["ok"] for c in checks)
    print(f"{total - bad} of {total} checks passed" + (f", {bad} failed" if bad else ""))
    return CHECK_FAILED if bad else 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from .cli_notes import say_engine_note
    from .runs import disk_cache
    from .scenario_data import apply_override, read_toml
    from .sweep import Axis, StderrProgress, parse_values, run_sweep
    file = resolve_scenario(args.file)
    if len(args.param or []) != len(args.values or []):
        raise ScenarioError("each --param needs one --values", "kvviz sweep", "--values")
    data = read_toml(file)
    for assignment in args.set or []:
        data = apply_override(data, assignment)
    say_engine_note(data.get("kind"))
    axes = [Axis(p, parse_values(v, f"--values {v}")) for p, v in zip(args.param, args.values)]
    res = run_sweep(data, axes, args.metric, source=file, workers=args.workers, progress=StderrProgress(),
                    executor=args.executor, max_memory_gb=args.max_memory_gb, cache=disk_cache(args.cache))
    if args.json:
        print(json.dumps(res.to_dict(), indent=2))
    elif args.csv:
        print(res.to_csv(), end="")
    else:
        print(_sweep_table(res))
    return 0


def _sweep_table(res: SweepResult) -> str:
    if len(res.axes) > 2:  # the long form: one row per grid point
        heads = [a.path for a in res.axes] + [res.metric]
        rows = [[format_value(x) for x in combo] + [format_value(v)] for combo, v in res.points()]
        ws = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
        return "\n".join("  ".join(f"{c:>{w}}" for c, w in zip(r, ws)) for r in [heads, *rows])
    cells = [[format_value(v) for v in (row if isinstance(row, list) else [row])] for row in res.values]
    if len(res.axes) == 1:
        a = res.axes[0]
        heads = list(res.series) or [res.metric]
        w = max(len(a.path), *(len(format_value(x)) for x in a.values))
        cw = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(heads)]
        title = res.metric if not res.paths else res.paths[0][:-len(res.series[0])].rstrip(".")  # shared prefix
        lines = ([f"{title}:"] if res.series and title else []) + \
            [f"{a.path:>{w}}  " + "  ".join(f"{h:>{n}}" for h, n in zip(heads, cw))]
        lines += [f"{format_value(x):>{w}}  " + "  ".join(f"{v:>{n}}" for v, n in zip(c, cw))
                  for x, c in zip(a.values, cells)]
        return "\n".join(lines)
    a, b = res.axes
    w0 = max(len(format_value(x)) for x in a.values)
    w = max(6, *(len(c) for row in cells for c in row), *(len(format_value(x)) for x in b.values))
    lines = [f"{res.metric}: rows {a.path}, columns {b.path}",
             " " * w0 + "  " + " ".join(f"{format_value(x):>{w}}" for x in b.values)]
    lines += [f"{format_value(x):>{w0}}  " + " ".join(f"{c:>{w}}" for c in row) for x, row in zip(a.values, cells)]
    return "\n".join(lines)


def cmd_replay(args: argparse.Namespace) -> int:
    if args.prefix or args.unit == "blocks":
        return cmd_replay_prefix(args)
    if args.pin_running is not None:  # objects of the plain replay are never held
        raise ScenarioError("--pin-running / --no-pin-running apply to --prefix", "kvviz replay")
    from .executor import cluster_executor
    from .replay import (
        FALLBACK_NOTE,
        check_sample_rate,
        miss_ratio_curve,
        parse_capacities,
        parse_size,
        policies,
        sampling_note,
    )
    from .replay.engines import canonical, engine_label, has_libcachesim, resolve
    from .requests.csv_layout import parse_layout
    from .requests.reader import read_trace

    engine = resolve(args.engine)
    if engine == "python" and args.engine == "auto":
        print(FALLBACK_NOTE, file=sys.stderr)
    if args.list_policies:
        known = policies(engine)
        if args.json:
            print(json.dumps({"engine": engine, "policies": known}, indent=2))
            return 0
        w = max(len(n) for n in known)
        print(f"policies of {engine_label(engine)}:")
        for name, text in known.items():
            print(f"  {name:<{w}}  {text}")
        return 0
    if not args.trace:
        raise ScenarioError("name a trace file (or --list-policies)", "kvviz replay", "TRACE")
    names = [p.strip() for p in args.policy.split(",") if p.strip()]
    if not names:
        raise ScenarioError("name at least one policy", "kvviz replay", "--policy")
    names = [canonical(p, engine, "--policy") for p in names]
    if twice := sorted({n for n in names if names.count(n) > 1}):  # as --prefix: no replay run twice
        raise ScenarioError(f"policy {', '.join(twice)} listed twice", "kvviz replay", "--policy")
    if not args.capacity and not args.capacities:
        raise ScenarioError("give --capacity SIZE or --capacities A,B,C (or auto)", "kvviz replay", "--capacity")
    if args.capacity:  # their form, before a long read
        parse_size(args.capacity, "--capacity")
    if args.capacities:
        if args.capacities.count(",") >= MAX_CAPACITIES:  # each is a replay of the whole trace
            raise ScenarioError(f"at most {MAX_CAPACITIES:,} capacities (got {args.capacities.count(',') + 1:,})",
                                "kvviz replay", "--capacities")
        parse_capacities(args.capacities, None)
    sample_rate = check_sample_rate(args.sample_rate, "kvviz replay: --sample-rate")
    layout = parse_layout(args.columns, args.delimiter, args.header)
    _check_replay_size(args, len(names))
    with cluster_executor(args.executor) as executor:  # connected before a long read
        reqs = read_trace(args.trace, args.format, args.kv_bytes_per_token, layout, args.max_decompressed_ratio,
                          None if args.max_decompressed_gb is None else int(args.max_decompressed_gb * 1e9))
        caps = [parse_size(args.capacity, "--capacity", reqs.footprint)] if args.capacity else []
        caps += parse_capacities(args.capacities, reqs) if args.capacities else []
        # (policy, capacity, why) of the runs refused; one capacity asked: its refusal is the answer
        skipped: list[tuple[str, int, str]] | None = [] if len(caps) > 1 else None
        points = miss_ratio_curve(reqs, names, caps, engine=engine, workers=args.workers, skipped=skipped,
                                  executor=executor, sample_rate=sample_rate)  # None where skipped
    for policy, cap, why in skipped or ():
        print(printable(f"skipped: {policy} at {cap:,} B: {why}"), file=sys.stderr)
    from .replay.c_output import describe, per_policy
    for policy, (warned, total, texts) in per_policy(points).items():  # caught off stdout: said once here
        print(printable(f"warning: {describe(policy, warned, total, texts)}"), file=sys.stderr)
    note = sampling_note(reqs, sample_rate, names)
    if note:
        print(printable(f"note: {note}"), file=sys.stderr)
    results = [r for r in points if r is not None]
    if not results:
        raise ScenarioError("no policy could run at any of the capacities given", "kvviz replay", "--capacities")
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=2))
        return 0
    print(f"{printable(reqs.source or args.trace)}: {len(reqs):,} requests, {reqs.objects:,} objects, footprint "
          f"{bytes_for_people(reqs.footprint)}; engine {engine_label(engine)}" + ("" if has_libcachesim() else " (fallback)"))
    w = max(8, *(len(str(r.capacity)) for r in results))
    pw = max(7, *(len(r.policy) for r in results))
    print(f"{'policy':<{pw}} {'capacity':>{w}}  request_miss_ratio  byte_miss_ratio  engine")
    for r in results:
        print(f"{r.policy:<{pw}} {r.capacity:>{w}}  {r.request_miss_ratio:>18.6f}  {r.byte_miss_ratio:>15.6f}  {r.engine}")
    return 0


def _check_replay_size(args: argparse.Namespace, policies: int) -> None:
    """Refuse, before the trace is read, a replay estimated beyond the memory limit."""
    from .executor import default_spec, workers
    from .replay.size import replay_estimate
    from .requests.extent import extent
    from .size_guard import check_size
    caps = 0 if not args.capacities else 12 if args.capacities.strip().lower() == "auto" else \
        args.capacities.count(",") + 1
    runs = policies * (caps + bool(args.capacity))
    local = (args.executor or default_spec()).strip() == "local"  # a cluster's workers hold the trace there
    est = replay_estimate(extent(args.trace), runs, (args.workers or workers()) if local else 1)
    try:
        check_size(est, args.max_memory_gb, "replay")
    except ScenarioError as e:
        e.file, e.field = args.trace, None
        raise


def cmd_validate(args: argparse.Namespace) -> int:
    from .loading import load_scenario
    sc = load_scenario(resolve_scenario(args.file), args.set or [], args.max_memory_gb)
    print(printable(f"{args.file}: ok ({sc.kind}: {sc.name})"))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from .loading import load_scenario
    for p in bundled_scenarios():
        try:
            sc = load_scenario(p)
            print(f"{p.stem:<32} {sc.kind:<16} {printable(sc.name)}")
        except ScenarioError as e:
            print(f"{p.stem:<32} {'INVALID':<16} {e}")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    from .mechanisms import mechanisms
    kinds = mechanisms()
    if args.kind not in kinds:
        raise ScenarioError(f"unknown kind {args.kind!r} (one of: {', '.join(kinds)})", "kvviz schema", "KIND")
    print(json.dumps(kinds[args.kind].model.model_json_schema(), indent=2, ensure_ascii=False))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="kvviz", description="Simulate KV-cache and embedding movement across memory tiers.")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=OneLineParser)

    def scenario_args(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("file", help="scenario TOML file (or the name of a bundled one)")
        sp.add_argument("--set", action="append", metavar="PATH=VALUE",
                        help="override a field, e.g. --set cache.slots=16 (repeatable)")

    def memory_arg(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--max-memory-gb", type=positive_float, default=None, metavar="GB",
                        help=f"refuse a run estimated to need more memory (default {DEFAULT_MAX_MEMORY_GB:g})")

    def cache_arg(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--cache", metavar="DIR", help="keep each independent part of a run (AttentionStore: "
                        "one per policy) in DIR, and reuse those whose inputs did not change (default: off)")

    r = sub.add_parser("run", help="simulate a scenario and print its metrics")
    scenario_args(r)
    r.add_argument("--json", action="store_true", help="print {kind, name, metrics} as JSON")
    r.add_argument("--metric", metavar="PATH", help="print only this metric's value, as `kvviz claims` shows it "
                                                    "(e.g. policies.scheduler_aware.hit_rate); each claim's command")
    r.add_argument("--relative-to-set", action="append", metavar="PATH=VALUE",
                   help="with --metric: print its relative change, value / reference − 1, against a run of the "
                        "file with these overrides instead of --set's (repeatable; a claim's relative_to_set)")
    fig = r.add_argument_group("figures and traces")
    for f in EXPORT_FORMATS.values():  # each export format's flag: the figures, their size, then the data
        if f.ranged:
            fig.add_argument(f.flag, metavar=f.metavar, type=output_path, help=f.help)
    fig.add_argument("--width", metavar="LENGTH", default=None,
                     help=f"figure width: px at {PX_PER_IN} per inch, or with a unit: 6.5in, 165mm, 16.5cm, 468pt "
                          f"(default {DEFAULT_WIDTH_PX} = {DEFAULT_WIDTH_PX / PX_PER_IN:g} in; the app's Figure Size takes the same)")
    fig.add_argument("--height", metavar="LENGTH", default=None, help="figure height, as --width (default: fit the lanes)")
    fig.add_argument("--dpi", metavar="N", default=None, help=f"PNG/PDF resolution (default {DEFAULT_DPI})")
    fig.add_argument("--from-us", type=float_flag, default=None, help="start of the time range shown")
    fig.add_argument("--to-us", type=float_flag, default=None, help="end of the time range shown")
    for f in EXPORT_FORMATS.values():
        if not f.ranged:
            fig.add_argument(f.flag, metavar=f.metavar, type=output_path, help=f.help)
    memory_arg(r)
    cache_arg(r)
    r.set_defaults(fn=cmd_run)

    w = sub.add_parser("sweep", help="run a scenario over a grid of parameter values")
    scenario_args(w)
    w.add_argument("--param", action="append", metavar="PATH", required=True,
                   help="field path to vary (repeat for more axes; three or more print one row per point)")
    w.add_argument("--values", action="append", metavar="V1,V2,...|START:STOP[:STEP]", required=True,
                   help="values for the matching --param (a range includes STOP)")
    w.add_argument("--metric", required=True, action="append",
                   help="metric to collect (dotted path for nested ones); repeat for several (one --param "
                        "axis: one column per metric)")
    out = w.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the grid as JSON")
    out.add_argument("--csv", action="store_true", help="print the grid as CSV")
    w.add_argument("--workers", type=worker_count, default=None,
                   help=f"local worker processes, 1 to {MAX_WORKERS} (default: one per core)")
    w.add_argument("--executor", default=None, metavar="local|tcp://HOST:PORT",
                   help="where the runs go: this computer's processes (default; KVVIZ_EXECUTOR sets it) or a "
                        "Dask scheduler (pip install 'kvviz[cluster]')")
    memory_arg(w)
    cache_arg(w)
    w.set_defaults(fn=cmd_sweep)

    rp = sub.add_parser("replay", help="replay a request trace through one cache tier (libCacheSim where installed)")
    rp.add_argument("trace", nargs="?", help="CSV with header time,id,size (or any CSV with --columns); libCacheSim "
                    "oracleGeneral binary or plain-text ids (.txt); a Mooncake / Qwen-Bailian JSONL request trace "
                    "(as KV blocks); any of them zstd-compressed (.zst)")
    rp.add_argument("--policy", default="lru", metavar="NAME[,NAME...]",
                    help="eviction policies, e.g. lru,fifo,belady,s3fifo,sieve,arc (default lru; see --list-policies)")
    rp.add_argument("--capacity", metavar="SIZE", help="cache capacity in bytes (units: KB MB GB KiB MiB GiB), or a share of the trace's footprint: 1%%")
    rp.add_argument("--capacities", metavar="A,B,C|auto",
                    help="several capacities (sizes or shares: 64MiB,1GB or 1%%,10%%): a miss-ratio curve; auto = 12 from "
                         "0.1%% of the footprint to all of it")
    rp.add_argument("--json", action="store_true", help="print one JSON object per policy and capacity (with the engine)")
    rp.add_argument("--list-policies", action="store_true", help="list the policies of the engine, with a description each")
    rp.add_argument("--engine", default="auto", choices=("auto", "libcachesim", "python"),
                    help="auto: libCacheSim if installed, else kvviz's own LRU/FIFO/Belady")
    rp.add_argument("--format", default="auto", choices=trace_formats(),
                    help="trace format (default: from the file's content; .zst files are decompressed first)")
    rp.add_argument("--columns", metavar="time=N,id=N,size=N",
                    help="a CSV without the time,id,size header: 1-based field numbers, as libCacheSim's CSV reader "
                         "takes them (id required; no time: the request's index; no size: 1 byte)")
    rp.add_argument("--delimiter", metavar="C", help="CSV field separator: , tab space ; | (default: the most frequent of , tab ; | in line 1)")
    rp.add_argument("--header", choices=HEADER_CHOICES,
                    help="with --columns: is line 1 a header? (auto: if its time or size is not a number)")
    rp.add_argument("--kv-bytes-per-token", type=bytes_per_token, default=DEFAULT_KV_BYTES_PER_TOKEN, metavar="B",
                    help="JSONL traces: KV bytes per token, so a block is tokens x B (default %(default)s, Llama-2-70B FP16)")
    rp.add_argument("--workers", type=worker_count, default=None,
                    help=f"processes for the per-capacity runs, 1 to {MAX_WORKERS} (default: one per core)")
    rp.add_argument("--executor", default=None, metavar="local|tcp://HOST:PORT",
                    help="where the per-capacity runs go: this computer (default; KVVIZ_EXECUTOR sets it) or a Dask "
                         "scheduler, whose workers each get the trace once (pip install 'kvviz[cluster]')")
    rp.add_argument("--sample-rate", default=None, metavar="R",
                    help="LRU curve from a SHARDS sample of rate R in (0, 1], e.g. 0.01: faster, an estimate "
                         "(its engine says so); default exact")
    rp.add_argument("--max-decompressed-ratio", type=positive_float, default=None, metavar="X",
                    help=f"a .zst trace may expand to X times its size (default {MAX_DECOMPRESSED_RATIO})")
    rp.add_argument("--max-decompressed-gb", type=positive_float, default=None, metavar="GB",
                    help=f"and to at most GB (default {MAX_DECOMPRESSED_BYTES / 1e9:g})")
    memory_arg(rp)
    add_prefix_args(rp)
    rp.set_defaults(fn=cmd_replay)

    c = sub.add_parser("check", help="run scenarios and their [[expect]] checks (exit 1 if one fails)")
    c.add_argument("files", nargs="+", help="scenario TOML files (or bundled names)")
    c.add_argument("--set", action="append", metavar="PATH=VALUE", help="override a field in every file")
    memory_arg(c)
    c.set_defaults(fn=cmd_check)

    add_claims_parser(sub)
    add_operating_point_parser(sub)
    add_plan_parser(sub)  # kvviz plan (issue 34)

    v = sub.add_parser("validate", help="check a scenario file without running it")
    scenario_args(v)
    memory_arg(v)
    v.set_defaults(fn=cmd_validate)

    sub.add_parser("list", help="list the bundled scenarios").set_defaults(fn=cmd_list)

    s = sub.add_parser("schema", help="print the JSON Schema of a scenario kind")
    s.add_argument("kind", help="a scenario kind, e.g. rope_prefetch (kvviz list shows each bundled scenario's)")
    s.set_defaults(fn=cmd_schema)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.fn(args)  # the command's cmd_* (set_defaults)
        return code
    except ScenarioError as e:
        for line in e.all_messages():
            print(f"error: {line}", file=sys.stderr)
        return BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `kvviz schema KIND | head`: the reader left; that is fine
        sys.stderr.close()
        return 0


def entry() -> int:
    """The `kvviz` command: independent runs of a scenario may use every core."""
    os.environ.setdefault("KVVIZ_WORKERS", str(os.cpu_count() or 1))
    return main()


if __name__ == "__main__":
    sys.exit(entry())
