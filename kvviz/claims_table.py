"""The claims table as text, Markdown and JSON, and pasted into a README between markers:

    <!-- claims:begin rope_prefetch_16 ladder_seed -->
    ... (replaced by the rows of those scenario files; no names: every row) ...
    <!-- claims:end -->

so the README's paper-vs-model tables are the command's output, never typed.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from .errors import ScenarioError
from .format import printable
from .io import read_text
from .outputs import write_text

HEADS = ("seed", "claim", "paper", "model", "verdict", "why")
MARKER = re.compile(r"<!-- claims:begin(?P<names>[^>]*?)-->\n(?P<body>.*?)<!-- claims:end -->", re.S)


def cells(row) -> list[str]:
    """The row's cells as the text and Markdown tables show them: a scenario's words with their
    control characters escaped (JSON keeps them as written)."""
    from .claims import fmt
    return [printable(c) for c in (row.seed, row.claim, row.paper_shown or fmt(row.paper), row.shown or fmt(row.model),
                                   row.verdict, row.why)]


def as_json(rows) -> str:
    return json.dumps([r.to_dict() for r in rows], indent=2, ensure_ascii=False)


def as_text(rows) -> str:
    """Aligned columns; the claim and why columns as they are (they are one line each)."""
    table = [list(HEADS)] + [cells(r) for r in rows]
    widths = [max(len(c[i]) for c in table) for i in range(len(HEADS) - 1)]
    return "\n".join(("  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[-1]).rstrip() for row in table)


def _md(text: str) -> str:
    # a claim's "<!--" would hide the rest of the README, or end the pasted block early
    return text.replace("|", "\\|").replace("<!--", "&lt;!--")


def as_markdown(rows) -> str:
    out = ["| " + " | ".join(HEADS) + " |", "|" + " --- |" * len(HEADS)]
    for r in rows:
        line = cells(r)
        line[4] = f"**{line[4]}**" if r.verdict in ("not_reproduced", "error") else line[4]
        out.append("| " + " | ".join(_md(c) for c in line) + " |")
    return "\n".join(out)


def summary(rows) -> str:
    from collections import Counter
    counts = Counter(r.verdict for r in rows)
    return f"{len(rows)} claims: " + ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))


def readme_text(readme: str | Path) -> str:
    """The text of a README to paste into, refused unless it has a block to fill."""
    text = read_text(Path(readme))
    if not MARKER.search(text):
        raise ScenarioError("no <!-- claims:begin --> … <!-- claims:end --> block to fill", str(readme))
    return text


def paste(readme: str | Path, rows) -> list[str]:
    """Replace each marked block of `readme` whose scenario names were all evaluated (those of
    `rows`) with their Markdown table; returns the names of the blocks left alone."""
    text = readme_text(readme)
    evaluated = {Path(r.file).stem for r in rows}
    skipped: list[str] = []

    def fill(m: re.Match) -> str:
        names = m.group("names").split()
        if names and not set(names) <= evaluated:
            skipped.append(" ".join(names))
            return m.group(0)
        chosen = [r for r in rows if not names or Path(r.file).stem in names]
        begin = m.group(0)[: m.start("body") - m.start()]
        return f"{begin}{as_markdown(chosen)}\n<!-- claims:end -->"
    write_text(str(readme), MARKER.sub(fill, text))
    return skipped
