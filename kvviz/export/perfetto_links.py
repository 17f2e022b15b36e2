"""What the Perfetto trace derives from the trace's facts: flows from each transfer to what
consumes it, and per-tier counters of the transfers in flight.

A flow is the set of spans and instants sharing a fact's `flow` id: its source is the earliest
transfer among them (fetch, load, prefetch, copy, save), every other member a consumer.
"""
from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..trace import SPAN_KINDS, TIERS, Trace

PRODUCERS = tuple(SPAN_KINDS.index(k) for k in ("fetch", "load", "prefetch", "copy"))


def flow_pairs(tr: Trace) -> list[tuple[tuple[str, int], tuple[str, int]]]:
    """[((table, row) of the source, (table, row) of a consumer)], table "spans" or "instants",
    in source time order."""
    sf = tr.fact_column(tr.spans, "flow")
    inf = tr.fact_column(tr.instants, "flow")
    if not (sf >= 0).any():
        return []
    members: dict[int, list[tuple[str, int]]] = {}
    for table, ids in (("spans", sf), ("instants", inf)):
        rows = np.flatnonzero(ids >= 0)
        for row, f in zip(rows.tolist(), ids[rows].tolist()):
            members.setdefault(f, []).append((table, row))
    kinds, starts = tr.spans["kind"].tolist(), tr.spans["start"].tolist()
    out: list[tuple[tuple[str, int], tuple[str, int]]] = []
    for refs in members.values():
        sources = [r for t, r in refs if t == "spans" and kinds[r] in PRODUCERS]
        if not sources:
            continue
        src = min(sources, key=lambda r: (starts[r], r))
        out.extend((("spans", src), m) for m in refs if m != ("spans", src))
    out.sort(key=lambda p: (starts[p[0][1]], p[0][1], p[1]))
    return out


def event_time(tr: Trace, ref: tuple[str, int]) -> int:
    table, row = ref
    return int(tr.spans["start"][row]) if table == "spans" else int(tr.instants["t"][row])


def tier_in_flight(tr: Trace) -> dict[str, tuple[str, npt.NDArray[np.int64], npt.NDArray[np.float64]]]:
    """{tier: (unit, times ns, level)} for every tier a span reads from or writes to: the
    bytes in flight through it, or the transfers in flight where no transfer of it knows its
    bytes. A step function: the level holds from each time to the next."""
    sp = tr.spans  # a span that names a source or destination tier moves data between them
    src, dst = tr.fact_column(sp, "src"), tr.fact_column(sp, "dst")
    nbytes = tr.fact_column(sp, "bytes")
    out: dict[str, tuple[str, npt.NDArray[np.int64], npt.NDArray[np.float64]]] = {}
    for i, tier in enumerate(TIERS):
        on = (src == i) | (dst == i)
        if not on.any():
            continue
        known = nbytes[on] >= 0
        unit, weight = ("B", np.where(known, nbytes[on], 0)) if known.any() else ("transfers", np.ones(on.sum()))
        t = np.concatenate([sp["start"][on], sp["end"][on]])
        d = np.concatenate([weight, -weight]).astype(np.float64)
        order = np.lexsort((d, t))  # at one instant, ends before starts: no false peak
        t, level = t[order], np.cumsum(d[order])
        last = np.r_[t[1:] != t[:-1], True]  # one sample per instant: the level after it
        out[tier] = (unit, t[last], level[last])
    return out
