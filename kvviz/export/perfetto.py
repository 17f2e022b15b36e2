"""Chrome / Perfetto trace JSON of a Result.

Lanes become named threads of one process. Spans are complete ("X") events; spans that overlap
on one lane are spread over sub-lanes (extra thread ids named "lane #2", ...), because Perfetto
draws overlapping complete events on one thread wrongly. Instants are "i" events, counters "C"
events, timestamps in µs (fractional: the core's ns are exact in a float below 2^53 ns).
The scenario and metrics travel in the trace's `otherData`.
"""
from __future__ import annotations

import heapq
import json

import numpy as np

from ..result import Result
from ..scenario import scenario_to_dict
from ..trace import INSTANT_KINDS, SPAN_KINDS

PID = 1


def sublanes(start: np.ndarray, end: np.ndarray) -> np.ndarray:
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


def perfetto_events(result: Result) -> list[dict]:
    tr = result.trace
    ev: list[dict] = [{"ph": "M", "name": "process_name", "pid": PID, "tid": 0,
                       "args": {"name": f"kvviz: {result.scenario.name}"}}]
    tid_of: dict[tuple[int, int], int] = {}

    def tid(lane: int, sub: int = 0) -> int:
        key = (lane, sub)
        if key not in tid_of:
            t = len(tid_of) + 1
            tid_of[key] = t
            name, group = tr.lanes[lane]
            label = f"{group} / {name}" + (f" #{sub + 1}" if sub else "")
            ev.append({"ph": "M", "name": "thread_name", "pid": PID, "tid": t, "args": {"name": label}})
            ev.append({"ph": "M", "name": "thread_sort_index", "pid": PID, "tid": t,
                       "args": {"sort_index": lane * 1000 + sub}})
        return tid_of[key]

    for lane in range(len(tr.lanes)):
        tid(lane)  # every lane gets a named thread, even an empty one, in lane order
    for lane in range(len(tr.lanes)):
        s = tr.spans[tr.spans["lane"] == lane]  # already sorted by start
        subs = sublanes(s["start"], s["end"])
        for row, sub in zip(s.tolist(), subs.tolist()):
            _, start, end, kind, label, ref = row
            ev.append({"ph": "X", "name": tr.labels[label] if label >= 0 else SPAN_KINDS[kind],
                       "cat": SPAN_KINDS[kind], "ts": start / 1000, "dur": (end - start) / 1000,
                       "pid": PID, "tid": tid(lane, sub), "args": {"ref": ref}})
    for lane, t, kind, ref in tr.instants.tolist():
        ev.append({"ph": "i", "s": "t", "name": INSTANT_KINDS[kind], "cat": INSTANT_KINDS[kind],
                   "ts": t / 1000, "pid": PID, "tid": tid(lane), "args": {"ref": ref}})
    for name, t, value in tr.counters.tolist():
        cname = tr.counter_names[name]
        unit = tr.counter_units[name] if name < len(tr.counter_units) else ""
        ev.append({"ph": "C", "name": cname + (f" ({unit})" if unit else ""), "ts": t / 1000,
                   "pid": PID, "args": {"value": value}})
    return ev


def perfetto_json(result: Result) -> str:
    doc = {"traceEvents": perfetto_events(result), "displayTimeUnit": "ns",
           "otherData": {"generator": "kvviz", "kind": result.scenario.kind,
                         "scenario": scenario_to_dict(result.scenario),
                         "metrics": result.metrics_dict()}}
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
