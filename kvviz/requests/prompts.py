"""LLM requests as a trace records them (Mooncake, Qwen/Bailian): one row per request in file
order, with each prompt's block hashes kept, so a block-level cache can follow prefixes.

`hash_ids` are held compactly, all requests' ids in one int64 array cut by offsets (request i's
are `hashes[offsets[i]:offsets[i + 1]]`), not a list per request: 122K ids of the bundled
Mooncake sample are 1 MB, not 4,000 Python lists. A block is `block_tokens` tokens (512
Mooncake, 16 Qwen/Bailian); the last block of a prompt is usually partial.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

import numpy as np

from ..errors import ScenarioError
from ..io import read_text
from .jsonl import (
    BLOCK_TOKENS,
    MOONCAKE,
    detect,
    first_record,
    in_time_order,
    json_lines,
    mooncake_record,
    qwen_record,
)


@dataclass(frozen=True, eq=False)
class PromptRequests:
    """Requests in file order. Qwen/Bailian's own fields (chat_id, parent_chat_id, turn, type)
    are tuples of the values as written (None where a line leaves one out; a first turn's
    parent is -1); None for a Mooncake trace, which records no sessions."""
    format: str                 # "mooncake" or "qwen"
    block_tokens: int           # tokens per hash id
    lines: np.ndarray           # int64, the file line of each request (from 1)
    times_s: np.ndarray         # float64 arrival, seconds from the trace's start
    input_tokens: np.ndarray    # int64
    output_tokens: np.ndarray   # int64
    hash_offsets: np.ndarray    # int64, len(self) + 1
    hashes: np.ndarray          # int64, every request's hash_ids one after another
    chat_id: tuple | None = None
    parent_chat_id: tuple | None = None
    turn: tuple | None = None
    type: tuple | None = None
    source: str = field(default="")

    def __len__(self) -> int:
        return len(self.lines)

    def hash_ids(self, i: int) -> np.ndarray:
        """Request i's block hashes, in prompt order (a view)."""
        return self.hashes[self.hash_offsets[i]:self.hash_offsets[i + 1]]

    @property
    def hash_counts(self) -> np.ndarray:
        return np.diff(self.hash_offsets)


class PromptRows:
    """Rows appended one checked line at a time, made into a PromptRequests at the end."""

    def __init__(self, fmt: str, source: str):
        self.fmt, self.source = fmt, source
        self.lines: list[int] = []
        self.recorded: list[float] = []  # timestamps as written (ms or s)
        self.times_s: list[float] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.ids: list[list] = []  # the lists as parsed: flattened once, at the end
        self.qwen = [] if fmt != MOONCAKE else None  # (chat_id, parent, turn, type) per row

    def add(self, line: int, t: float, n_in: int, n_out: int, ids: list | None, qwen: tuple | None = None):
        """One checked request; `t` as the trace writes it (Mooncake ms, Qwen s)."""
        self.lines.append(line)
        self.recorded.append(t)
        self.times_s.append(t / 1000 if self.qwen is None else t)
        self.inputs.append(n_in)
        self.outputs.append(n_out)
        self.ids.append(ids or ())
        if self.qwen is not None:
            self.qwen.append(qwen)

    def __len__(self) -> int:
        return len(self.lines)

    def finish(self) -> PromptRequests:
        in_time_order(self.times_s, self.lines, self.source)
        counts = np.fromiter(map(len, self.ids), np.int64, len(self.ids))
        offsets = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        try:
            hashes = np.fromiter(chain.from_iterable(self.ids), np.int64, int(offsets[-1]))
        except OverflowError:
            row = next(i for i, ids in enumerate(self.ids) if any(not -2**63 <= h < 2**63 for h in ids))
            raise ScenarioError("hash_ids: beyond 64-bit integers", self.source, f"line {self.lines[row]}") from None
        extra = dict(zip(("chat_id", "parent_chat_id", "turn", "type"), zip(*self.qwen))) if self.qwen else {}
        return PromptRequests(self.fmt, BLOCK_TOKENS[self.fmt], np.array(self.lines, dtype=np.int64),
                              np.array(self.times_s, dtype=np.float64), np.array(self.inputs, dtype=np.int64),
                              np.array(self.outputs, dtype=np.int64), offsets, hashes, source=self.source, **extra)


def read(path: str | Path) -> PromptRequests | None:
    """A Mooncake or Qwen/Bailian trace's requests, every line checked and hash_ids required;
    None when the first record is neither."""
    path = Path(path)
    fmt = detect(first_record(path))
    if fmt is None:
        return None
    text = read_text(path, "trace file")
    rows = PromptRows(fmt, str(path))
    for line, rec in json_lines(path, text):
        if fmt == MOONCAKE:
            t, n_in, n_out, ids = mooncake_record(rec, path, line)
            rows.add(line, t, n_in, n_out, ids)
        else:
            cid, parent, t, n_in, n_out, turn, ids = qwen_record(rec, path, line, need_hashes=True)
            rows.add(line, t, n_in, n_out, ids, (cid, parent, turn, rec.get("type")))
    if not len(rows):
        raise ScenarioError("the trace has no requests", str(path))
    return rows.finish()
