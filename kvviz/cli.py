"""kvviz command line: run, validate, list, schema.

Exit codes: 0 success, 2 bad input (one clear message naming file and field; nothing written).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .errors import ScenarioError
from .format import format_value
from .io import atomic_write
from .registry import mechanisms, simulate
from .scenario import load_scenario

BAD_INPUT = 2


def scenarios_dir() -> Path:
    """The bundled worked examples (override with KVVIZ_SCENARIOS)."""
    env = os.environ.get("KVVIZ_SCENARIOS")
    return Path(env) if env else Path(__file__).resolve().parents[1] / "scenarios"


def bundled_scenarios() -> list[Path]:
    return sorted(scenarios_dir().glob("*.toml"))


def _resolve(file: str) -> str:
    """A path, or the stem of a bundled scenario (`kvviz run rope_prefetch_16`)."""
    p = Path(file)
    if not p.exists() and not p.suffix:
        bundled = scenarios_dir() / f"{file}.toml"
        if bundled.exists():
            return str(bundled)
    return file


def _scalar_lines(metrics: dict) -> list[str]:
    lines = []
    width = max((len(k) for k, v in metrics.items() if not isinstance(v, (dict, list))), default=0)
    for k, v in metrics.items():
        if isinstance(v, (dict, list)):
            continue
        lines.append(f"  {k:<{width}}  {format_value(v)}")
    return lines


def _simulate(sc, file: str):
    try:
        return simulate(sc)
    except ScenarioError as e:  # refusals from the mechanism name the file too
        e.file = e.file or file
        raise


def cmd_run(args) -> int:
    file = _resolve(args.file)
    sc = load_scenario(file, args.set or [])
    result = _simulate(sc, file)
    outputs = []
    if args.svg:
        from .export.svg import timeline_svg
        outputs.append((args.svg, timeline_svg(result, width=args.width)))
    if args.json_out:
        outputs.append((args.json_out, result.to_json(indent=2) + "\n"))
    for path, data in outputs:  # everything rendered before anything is written
        atomic_write(path, data)
        print(f"wrote {path}", file=sys.stderr)
    if args.json:
        print(result.to_json(indent=2))
    else:
        print(f"{sc.name}  [{sc.kind}]")
        print("\n".join(_scalar_lines(result.metrics_dict())))
    return 0


def cmd_validate(args) -> int:
    sc = load_scenario(_resolve(args.file), args.set or [])
    print(f"{args.file}: ok ({sc.kind}: {sc.name})")
    return 0


def cmd_list(args) -> int:
    for p in bundled_scenarios():
        try:
            sc = load_scenario(p)
            print(f"{p.stem:<32} {sc.kind:<16} {sc.name}")
        except ScenarioError as e:
            print(f"{p.stem:<32} {'INVALID':<16} {e}")
    return 0


def cmd_schema(args) -> int:
    kinds = mechanisms()
    if args.kind not in kinds:
        raise ScenarioError(f"unknown kind {args.kind!r} (one of: {', '.join(kinds)})", "kvviz schema", "KIND")
    print(json.dumps(kinds[args.kind].model.model_json_schema(), indent=2, ensure_ascii=False))
    return 0


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors are bad input too: exit 2 (argparse's own code)
        self.print_usage(sys.stderr)
        print(f"kvviz: {message}", file=sys.stderr)
        raise SystemExit(BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="kvviz", description="Simulate KV-cache and embedding movement across memory tiers.")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)

    def scenario_args(sp):
        sp.add_argument("file", help="scenario TOML file (or the name of a bundled one)")
        sp.add_argument("--set", action="append", metavar="PATH=VALUE",
                        help="override a field, e.g. --set cache.slots=16 (repeatable)")

    r = sub.add_parser("run", help="simulate a scenario and print its metrics")
    scenario_args(r)
    r.add_argument("--json", action="store_true", help="print {kind, name, metrics} as JSON")
    r.add_argument("--json-out", metavar="OUT.json", help="also write the metrics JSON to a file")
    r.add_argument("--svg", metavar="OUT.svg", help="write the timeline as an SVG figure")
    r.add_argument("--width", type=int, default=1200, help="figure width in px (default 1200)")
    r.set_defaults(fn=cmd_run)

    v = sub.add_parser("validate", help="check a scenario file without running it")
    scenario_args(v)
    v.set_defaults(fn=cmd_validate)

    sub.add_parser("list", help="list the bundled scenarios").set_defaults(fn=cmd_list)

    s = sub.add_parser("schema", help="print the JSON Schema of a scenario kind")
    s.add_argument("kind", help=f"one of: {', '.join(mechanisms())}")
    s.set_defaults(fn=cmd_schema)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except ScenarioError as e:
        for line in e.all_messages():
            print(f"error: {line}", file=sys.stderr)
        return BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
