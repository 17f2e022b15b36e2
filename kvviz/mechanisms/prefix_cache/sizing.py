"""How many block lookups a trace-driven run will make, told from the trace file's size and its
first lines before the whole file is read, so a huge trace is refused by the size guard at
once instead of after minutes of parsing.

The first HEAD_BYTES are parsed (kvviz.requests' JSONL reader) and the densest line found:
the most hash ids per byte of any line there. The file's size times that density is the
estimate; on the safe side as long as no later line packs ids more densely than the densest
of the first thousand or so (ASSUMPTION, ours: a trace's lines are written alike; the bundled
Mooncake sample: 1.9× its 121,877 ids). Where the head has no complete line with hash_ids (one
line of megabytes, or not a trace the head can tell), the bound is the file's size over the
fewest bytes an id can take, two ("7,"): a true upper bound, and a loose one. With
`workload.max_requests`, at most that many requests times the most ids of a line in the head.
"""
from __future__ import annotations

import os
from pathlib import Path

from ...errors import ScenarioError
from ...requests.common import read_bytes
from ...requests.jsonl import json_lines

HEAD_BYTES = 1 << 18  # 256 KiB: a few hundred to a few thousand lines, read in about a millisecond
ID_FLOOR_BYTES = 2    # a one-digit JSON integer and its separator


def trace_lookups(path: str | Path, max_requests: int = 0) -> float:
    """An estimate (on the safe side) of the hash ids a trace holds, or its first
    `max_requests` requests hold (0: all)."""
    path = Path(path)
    try:
        size = os.stat(path).st_size
        head = read_bytes(path, HEAD_BYTES)
    except (OSError, ScenarioError):
        return 0.0  # not readable: the run's reader says why, naming the file
    bound = size / ID_FLOOR_BYTES
    text = head.decode("utf-8", errors="replace").removeprefix("\ufeff")
    if len(head) < size:
        text = text[:text.rfind("\n") + 1]  # whole lines only: the last one read may be cut
    lines = text.splitlines()
    densest, most = 0.0, 0
    try:
        for i, rec in json_lines(path, text):
            ids = rec.get("hash_ids")
            if isinstance(ids, list):
                densest = max(densest, len(ids) / (len(lines[i - 1].encode("utf-8")) + 1))  # + its newline
                most = max(most, len(ids))
    except ScenarioError:  # a bad line: the reader names it when the run reads the file
        return bound
    if densest == 0.0:
        return bound
    estimate = size * densest
    return min(estimate, max_requests * most) if max_requests else estimate
