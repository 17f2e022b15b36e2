"""Chrome / Perfetto trace JSON of a Result.

Lanes become named threads, one process per lane group (GPU, PCIe, a pool, SSD: lanes grouped
by tier). Spans are complete ("X") events; spans that overlap
on one lane are spread over sub-lanes (extra thread ids named "lane #2", ...), because Perfetto
draws overlapping complete events on one thread wrongly. Instants are "i" events, counters "C"
events, timestamps in µs (fractional: the core's ns are exact in a float below 2^53 ns).
Every span and instant carries its facts (bytes, src, dst, job, turn, pos, layer, flow) as args;
flow events ("s"/"f") link each transfer to what consumes it, and a counter process holds the
run's counters and, per tier, the bytes (or transfers) in flight through it.
The scenario and metrics travel in the trace's `otherData`.
"""
from __future__ import annotations

import heapq
import json
from collections import Counter
from typing import cast

import numpy as np
import numpy.typing as npt

from ..palette import tier_label
from ..result import Result
from ..scenario import scenario_to_dict
from ..trace import FACT_FIELDS, INSTANT_KINDS, SPAN_KINDS, TIERS, Trace
from .perfetto_links import event_time, flow_landings, flow_pairs, tier_in_flight

PID = 1
Event = dict[str, object]  # one trace event, as JSON
_PLURAL = {"fetch": "fetches", "load": "loads", "prefetch": "prefetches", "copy": "copies", "arrive": "arrivals"}


def sublanes(start: npt.NDArray[np.int64], end: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Smallest-index sub-lane for each span (sorted by start) so none overlap within one."""
    if len(start) == 0:
        return np.zeros(0, dtype=np.int64)
    if len(start) < 2 or (start[1:] >= np.maximum.accumulate(end)[:-1]).all():
        return np.zeros(len(start), dtype=np.int64)  # the common case: no overlap at all
    out = np.empty(len(start), dtype=np.int64)
    busy: list[tuple[int, int]] = []  # (free_at, sublane)
    free: list[int] = []
    n = 0
    for i, (s, e) in enumerate(zip(start.tolist(), end.tolist())):
        while busy and busy[0][0] <= s:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            k = heapq.heappop(free)
        else:
            k, n = n, n + 1
        out[i] = k
        heapq.heappush(busy, (e, k))
    return out


def _fact_args(tr: Trace) -> list[dict[str, int | str]]:
    """Each fact row as Perfetto args (tiers by name, unknown fields left out), by fact id."""
    tiers = ("src", "dst")
    return [{k: (TIERS[v] if k in tiers else v) for k, v in zip(FACT_FIELDS, row) if v >= 0}
            for row in tr.facts.tolist()]


def perfetto_events(result: Result) -> list[Event]:
    tr = result.trace
    ev: list[Event] = []
    # one process per lane group (GPU, PCIe, a pool, SSD...), so lanes sit grouped by tier
    groups = list(dict.fromkeys(tr.lanes["group"].tolist()))
    pid_of = {g: PID + i for i, g in enumerate(groups)}
    for g, pid in pid_of.items():
        ev.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                   "args": {"name": f"{g} · kvviz: {result.scenario.name}"}})
        ev.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
    tid_of: dict[tuple[int, int], tuple[int, int]] = {}  # (lane, sub-lane) -> (pid, tid)

    def tid(lane: int, sub: int = 0) -> tuple[int, int]:
        key = (lane, sub)
        if key not in tid_of:
            t = len(tid_of) + 1
            name, group = tr.lanes[lane]
            tid_of[key] = (pid_of[str(group)], t)
            label = f"{group} / {name}" + (f" #{sub + 1}" if sub else "")
            ev.append({"ph": "M", "name": "thread_name", "pid": tid_of[key][0], "tid": t, "args": {"name": label}})
            ev.append({"ph": "M", "name": "thread_sort_index", "pid": tid_of[key][0], "tid": t,
                       "args": {"sort_index": lane * 1000 + sub}})
        return tid_of[key]

    for lane in range(len(tr.lanes)):
        tid(lane)  # every lane gets a named thread, even an empty one, in lane order
    args = _fact_args(tr)
    sp = tr.spans
    # (pid, tid) by row: every row's is set below before the flows read it
    where = {"spans": cast("list[tuple[int, int]]", [None] * len(sp)),
             "instants": cast("list[tuple[int, int]]", [None] * len(tr.instants))}
    # flows: "s" inside the source slice, "f" bound to the deepest slice holding its time on the
    # consumer's track: the consumer, or, where the consumer starts before its sources are in, a
    # child slice of it from then to its end (Perfetto draws a flow from its source slice's end to
    # that slice's start: the arrow then points forward). Whole inside the consumer, which has its
    # sub-lane to itself, the child overlaps nothing else; written right after it, so at a tie (a
    # consumer that ends as its source lands: a zero-length child) it comes before the next slice
    pairs = flow_pairs(tr)
    landing, late = flow_landings(tr, pairs)
    bound = Counter(b[1] for (_, b), behind in zip(pairs, late) if b[0] == "spans" and not behind)
    for lane in range(len(tr.lanes)):
        rows = np.flatnonzero(sp["lane"] == lane)  # already sorted by start
        s = sp[rows]
        subs = sublanes(s["start"], s["end"])
        for r, start, end, kind, label, ref, fact, sub in zip(
                rows.tolist(), *(s[c].tolist() for c in ("start", "end", "kind", "label", "ref", "fact")), subs.tolist()):
            pid, t = where["spans"][r] = tid(lane, sub)
            name = tr.labels[label] if label >= 0 else SPAN_KINDS[kind]
            ev.append({"ph": "X", "name": name, "cat": SPAN_KINDS[kind], "ts": start / 1000,
                       "dur": (end - start) / 1000, "pid": pid, "tid": t, "args": {"ref": ref, **args[fact]}})
            if r in landing:
                in_at, by = landing[r]
                ev.append({"ph": "X", "name": f"{name} · {', '.join(sorted(_PLURAL.get(k, k) for k in by))} in",
                           "cat": SPAN_KINDS[kind], "ts": in_at / 1000, "dur": (end - in_at) / 1000,
                           "pid": pid, "tid": t, "args": {"ref": ref, "sources": bound[r]}})
    ins = tr.instants
    for r, (lane, t_ns, kind, ref, fact) in enumerate(zip(*(ins[c].tolist() for c in ("lane", "t", "kind", "ref", "fact")))):
        pid, t = where["instants"][r] = tid(lane)
        ev.append({"ph": "i", "s": "t", "name": INSTANT_KINDS[kind], "cat": INSTANT_KINDS[kind],
                   "ts": t_ns / 1000, "pid": pid, "tid": t, "args": {"ref": ref, **args[fact]}})
    for n, ((a, b), behind) in enumerate(zip(pairs, late)):
        (pa, ta), (pb, tb) = where[a[0]][a[1]], where[b[0]][b[1]]
        lands = landing[b[1]][0] if b[0] == "spans" and b[1] in landing and not behind else event_time(tr, b)
        ev.append({"ph": "s", "id": n, "name": "feeds", "cat": "flow", "ts": event_time(tr, a) / 1000,
                   "pid": pa, "tid": ta})
        ev.append({"ph": "f", "bp": "e", "id": n, "name": "feeds", "cat": "flow", "ts": lands / 1000,
                   "pid": pb, "tid": tb})
    counter_pid = PID + len(groups)  # counters: the run's own, and one per tier in flight
    ev.append({"ph": "M", "name": "process_name", "pid": counter_pid, "tid": 0,
               "args": {"name": f"counters · kvviz: {result.scenario.name}"}})
    ev.append({"ph": "M", "name": "process_sort_index", "pid": counter_pid, "tid": 0,
               "args": {"sort_index": counter_pid}})
    names = [n + (f" ({u})" if u else "") for n, u in zip(tr.counter_names, tr.counter_units)]
    times, ids, values = [tr.counters["t"]], [tr.counters["name"].astype(np.int64)], [tr.counters["value"]]
    for tier, (unit, at, level) in tier_in_flight(tr).items():
        # named as the palette names the tier (the app's legends, keys and Tiers tab say the same)
        names.append(f"tier {tier_label(tier)} · {'bytes' if unit == 'B' else 'transfers'} in flight")
        times.append(at)
        ids.append(np.full(len(at), len(names) - 1, dtype=np.int64))
        values.append(level)
    at, i, v = np.concatenate(times), np.concatenate(ids), np.concatenate(values)
    order = np.argsort(at, kind="stable")  # one time order over all counters, as before
    ev.extend({"ph": "C", "name": names[n], "ts": ts / 1000, "pid": counter_pid, "args": {"value": x}}
              for ts, n, x in zip(at[order].tolist(), i[order].tolist(), v[order].tolist()))
    return ev


def perfetto_json(result: Result) -> str:
    doc = {"traceEvents": perfetto_events(result), "displayTimeUnit": "ns",
           "otherData": {"generator": "kvviz", "kind": result.scenario.kind,
                         "scenario": scenario_to_dict(result.scenario),
                         "metrics": result.metrics_dict()}}
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
