"""What the Perfetto trace derives from the trace's facts: flows from each transfer to what
consumes it, and per-tier counters of the transfers in flight.

A flow is the set of spans and instants sharing a fact's `flow` id: each transfer among them
(fetch, load, prefetch, copy), and a routed arrival, feeds each member that is neither (`feeds`).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from ..trace import INSTANT_KINDS, SPAN_KINDS, TIERS, Trace

PRODUCERS = tuple(SPAN_KINDS.index(k) for k in ("fetch", "load", "prefetch", "copy"))
ROUTED = INSTANT_KINDS.index("arrive")  # a request's arrival at a router, routed where it is served


def is_source(member: tuple[str, int], span_kinds: list[int], instant_kinds: list[int]) -> bool:
    """A transfer (fetch, load, prefetch, copy) or a routed arrival: what starts a flow."""
    table, row = member
    return span_kinds[row] in PRODUCERS if table == "spans" else instant_kinds[row] == ROUTED


def feeds(members: list[tuple[str, int]], span_kinds: list[int], instant_kinds: list[int],
          time: Callable[[tuple[str, int]], int]) -> list[tuple[tuple[str, int], tuple[str, int]]]:
    """The (source, consumer) pairs of one flow's members ((table, row), table "spans" or
    "instants"): every source among them (`is_source`) feeds every member that is not one (the
    loads of several tiers into one prefill; a request's arrival, and what its instance fetched for
    it, to the mark of its prefill); a flow of transfers only (a fetch relayed by a load) runs from
    the earliest to the others."""
    sources = [m for m in members if is_source(m, span_kinds, instant_kinds)]
    if not sources:
        return []
    are = set(sources)
    consumers = [m for m in members if m not in are]
    if consumers:
        return [(s, c) for s in sources for c in consumers]
    src = min(sources, key=lambda m: (time(m), m))
    return [(src, m) for m in sources if m != src]


def flow_pairs(tr: Trace) -> list[tuple[tuple[str, int], tuple[str, int]]]:
    """[((table, row) of the source, (table, row) of a consumer)], table "spans" or "instants",
    in source time order."""
    sf = tr.fact_column(tr.spans, "flow")
    inf = tr.fact_column(tr.instants, "flow")
    if not (sf >= 0).any() and not (inf >= 0).any():
        return []
    members: dict[int, list[tuple[str, int]]] = {}
    for table, ids in (("spans", sf), ("instants", inf)):
        rows = np.flatnonzero(ids >= 0)
        for row, f in zip(rows.tolist(), ids[rows].tolist()):
            members.setdefault(f, []).append((table, row))
    kinds, ikinds = tr.spans["kind"].tolist(), tr.instants["kind"].tolist()
    starts, marks = tr.spans["start"].tolist(), tr.instants["t"].tolist()

    def time(m: tuple[str, int]) -> int:
        return int(starts[m[1]] if m[0] == "spans" else marks[m[1]])

    out = [pair for rows in members.values() for pair in feeds(rows, kinds, ikinds, time)]
    out.sort(key=lambda p: (time(p[0]), p[0], p[1]))
    return out


def event_time(tr: Trace, ref: tuple[str, int]) -> int:
    table, row = ref
    return int(tr.spans["start"][row]) if table == "spans" else int(tr.instants["t"][row])


def flow_landings(tr: Trace, pairs: list[tuple[tuple[str, int], tuple[str, int]]]
                  ) -> tuple[dict[int, tuple[int, set[str]]], list[bool]]:
    """Where each flow should land so Perfetto, which draws it from its source slice's end to the
    slice its "f" binds to, draws it forward: ({consumer span row: (the latest end among its
    sources that end inside it, their kinds)} for each consumer that starts before a source of its
    ends and ends no earlier (the layer-wise loads that stream in while their prefill runs; a
    stall that ends as its fetch lands), and, by pair, whether the source ends after its consumer
    (an instant it lands after, or a slice done before its input is in): left at the consumer's
    start, backward)."""
    starts, ends = (tr.spans[c].tolist() for c in ("start", "end"))
    marks = tr.instants["t"].tolist()
    kinds, ikinds = tr.spans["kind"].tolist(), tr.instants["kind"].tolist()
    landing: dict[int, tuple[int, set[str]]] = {}
    late: list[bool] = []
    for (ta, ra), (tb, rb) in pairs:
        landed = ends[ra] if ta == "spans" else marks[ra]
        kind = SPAN_KINDS[kinds[ra]] if ta == "spans" else INSTANT_KINDS[ikinds[ra]]
        begin, finish = (starts[rb], ends[rb]) if tb == "spans" else (marks[rb], marks[rb])
        late.append(landed > finish)
        if begin < landed <= finish:
            at, by = landing.get(rb, (landed, set()))
            landing[rb] = (max(at, landed), by | {kind})
    return landing, late


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
