"""The Trace as CSV files (PREFIX_spans.csv, _instants.csv, _counters.csv, _residency.csv),
and back: `read_trace_csv(PREFIX)` rebuilds the same arrays. Spans and instants carry their
facts (bytes, src, dst, job, turn, pos, layer, flow: kvviz.trace.FACT_FIELDS) as columns, empty
where unknown."""
from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from ..trace import (
    COUNTER_DTYPE,
    FACT_FIELDS,
    INSTANT_DTYPE,
    INSTANT_KINDS,
    LANE_DTYPE,
    RESIDENCY_DTYPE,
    SPAN_DTYPE,
    SPAN_KINDS,
    TIERS,
    Trace,
    TraceBuilder,
)

TABLES = ("lanes", "spans", "instants", "counters", "residency")


def _rows_to_text(header: list[str], rows: Iterable[Iterable[object]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def _fact_cells(facts: list[tuple[int, ...]], i: int) -> tuple[object, ...]:
    """One fact row as CSV cells: tiers by name, unknown as empty."""
    return tuple("" if v < 0 else TIERS[v] if name in ("src", "dst") else v
                 for name, v in zip(FACT_FIELDS, facts[i]))


def trace_csv(trace: Trace) -> dict[str, str]:
    """{table: csv text}. Times in integer ns (exact); names instead of indices."""
    lanes = trace.lanes.tolist()
    lab = trace.labels
    facts = trace.facts.tolist()
    return {
        "lanes": _rows_to_text(["lane", "group"], lanes),
        "spans": _rows_to_text(["lane", "start_ns", "end_ns", "kind", "label", "ref", *FACT_FIELDS],
                               ((lanes[ln][0], s, e, SPAN_KINDS[k], lab[i] if i >= 0 else "", r, *_fact_cells(facts, f))
                                for ln, s, e, k, i, r, f in trace.spans.tolist())),
        "instants": _rows_to_text(["lane", "t_ns", "kind", "ref", *FACT_FIELDS],
                                  ((lanes[ln][0], t, INSTANT_KINDS[k], r, *_fact_cells(facts, f))
                                   for ln, t, k, r, f in trace.instants.tolist())),
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

    def rows(t: str) -> list[dict[str, str]]:
        with open(paths[t], newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))

    lanes = [(r["lane"], r["group"]) for r in rows("lanes")]
    lane_ix = {name: i for i, (name, _) in enumerate(lanes)}
    labels: dict[str, int] = {}
    tb = TraceBuilder()  # holds the facts, numbered by first use as the written trace's were
    seen: dict[tuple[tuple[str, str | int], ...], int] = {}

    def fact(r: dict[str, str]) -> int:
        known = tuple((f, r[f] if f in ("src", "dst") else int(r[f])) for f in FACT_FIELDS if r.get(f))
        if not known:
            return 0
        if known not in seen:
            seen[known] = tb.fact(**dict(known))
        return seen[known]

    spans = [(lane_ix[r["lane"]], int(r["start_ns"]), int(r["end_ns"]), SPAN_KINDS.index(r["kind"]),
              labels.setdefault(r["label"], len(labels)) if r["label"] else -1, int(r["ref"]), fact(r))
             for r in rows("spans")]
    inst = [(lane_ix[r["lane"]], int(r["t_ns"]), INSTANT_KINDS.index(r["kind"]), int(r["ref"]), fact(r))
            for r in rows("instants")]
    names: dict[str, int] = {}
    units: list[str] = []
    counters: list[tuple[int, int, float]] = []
    for r in rows("counters"):
        if r["name"] not in names:
            names[r["name"]] = len(names)
            units.append(r["unit"])
        counters.append((names[r["name"]], int(r["t_ns"]), float(r["value"])))
    res = [(int(r["slot"]), int(r["start_ns"]), int(r["end_ns"]), int(r["item"])) for r in rows("residency")]
    return Trace(lanes=np.array(lanes, dtype=LANE_DTYPE), spans=np.array(spans, dtype=SPAN_DTYPE),
                 instants=np.array(inst, dtype=INSTANT_DTYPE), counters=np.array(counters, dtype=COUNTER_DTYPE),
                 residency=np.array(res, dtype=RESIDENCY_DTYPE), labels=tuple(labels),
                 counter_names=tuple(names), counter_units=tuple(units), slots=slots, item_name=item_name,
                 facts=tb.fact_table())
