"""`kvviz operating-point FILE`: each model's headline claims at every load (kvviz.operating_point),
as a Markdown table, a figure per model (--svg-dir) and a README block (--readme)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .bundled import resolve_scenario
from .cli_flags import output_path
from .format import printable

if TYPE_CHECKING:
    from .cli_flags import Subparsers


def cmd_operating_point(args: argparse.Namespace) -> int:
    from .operating_point import RATES, SATURATED, Rate, as_markdown, evaluate, figure_svg, paste
    from .outputs import write_text
    from .sweep import parse_values

    file = resolve_scenario(args.file)
    rates: tuple[Rate, ...] = (*(float(v) for v in parse_values(args.rates, "--rates")), SATURATED) if args.rates else \
        (*RATES, SATURATED)
    if args.readme:
        from .io import read_text
        from .operating_point import MARKER
        if not MARKER.search(read_text(Path(args.readme))):
            from .errors import ScenarioError
            raise ScenarioError("no <!-- operating-point:begin --> … <!-- operating-point:end --> block to fill",
                                args.readme)

    def progress(done: int, total: int) -> None:
        print(f"{printable(file)}: {done}/{total} runs", file=sys.stderr)
    models = evaluate(file, tuple(args.set or ()), rates, args.model, None if args.quiet else progress)
    if args.svg_dir:
        out = Path(args.svg_dir)
        out.mkdir(parents=True, exist_ok=True)
        for mp in models:
            path = out / f"{Path(file).stem}_{mp.preset}.svg"
            write_text(str(path), figure_svg(mp, f"{Path(file).stem}, {mp.preset}"))
            print(f"wrote {printable(str(path))}", file=sys.stderr)
    if args.readme:
        paste(args.readme, models, file)
        print(f"wrote {printable(args.readme)}", file=sys.stderr)
    if args.json:
        print(json.dumps([{"model": mp.preset, "prefill_share_bound": mp.bound, "implied_share": mp.implied_share,
                           "needed_share": mp.needed_share,
                           "points": [{"rate": p.rate, "steady": p.steady, "holds": p.holds, "values": p.values,
                                       "verdicts": p.verdicts, "recompute_prefill_share": p.recompute_prefill_share,
                                       "recompute_ttft_s": p.recompute_ttft_s, "queue_len_mid": p.queue_len_mid,
                                       "mean_batch": p.mean_batch, "error": p.error} for p in mp.points]}
                          for mp in models], indent=2))
    elif not args.readme:
        print(as_markdown(models, file))
    return 0


def add_parser(sub: Subparsers) -> None:
    c = sub.add_parser("operating-point", help="each model's TTFT cut, prefill and GPU-time speedups against the "
                                               "load (AttentionStore): where the paper's figures hold together")
    c.add_argument("file", help="scenario TOML file (or the name of a bundled one) with headline [[claim]] rows")
    c.add_argument("--set", action="append", metavar="PATH=VALUE", help="override a field of every run (repeatable)")
    c.add_argument("--rates", metavar="V1,V2,...", help="arrival rates in turns/s (default 0.25,0.5,1,1.5,2,2.5,3,4); "
                                                        "saturated is always added")
    c.add_argument("--model", action="append", metavar="PRESET", help="only this model (repeatable)")
    c.add_argument("--svg-dir", metavar="DIR", type=output_path, help="write one figure per model, DIR/<scenario>_<preset>.svg")
    c.add_argument("--readme", metavar="PAGE.md", type=output_path, help="fill the <!-- operating-point:begin NAME --> block")
    c.add_argument("--json", action="store_true", help="print the points as JSON")
    c.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    c.set_defaults(fn=cmd_operating_point)
