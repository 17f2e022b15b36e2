"""Questions the timeline asks of a Trace, without Qt: which mark is under the mouse, what an
event's fields are, which events a search names, the nearest event edge (for snapping cursors),
and a time range's per-lane counts, busy time and bytes (as Perfetto's area selection)."""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from kvviz.export.perfetto_links import feeds
from kvviz.trace import INSTANT_KINDS, SPAN_KINDS, Trace

# what a search may name, and the fact it matches ("session 12" is a job, "position 7" a pos)
SEARCH_KEYS = {"job": "job", "session": "job", "conversation": "job", "turn": "turn", "step": "turn",
               "pos": "pos", "position": "pos", "layer": "layer", "flow": "flow"}
_KEYED = re.compile(r"^\s*(" + "|".join(SEARCH_KEYS) + r")\s*[=:#]?\s*(-?\d+)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Event:
    """One span ("spans") or instant ("instants") of a trace, by its row."""
    table: str
    row: int

    def start(self, tr: Trace) -> int:
        return int(tr.spans["start"][self.row] if self.table == "spans" else tr.instants["t"][self.row])

    def end(self, tr: Trace) -> int:
        return int(tr.spans["end"][self.row] if self.table == "spans" else tr.instants["t"][self.row])

    def lane(self, tr: Trace) -> int:
        return int(getattr(tr, self.table)["lane"][self.row])

    def kind(self, tr: Trace) -> str:
        k = int(getattr(tr, self.table)["kind"][self.row])
        return SPAN_KINDS[k] if self.table == "spans" else INSTANT_KINDS[k]

    def record(self, tr: Trace):
        return getattr(tr, self.table)[self.row]


def fields(tr: Trace, ev: Event) -> dict[str, object]:
    """Every field of an event, times in ns: lane, group, kind, start, end, duration, label, ref
    and its facts (bytes, items, src, dst, job, turn, pos, layer, flow where known)."""
    rec = ev.record(tr)
    name, group = tr.lanes[ev.lane(tr)]
    out: dict[str, object] = {"lane": str(name), "group": str(group), "kind": ev.kind(tr),
                              "start_ns": ev.start(tr), "end_ns": ev.end(tr),
                              "duration_ns": ev.end(tr) - ev.start(tr)}
    if ev.table == "spans":
        out["label"] = tr.label(int(rec["label"]))
    out["ref"] = int(rec["ref"])
    out.update(tr.facts_of(rec))
    return out


def who(facts: dict[str, object]) -> str:
    """The job, turn, position or layer an event belongs to, as a few words ("job 3 turn 2")."""
    parts = [f"{k} {facts[k]}" for k in ("job", "turn", "pos", "layer") if k in facts]
    return " ".join(parts)


def mark_at(tr: Trace, lane: int, t: float, tol: float) -> Event | None:
    """The instant on `lane` nearest to t (ns) within tol ns, or None."""
    ins = tr.instants
    rows = np.flatnonzero(ins["lane"] == lane)
    if not len(rows):
        return None
    gap = np.abs(ins["t"][rows] - t)
    i = int(np.argmin(gap))
    return Event("instants", int(rows[i])) if gap[i] <= tol else None


def find(tr: Trace, query: str) -> list[Event]:
    """Events a search names, in time order: "job 12", "session 12", "turn 3", "pos 7",
    "layer 4" match that fact; other text matches labels, kinds and lane names (any case)."""
    query = query.strip()
    if not query:
        return []
    m = _KEYED.match(query)
    hits: list[tuple[int, Event]] = []
    if m:
        key, value = SEARCH_KEYS[m.group(1).lower()], int(m.group(2))
        for table, times in (("spans", tr.spans["start"]), ("instants", tr.instants["t"])):
            col = tr.fact_column(getattr(tr, table), key)
            hits += [(int(times[r]), Event(table, int(r))) for r in np.flatnonzero(col == value)]
    else:
        q = query.lower()
        lanes = {i for i, n in enumerate(tr.lanes["name"].tolist()) if q in n.lower()}
        labels = np.array([q in s.lower() for s in tr.labels] + [False], dtype=bool)  # [-1]: no label
        kinds = np.array([q in k for k in SPAN_KINDS])
        sp = tr.spans
        ok = labels[sp["label"]] | kinds[sp["kind"]] | np.isin(sp["lane"], list(lanes))
        hits += [(int(sp["start"][r]), Event("spans", int(r))) for r in np.flatnonzero(ok)]
        ikinds = np.array([q in k for k in INSTANT_KINDS])
        hits += [(int(tr.instants["t"][r]), Event("instants", int(r))) for r in np.flatnonzero(ikinds[tr.instants["kind"]])]
    hits.sort(key=lambda h: (h[0], h[1].table, h[1].row))
    return [e for _, e in hits]


def nearest_edge(tr: Trace, t: float, tol: float) -> float:
    """t snapped to the nearest span start or end or instant within tol ns (else t itself)."""
    best, gap = t, tol
    # starts and instants are stored in time order; ends are not
    for srt in (tr.spans["start"], np.sort(tr.spans["end"]), tr.instants["t"]):
        i = int(np.searchsorted(srt, t))
        for j in (i - 1, i):
            if 0 <= j < len(srt) and abs(srt[j] - t) <= gap:
                best, gap = float(srt[j]), abs(float(srt[j]) - t)
    return best


def flow_partners(tr: Trace, ev: Event) -> list[tuple[str, Event]]:
    """The event's flow, as the Perfetto export draws it: for the transfer that starts it, what
    it feeds; for a consumer, the transfer that fed it. [("feeds" | "fed by", event)]."""
    f = tr.facts_of(ev.record(tr)).get("flow")
    if f is None:
        return []
    members = []
    for table in ("spans", "instants"):
        col = tr.fact_column(getattr(tr, table), "flow")
        members += [(table, int(r)) for r in np.flatnonzero(col == f)]
    here = (ev.table, ev.row)
    pairs = feeds(members, tr.spans["kind"].tolist(), tr.instants["kind"].tolist(), lambda m: Event(*m).start(tr))
    fed = sorted((Event(*c) for s, c in pairs if s == here), key=lambda e: e.start(tr))
    return [("feeds", e) for e in fed] + [("fed by", Event(*s)) for s, c in pairs if c == here]


@dataclass(frozen=True)
class LaneStats:
    lane: str
    spans: int       # spans overlapping the range
    marks: int       # instants inside it
    busy_ns: int     # time inside the range covered by at least one span
    bytes: int       # bytes of the overlapping spans that know theirs (-1: none does)


def range_stats(tr: Trace, t0: float, t1: float) -> list[LaneStats]:
    """Per lane with anything in [t0, t1] (ns): counts, busy time (overlaps counted once) and
    the bytes of the spans that overlap it (whole spans, as Perfetto sums its slices)."""
    t0, t1 = sorted((t0, t1))
    sp, ins = tr.spans, tr.instants
    out = []
    for lane, name in enumerate(tr.lanes["name"].tolist()):
        s = sp[(sp["lane"] == lane) & (sp["end"] >= t0) & (sp["start"] <= t1)]
        marks = int(((ins["lane"] == lane) & (ins["t"] >= t0) & (ins["t"] <= t1)).sum())
        if not len(s) and not marks:
            continue
        a, b = np.clip(s["start"], t0, t1), np.clip(s["end"], t0, t1)
        busy = 0
        if len(a):  # union of intervals: sorted by start, a running reach
            order = np.argsort(a, kind="stable")
            a, b = a[order], b[order]
            reach = np.maximum.accumulate(b)
            starts = np.r_[True, a[1:] > reach[:-1]]  # where a new busy stretch begins
            busy = int((np.maximum.reduceat(b, np.flatnonzero(starts)) - a[starts]).sum())
        nb = tr.fact_column(s, "bytes")
        out.append(LaneStats(str(name), len(s), marks, busy, int(nb[nb >= 0].sum()) if (nb >= 0).any() else -1))
    return out



def lane_named(tr: Trace, text: str) -> int | str:
    """The lane `text` names: its whole name, else the one lane whose name contains it (any
    case). Returns the lane's index, or why none is meant (a sentence)."""
    names = tr.lanes["name"].tolist()
    if text in names:
        return names.index(text)
    near = [i for i, n in enumerate(names) if text.lower() in n.lower()]
    if len(near) == 1:
        return near[0]
    listed = "; ".join(names)
    if not near:
        return f"no lane is named {text!r} (lanes: {listed})"
    return f"{text!r} names {len(near)} lanes: " + "; ".join(names[i] for i in near)


def event_on(tr: Trace, lane: int, t: float, tol: float) -> Event | None:
    """The event on `lane` at t (ns), as a typed LANE@TIME means it: the span that holds t (the
    last drawn of several), else the mark nearest t within tol ns, else the nearest span within
    tol; None if nothing is that close."""
    rows = np.flatnonzero(tr.spans["lane"] == lane)
    sp = tr.spans[rows]
    gap = np.maximum(np.maximum(sp["start"] - t, t - sp["end"]), 0)
    if len(rows) and gap.min() == 0:
        return Event("spans", int(rows[np.flatnonzero(gap == 0)[-1]]))
    m = mark_at(tr, lane, t, tol)
    if m is not None or not len(rows) or gap.min() > tol:
        return m
    return Event("spans", int(rows[np.flatnonzero(gap == gap.min())[-1]]))
