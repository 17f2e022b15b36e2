"""The run's timeline spans as JSON Lines, one object per span (lane, start_ns, end_ns, kind,
label): for jq, DuckDB's read_json or pandas' read_json(lines=True)."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

from .registry import ExportFormat, Files, register

if TYPE_CHECKING:
    from ..result import Result


def spans_jsonl(result: Result, path: str) -> Files:
    from ..trace import SPAN_KINDS  # here, not at the top: `kvviz run --help` lists the flags without numpy
    trace = result.trace
    lanes = [name for name, _group in trace.lanes.tolist()]
    text = "".join(json.dumps({"lane": lanes[lane], "start_ns": start, "end_ns": end, "kind": SPAN_KINDS[kind],
                               "label": trace.labels[label] if label >= 0 else ""}) + "\n"
                   for lane, start, end, kind, label, *_ in trace.spans.tolist())
    return [(path, text)]


register(ExportFormat(name="spans_jsonl", label="Spans as JSON Lines…", ext="jsonl", ranged=False,
                      flag="--spans-jsonl", metavar="OUT.jsonl", help="the timeline's spans, one JSON object a line",
                      said="JSONL", render=spans_jsonl))
