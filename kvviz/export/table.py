"""A table of numbers (a sweep grid, miss-ratio curves, a metric diff) as CSV text: the app's
File → Export → Data as CSV writes what a tab offers through this."""
from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence


def table_csv(head: list[str], rows: Iterable[Sequence[object]]) -> str:
    """RFC 4180 CSV with a header line; None is an empty cell, floats keep all their digits."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(head)
    for row in rows:
        w.writerow(["" if v is None else v for v in row])
    return out.getvalue()
