"""The Trace as CSV files (PREFIX_spans.csv, _instants.csv, _counters.csv, _residency.csv),
and back: `read_trace_csv(PREFIX)` rebuilds the same arrays."""
from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from ..trace import (
    COUNTER_DTYPE,
    INSTANT_DTYPE,
    INSTANT_KINDS,
    LANE_DTYPE,
    RESIDENCY_DTYPE,
    SPAN_DTYPE,
    SPAN_KINDS,
    Trace,
)

TABLES = ("lanes", "spans", "instants", "counters", "residency")


def _rows_to_text(header: list[str], rows) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def trace_csv(trace: Trace) -> dict[str, str]:
    """{table: csv text}. Times in integer ns (exact); names instead of indices."""
    lanes = trace.lanes.tolist()
    lab = trace.labels
    return {
        "lanes": _rows_to_text(["lane", "group"], lanes),
        "spans": _rows_to_text(["lane", "start_ns", "end_ns", "kind", "label", "ref"],
                               ((lanes[ln][0], s, e, SPAN_KINDS[k], lab[i] if i >= 0 else "", r)
                                for ln, s, e, k, i, r in trace.spans.tolist())),
        "instants": _rows_to_text(["lane", "t_ns", "kind", "ref"],
                                  ((lanes[ln][0], t, INSTANT_KINDS[k], r) for ln, t, k, r in trace.instants.tolist())),
        "counters": _rows_to_text(["name", "unit", "t_ns", "value"],
                                  ((trace.counter_names[n], trace.counter_units[n], t, repr(v))
                                   for n, t, v in trace.counters.tolist())),
        "residency": _rows_to_text(["slot", "start_ns", "end_ns", "item"], trace.residency.tolist()),
    }


def csv_paths(prefix: str | Path) -> dict[str, Path]:
    prefix = str(prefix)
    return {t: Path(f"{prefix}_{t}.csv") for t in TABLES}


def read_trace_csv(prefix: str | Path, slots: int = 0, item_name: str = "item") -> Trace:
    paths = csv_paths(prefix)

    def rows(t):
        with open(paths[t], newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))

    lanes = [(r["lane"], r["group"]) for r in rows("lanes")]
    lane_ix = {name: i for i, (name, _) in enumerate(lanes)}
    labels: dict[str, int] = {}
    spans = [(lane_ix[r["lane"]], int(r["start_ns"]), int(r["end_ns"]), SPAN_KINDS.index(r["kind"]),
              labels.setdefault(r["label"], len(labels)) if r["label"] else -1, int(r["ref"]))
             for r in rows("spans")]
    inst = [(lane_ix[r["lane"]], int(r["t_ns"]), INSTANT_KINDS.index(r["kind"]), int(r["ref"]))
            for r in rows("instants")]
    names: dict[str, int] = {}
    units: list[str] = []
    counters = []
    for r in rows("counters"):
        if r["name"] not in names:
            names[r["name"]] = len(names)
            units.append(r["unit"])
        counters.append((names[r["name"]], int(r["t_ns"]), float(r["value"])))
    res = [(int(r["slot"]), int(r["start_ns"]), int(r["end_ns"]), int(r["item"])) for r in rows("residency")]
    return Trace(lanes=np.array(lanes, dtype=LANE_DTYPE), spans=np.array(spans, dtype=SPAN_DTYPE),
                 instants=np.array(inst, dtype=INSTANT_DTYPE), counters=np.array(counters, dtype=COUNTER_DTYPE),
                 residency=np.array(res, dtype=RESIDENCY_DTYPE), labels=tuple(labels),
                 counter_names=tuple(names), counter_units=tuple(units), slots=slots, item_name=item_name)
