"""Conversation logs: a CSV (with header) or JSONL file of turns, `conversation, turn, arrival_s,
input_tokens, output_tokens` per row. Turns are numbered from 1 in the file, consecutively per
conversation, each after the previous one (in file order and in time); conversations may
interleave. A bad row raises ScenarioError naming the file and the line."""
from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any, overload

import numpy as np

from ..errors import ScenarioError
from ..io import read_text
from ..limits import MAX_NS, MAX_TOKENS
from .conversations import NS_PER_S, Conversations
from .jsonl import identifier, json_lines

COLUMNS = ("conversation", "turn", "arrival_s", "input_tokens", "output_tokens")


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, dict) per record of a CSV (with header) or JSONL file."""
    text = read_text(path, "trace file")
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        for i, rec in json_lines(path, text):
            missing = [c for c in COLUMNS if c not in rec]
            if missing:
                raise ScenarioError(f"missing field(s) {', '.join(missing)} (each line needs "
                                    f"{', '.join(COLUMNS)})", str(path), f"line {i}")
            identifier(rec["conversation"], "conversation", path, i)
            for key in COLUMNS[1:]:  # JSON has numbers: "600" is a string, as in the CSV it is not
                v = rec[key]
                if type(v) not in (int, float) or key != "arrival_s" and type(v) is float:
                    what = "a number" if key == "arrival_s" else "an integer"
                    raise ScenarioError(f"{key}: expected {what}, got {v!r}", str(path), f"line {i}")
            yield i, rec
        return
    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    if header is None:
        raise ScenarioError("empty trace file", str(path), "line 1")
    header = [h.strip() for h in header]
    twice = sorted({c for c in header if c and header.count(c) > 1})
    if twice:  # a row keeps one of them: which?
        raise ScenarioError(f"column(s) {', '.join(twice)} named twice in the header", str(path), "line 1")
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise ScenarioError(f"missing column(s) {', '.join(missing)} (the header needs "
                            f"{', '.join(COLUMNS)})", str(path), "line 1")
    for i, row in enumerate(reader, 2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise ScenarioError(f"expected {len(header)} fields, got {len(row)}", str(path), f"line {i}")
        yield i, dict(zip(header, row))


@overload
def _number(rec: dict[str, Any], key: str, kind: type[int], minimum: float, path: Path, line: int) -> int: ...
@overload
def _number(rec: dict[str, Any], key: str, kind: type[float], minimum: float, path: Path, line: int) -> float: ...
def _number(rec: dict[str, Any], key: str, kind: type[int] | type[float], minimum: float, path: Path, line: int
            ) -> int | float:
    try:
        v = kind(rec[key]) if kind is float else int(str(rec[key]).strip())
    except (TypeError, ValueError):
        raise ScenarioError(f"{key}: expected {'a number' if kind is float else 'an integer'}, "
                            f"got {rec[key]!r}", str(path), f"line {line}") from None
    if not (v >= minimum) or (kind is float and not math.isfinite(v)):
        raise ScenarioError(f"{key}: must be >= {minimum} (got {v})", str(path), f"line {line}")
    top = MAX_NS / NS_PER_S if key == "arrival_s" else MAX_TOKENS if key.endswith("tokens") else 2 ** 62
    if v > top:  # a value the simulation could not represent
        raise ScenarioError(f"{key}: at most {top:,.0f} (got {v:.3g})", str(path), f"line {line}")
    return v


def read(path: str | Path) -> Conversations:
    """A conversation log as Conversations, sorted by conversation then turn."""
    path = Path(path)
    last: dict[str, tuple[int, float]] = {}   # conversation -> (turn, arrival_s) seen last
    recs: list[tuple[int, int, float, int, int]] = []
    index: dict[str, int] = {}
    for line, rec in _rows(path):
        cid = str(rec["conversation"]).strip()
        if not cid:
            raise ScenarioError("conversation: empty id", str(path), f"line {line}")
        turn = _number(rec, "turn", int, 1, path, line)
        t = _number(rec, "arrival_s", float, 0, path, line)
        n_in = _number(rec, "input_tokens", int, 1, path, line)
        n_out = _number(rec, "output_tokens", int, 0, path, line)
        if cid not in last:
            if turn != 1:
                raise ScenarioError(f"unknown conversation {cid!r}: it first appears at turn {turn} "
                                    f"(its turn 1 is missing or comes later)", str(path), f"line {line}")
            index[cid] = len(index)
        else:
            prev_turn, prev_t = last[cid]
            if turn != prev_turn + 1:
                raise ScenarioError(f"conversation {cid!r}: turn {turn} follows turn {prev_turn} "
                                    f"(turns must be consecutive and in order)", str(path), f"line {line}")
            if t < prev_t:
                raise ScenarioError(f"conversation {cid!r}: turn {turn} arrives at {t} s, before turn "
                                    f"{prev_turn} ({prev_t} s)", str(path), f"line {line}")
        last[cid] = (turn, t)
        recs.append((index[cid], turn - 1, t, n_in, n_out))
    if not recs:
        raise ScenarioError("the trace has no turns", str(path))
    a = np.array(recs, dtype=[("conv", "i8"), ("turn", "i8"), ("t", "f8"), ("in", "i8"), ("out", "i8")])
    a = a[np.lexsort((a["turn"], a["conv"]))]
    arrival = np.rint(a["t"] * NS_PER_S).astype(np.int64)
    think = np.zeros(len(a), dtype=np.int64)
    later = a["turn"] > 0
    think[later] = arrival[later] - arrival[np.flatnonzero(later) - 1]
    return Conversations(a["conv"].copy(), a["turn"].copy(), arrival, think, a["in"].copy(), a["out"].copy(),
                         tuple(index))
