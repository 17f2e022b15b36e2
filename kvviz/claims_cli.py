"""`kvviz claims [FILE...]`: the seed claims of scenarios (kvviz.claims), as a table.

Exit 0 whatever the verdicts (claims are not checks; `kvviz check` gates on [[expect]]), 2 for
bad claim data, 1 when a claim could not be evaluated (verdict `error`)."""
from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from .bundled import bundled_scenarios, resolve_scenario
from .cli_flags import output_path
from .format import printable

if TYPE_CHECKING:
    from .cli_flags import Subparsers

CLAIM_ERROR = 1


def cmd_claims(args: argparse.Namespace) -> int:
    from .claims import ERROR, Row, evaluate_file
    from .claims_table import as_json, as_markdown, as_text, paste, summary
    from .cli_notes import say_engine_note
    from .loading import load_scenario

    files = [resolve_scenario(f) for f in args.files] or [str(p) for p in bundled_scenarios()]
    if not args.files:  # every bundled scenario that states claims
        files = [f for f in files if load_scenario(f).claim]
    scenarios = [load_scenario(f) for f in files]  # all data checked before the first (possibly long) run
    if args.readme:  # and where the table goes: a README with a block, none of the runs' inputs
        from .claims_table import readme_text
        from .outputs import check_outputs, scenario_inputs
        check_outputs([("--readme", args.readme, None)], [i for f, sc in zip(files, scenarios)
                                                          for i in scenario_inputs(f, sc)])
        readme_text(args.readme)
    for sc in scenarios:
        say_engine_note(sc.kind)
    rows: list[Row] = []
    for f in files:
        def progress(done: int, total: int, what: str = "", f: str = f) -> None:
            print(f"{printable(f)}: {done}/{total} {what + ' ' if what else ''}runs", file=sys.stderr)
        rows += evaluate_file(f, None if args.quiet else progress, robustness=args.robustness)
    if args.readme:
        for names in paste(args.readme, rows):
            print(f"{printable(args.readme)}: left the block of {printable(names)} as it was (not evaluated here)",
                  file=sys.stderr)
        print(f"wrote {printable(args.readme)}", file=sys.stderr)
    if args.json:
        print(as_json(rows))
    elif args.markdown:
        print(as_markdown(rows))
    elif not args.readme:
        print(as_text(rows))
    print(summary(rows), file=sys.stderr)
    return CLAIM_ERROR if any(r.verdict == ERROR for r in rows) else 0


def add_parser(sub: Subparsers) -> None:
    c = sub.add_parser("claims", help="the seed papers' claims against the model: paper, model, verdict, why")
    c.add_argument("files", nargs="*", help="scenario TOML files (or bundled names); none: every bundled scenario "
                                            "with [[claim]] tables")
    out = c.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="a list of {seed, claim, paper, model, verdict, why}")
    out.add_argument("--markdown", action="store_true", help="a Markdown table")
    c.add_argument("--readme", metavar="PAGE.md", type=output_path, help="replace the tables between <!-- claims:begin NAMES --> "
                                                         "and <!-- claims:end --> with these rows")
    c.add_argument("--robustness", action="store_true",
                   help="also judge each reproduced / same_shape simulated row under the file's [[robustness]] "
                        "alternatives: fragile true (and which alternative flips it) or false; without it null")
    c.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    c.set_defaults(fn=cmd_claims)
