"""Multi-turn conversation workloads: a seeded ShareGPT-shaped generator, and trace import.

A Workload is a table of turns (one row per turn, sorted by conversation then turn) held as
numpy arrays. Rows carry each turn's token counts, the user's think time before it and a
nominal arrival time; the serving model decides the actual arrival of later turns, since a
user cannot send turn k+1 before reading reply k.
"""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import ScenarioError
from ...io import read_text

NS_PER_S = 1_000_000_000
COLUMNS = ("conversation", "turn", "arrival_s", "input_tokens", "output_tokens")


@dataclass(frozen=True)
class Workload:
    conv: np.ndarray        # int64 conversation index 0..n_conv-1, non-decreasing
    turn: np.ndarray        # int64 turn number within the conversation, from 0
    arrival_ns: np.ndarray  # int64 nominal (recorded) arrival of the turn
    think_ns: np.ndarray    # int64 think time before the turn (0 for a first turn)
    in_tok: np.ndarray      # int64 user tokens of the turn
    out_tok: np.ndarray     # int64 reply tokens of the turn
    names: tuple[str, ...]  # conversation ids as given (generated: their index)

    @property
    def n_conv(self) -> int:
        return len(self.names)

    def __len__(self) -> int:
        return len(self.conv)


def _lognormal(rng: np.random.Generator, mean: float, sigma: float, n: int, cap: int) -> np.ndarray:
    """Integer token counts with the given mean (before rounding and the cap), at least 1."""
    mu = math.log(mean) - sigma * sigma / 2  # lognormal mean = exp(mu + sigma²/2)
    return np.clip(np.rint(rng.lognormal(mu, sigma, n)), 1, cap).astype(np.int64)


def synthetic(w) -> Workload:
    """ShareGPT-shaped conversations (parameters: the scenario's `workload` section).

    Assumptions, each a parameter: conversations start as a Poisson process (the paper's);
    a share `multi_turn_share` has several turns (paper: 73%), their count 1 + geometric with
    mean `mean_turns_multi` (ours: 7.6 reproduces the paper's ~52K turns per ~9K
    conversations); token counts per turn are lognormal (ours) with means from ShareGPT as
    the vLLM paper reports it; think times are exponential (ours).
    """
    rng = np.random.default_rng(w.seed)
    n = w.conversations
    start = np.cumsum(rng.exponential(1.0 / w.arrival_rate_per_s, n))
    multi = rng.random(n) < w.multi_turn_share
    extra = rng.geometric(1.0 / (w.mean_turns_multi - 1.0), n)
    turns = np.where(multi, np.minimum(1 + extra, w.max_turns), 1).astype(np.int64)
    total = int(turns.sum())
    conv = np.repeat(np.arange(n, dtype=np.int64), turns)
    first = np.concatenate(([0], np.cumsum(turns)[:-1]))
    turn = np.arange(total, dtype=np.int64) - np.repeat(first, turns)
    in_tok = _lognormal(rng, w.input_tokens_mean, w.tokens_sigma, total, w.max_turn_tokens)
    out_tok = _lognormal(rng, w.output_tokens_mean, w.tokens_sigma, total, w.max_turn_tokens)
    think = np.rint(rng.exponential(w.think_time_mean_s, total) * NS_PER_S).astype(np.int64)
    think[first] = 0
    # Nominal arrival: start plus the think times so far (service time is the model's business).
    cum = np.cumsum(think)
    arrival = np.rint(start * NS_PER_S).astype(np.int64)[conv] + cum - np.repeat(cum[first], turns)
    return Workload(conv, turn, arrival, think, in_tok, out_tok, tuple(str(i) for i in range(n)))


def json_lines(path: Path, text: str):
    """(line number, dict) per non-blank line of a JSONL file."""
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise ScenarioError(f"malformed JSON: {e.msg}", str(path), f"line {i}") from None
        if not isinstance(rec, dict):
            raise ScenarioError("expected a JSON object per line", str(path), f"line {i}")
        yield i, rec


def _rows(path: Path):
    """(line number, dict) per record of a CSV (with header) or JSONL file."""
    text = read_text(path, "trace file")
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        for i, rec in json_lines(path, text):
            missing = [c for c in COLUMNS if c not in rec]
            if missing:
                raise ScenarioError(f"missing field(s) {', '.join(missing)} (each line needs "
                                    f"{', '.join(COLUMNS)})", str(path), f"line {i}")
            yield i, rec
        return
    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    if header is None:
        raise ScenarioError("empty trace file", str(path), "line 1")
    header = [h.strip() for h in header]
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


def _number(rec: dict, key: str, kind, minimum, path: Path, line: int):
    try:
        v = kind(rec[key]) if kind is float else int(str(rec[key]).strip())
    except (TypeError, ValueError):
        raise ScenarioError(f"{key}: expected {'a number' if kind is float else 'an integer'}, "
                            f"got {rec[key]!r}", str(path), f"line {line}") from None
    if not (v >= minimum) or (kind is float and not math.isfinite(v)):
        raise ScenarioError(f"{key}: must be >= {minimum} (got {v})", str(path), f"line {line}")
    return v


def load_trace(path: str | Path) -> Workload:
    """Import a conversation log. Turns are numbered from 1 in the file, consecutively per
    conversation, each after the previous one (in file order and in time); conversations may
    interleave. A JSON-lines file whose first record has Qwen/Bailian or Mooncake keys is read by
    trace_formats instead."""
    path = Path(path)
    from .trace_formats import read as read_request_trace  # imports this module: not at the top
    request_trace = read_request_trace(path)
    if request_trace is not None:
        return request_trace[0]
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
    return Workload(a["conv"].copy(), a["turn"].copy(), arrival, think, a["in"].copy(), a["out"].copy(),
                    tuple(index))
