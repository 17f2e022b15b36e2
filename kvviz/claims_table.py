"""The claims table as text, Markdown and JSON, and pasted into a README between markers:

    <!-- claims:begin rope_prefetch_16 ladder_seed -->
    ... (replaced by the rows of those scenario files; no names: every row) ...
    <!-- claims:end -->

so the README's paper-vs-model tables are the command's output, never typed.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import ScenarioError
from .format import printable
from .io import read_text
from .outputs import write_text

if TYPE_CHECKING:
    from .claims import Row

HEADS = ("source", "claim", "paper", "model", "verdict", "basis", "why", "conditions", "command")
TEXT_HEADS = HEADS[:7]  # the text table's columns; conditions and command go on the lines below each row
MARKER = re.compile(r"<!-- claims:begin(?P<names>[^>]*?)-->\n(?P<body>.*?)<!-- claims:end -->", re.S)


# What a claim's `seed` names, as a reader knows it (a row of another source shows its own name).
SOURCES = {"000": "RoPE prefetch walkthrough", "001": "Engram note", "003": "CachedAttention (ATC'24)"}


def source_name(seed: str) -> str:
    return SOURCES.get(seed, seed)


def cells(row: Row) -> list[str]:
    """The row's cells as the text, Markdown and app tables show them: a scenario's words with
    their control characters escaped (JSON keeps them as written)."""
    from .claims import fmt
    return [printable(c) for c in (source_name(row.seed), row.claim, row.paper_shown or fmt(row.paper), row.shown or fmt(row.model),
                                   row.verdict, row.basis, row.why, "; ".join(row.conditions), row.command)]


def as_json(rows: Sequence[Row]) -> str:
    return json.dumps([r.to_dict() for r in rows], indent=2, ensure_ascii=False)


def as_text(rows: Sequence[Row]) -> str:
    """Aligned columns (why last, as it is); each row's conditions and command on the lines below."""
    n = len(TEXT_HEADS)
    table = [list(TEXT_HEADS)] + [cells(r)[:n] for r in rows]
    widths = [max(len(c[i]) for c in table) for i in range(n - 1)]
    out = [("  ".join(c.ljust(w) for c, w in zip(table[0], widths)) + "  " + table[0][-1]).rstrip()]
    for r, line in zip(rows, table[1:]):
        out.append(("  ".join(c.ljust(w) for c, w in zip(line, widths)) + "  " + line[-1]).rstrip())
        full = cells(r)
        if r.fragile is not None:
            out.append(f"      fragile: {fragile_cell(r)}")
        if full[7]:
            out.append(f"      conditions: {full[7]}")
        if full[8]:
            out.append(f"      $ {full[8]}")
    return "\n".join(out)


def _md(text: str) -> str:
    # a claim's "<!--" would hide the rest of the README, or end the pasted block early
    return text.replace("|", "\\|").replace("<!--", "&lt;!--")


def judged_any(rows: Sequence[Row]) -> bool:
    """Whether fragility was judged for any of these rows (kvviz claims --robustness)."""
    return any(r.fragile is not None for r in rows)


def fragile_cell(row: Row) -> str:
    """`fragile` as the tables show it: — (not judged), no, or yes with what flips it."""
    if row.fragile is None:
        return "—"
    return "yes: " + "; ".join(printable(b) for b in row.fragile_because) if row.fragile else "no"


def fragile_summary(rows: Sequence[Row]) -> str:
    judged = [r for r in rows if r.fragile is not None]
    n = sum(bool(r.fragile) for r in judged)
    return f"{n} of {len(judged)} judged rows fragile"


def _md_table(rows: Sequence[Row]) -> list[str]:
    fragile = judged_any(rows)  # the column only when judged: the plain table stays as it was
    heads = (*HEADS[:6], "fragile", *HEADS[6:]) if fragile else HEADS
    out = ["| " + " | ".join(heads) + " |", "|" + " --- |" * len(heads)]
    for r in rows:
        line = cells(r)
        line[4] = f"**{line[4]}**" if r.verdict in ("not_reproduced", "error") else line[4]
        line[8] = f"`{line[8]}`" if line[8] else ""
        if fragile:
            line.insert(6, f"**{fragile_cell(r)}**" if r.fragile else fragile_cell(r))
        out.append("| " + " | ".join(_md(c) for c in line) + " |")
    return out


def as_markdown(rows: Sequence[Row]) -> str:
    """Two tables: the simulated rows (the headline counts), then the arithmetic and input rows
    (consistency checks, passed when reproduced), each under its counts."""
    simulated = [r for r in rows if r.simulated]
    checks = [r for r in rows if not r.simulated]
    out = []
    if simulated:
        said = (f"`fragile` (`kvviz claims --robustness`: each reproduced / same_shape row judged again under "
                f"the file's `[[robustness]]` alternatives): {fragile_summary(simulated)}"
                if judged_any(simulated) else "`fragile`: not judged yet")
        out += [f"**Simulated** (the headline): {simulated_counts(simulated)}. {said}.", ""]
        out += _md_table(simulated)
    if checks:
        out += ([""] if out else []) + [f"**Consistency checks** (arithmetic and input rows, not results of the "
                                        f"simulation): {check_counts(checks)}.", ""]
        out += _md_table(checks)
    return "\n".join(out)


def _counts(rows: Iterable[Row], order: Sequence[str]) -> str:
    from collections import Counter
    counts = Counter(r.verdict for r in rows)
    names = [v for v in order if counts[v]] + sorted(v for v in counts if v not in order)
    return ", ".join(f"{counts[v]} {v}" for v in names) or "none"


def simulated_counts(rows: Sequence[Row]) -> str:
    from .claims import VERDICTS
    return _counts([r for r in rows if r.simulated], VERDICTS)


def check_counts(rows: Sequence[Row]) -> str:
    """Arithmetic and input rows: pass when reproduced, else fail (one not expressible, pending or
    broken says so)."""
    from .claims import ERROR, NOT_RUN
    checks = [r for r in rows if not r.simulated]
    passed = sum(r.verdict == "reproduced" for r in checks)
    other = [r for r in checks if r.verdict in (ERROR, NOT_RUN, "not_expressible")]
    failed = len(checks) - passed - len(other)
    tail = f", {_counts(other, ('not_expressible', ERROR, NOT_RUN))}" if other else ""
    return f"{passed} pass, {failed} fail{tail}"


def summary(rows: Sequence[Row]) -> str:
    """The one line the CLI prints and the app shows: simulated rows counted by verdict, the
    others as consistency checks."""
    n_sim = sum(r.simulated for r in rows)
    tail = f"; {fragile_summary(rows)}" if judged_any(rows) else ""
    return (f"{len(rows)} claims; {n_sim} simulated: {simulated_counts(rows)}; "
            f"{len(rows) - n_sim} consistency checks (arithmetic, input): {check_counts(rows)}{tail}")


def readme_text(readme: str | Path) -> str:
    """The text of a README to paste into, refused unless it has a block to fill."""
    text = read_text(Path(readme))
    if not MARKER.search(text):
        raise ScenarioError("no <!-- claims:begin --> … <!-- claims:end --> block to fill", str(readme))
    return text


def paste(readme: str | Path, rows: Sequence[Row]) -> list[str]:
    """Replace each marked block of `readme` whose scenario names were all evaluated (those of
    `rows`) with their Markdown table; returns the names of the blocks left alone."""
    text = readme_text(readme)
    evaluated = {Path(r.file).stem for r in rows}
    skipped: list[str] = []

    def fill(m: re.Match[str]) -> str:
        names = m.group("names").split()
        block: str = m.group(0)
        if names and not set(names) <= evaluated:
            skipped.append(" ".join(names))
            return block
        chosen = [r for r in rows if not names or Path(r.file).stem in names]
        begin = block[: m.start("body") - m.start()]
        return f"{begin}{as_markdown(chosen)}\n<!-- claims:end -->"
    write_text(str(readme), MARKER.sub(fill, text))
    return skipped
