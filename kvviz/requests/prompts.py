"""LLM requests as a trace records them (Mooncake, Qwen/Bailian, the plain format of
kvviz.requests.plain): one row per request in file order, with each prompt's block hashes kept,
so a block-level cache can follow prefixes.

`hash_ids` are held compactly, all requests' ids in one int64 array cut by offsets (request i's
are `hashes[offsets[i]:offsets[i + 1]]`), not a list per request: 122K ids of the bundled
Mooncake sample are 1 MB, not 4,000 Python lists. A block is `block_tokens` tokens (512
Mooncake, 16 Qwen/Bailian, the plain trace's own `block_tokens`); the last block of a prompt is
usually partial.

Requests must come in time order, in every format (one rule, `read`): a timestamp earlier than
the line before exits naming the line; equal timestamps are fine (Mooncake's first requests all
arrive at 0).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ScenarioError
from ..io import decode_text, read_capped
from . import fast_jsonl
from .jsonl import (
    BLOCK_TOKENS,
    MOONCAKE,
    PLAIN,
    QWEN,
    ChatId,
    detect,
    first_record,
    in_time_order,
    json_lines,
    mooncake_record,
    qwen_record,
)
from .plain import csv_records, is_plain_csv, plain_record

QwenRow = tuple[ChatId, ChatId, "int | None", Any]  # (chat_id, parent_chat_id or -1, turn, type) of one row


@dataclass(frozen=True, eq=False)
class PromptRequests:
    """Requests in file order. Qwen/Bailian's own fields (chat_id, parent_chat_id, turn, type)
    are tuples of the values as written (None where a line leaves one out; a first turn's
    parent is -1); None for a Mooncake trace, which records no sessions."""
    format: str                 # "mooncake", "qwen" or "plain"
    block_tokens: int           # tokens per hash id
    lines: np.ndarray           # int64, the file line of each request (from 1)
    times_s: np.ndarray         # float64 arrival, seconds from the trace's start
    input_tokens: np.ndarray    # int64
    output_tokens: np.ndarray   # int64
    hash_offsets: np.ndarray    # int64, len(self) + 1
    hashes: np.ndarray          # int64, every request's hash_ids one after another
    chat_id: tuple[ChatId, ...] | None = None
    parent_chat_id: tuple[ChatId, ...] | None = None
    turn: tuple[int | None, ...] | None = None
    type: tuple[Any, ...] | None = None  # as the trace writes it
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

    def __init__(self, fmt: str, source: str, block_tokens: int | None = None):
        self.fmt, self.source = fmt, source
        self.block_tokens = BLOCK_TOKENS.get(fmt, 0) if block_tokens is None else block_tokens  # plain: its lines say
        self.lines: list[int] = []
        self.recorded: list[float] = []  # timestamps as written (ms or s)
        self.times_s: list[float] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        self.ids: list[Sequence[int]] = []  # the lists as parsed: flattened once, at the end
        self.qwen: list[QwenRow | None] | None = [] if fmt == QWEN else None  # (chat_id, parent, turn, type) per row

    def add(self, line: int, t: float, n_in: int, n_out: int, ids: list[int] | None, qwen: QwenRow | None = None
            ) -> None:
        """One checked request; `t` as the trace writes it (Mooncake ms, Qwen and plain s)."""
        self.lines.append(line)
        self.recorded.append(t)
        self.times_s.append(t / 1000 if self.fmt == MOONCAKE else t)
        self.inputs.append(n_in)
        self.outputs.append(n_out)
        self.ids.append(ids or ())
        if self.qwen is not None:
            self.qwen.append(qwen)

    def __len__(self) -> int:
        return len(self.lines)

    def finish(self) -> PromptRequests:
        in_time_order(self.times_s, self.lines, self.source, "time" if self.fmt == PLAIN else "timestamp")
        counts = np.fromiter(map(len, self.ids), np.int64, len(self.ids))
        offsets = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        try:
            hashes = np.fromiter(chain.from_iterable(self.ids), np.int64, int(offsets[-1]))
        except OverflowError:
            row = next(i for i, ids in enumerate(self.ids) if any(not -2**63 <= h < 2**63 for h in ids))
            raise ScenarioError("hash_ids: beyond 64-bit integers", self.source, f"line {self.lines[row]}") from None
        # one tuple per column of the Qwen rows (chat_id, parent, turn, type); None: not a Qwen trace, or empty
        cols: list[tuple[Any, ...] | None] = list(zip(*self.qwen)) if self.qwen else [None] * 4
        return PromptRequests(self.fmt, self.block_tokens, np.array(self.lines, dtype=np.int64),
                              np.array(self.times_s, dtype=np.float64), np.array(self.inputs, dtype=np.int64),
                              np.array(self.outputs, dtype=np.int64), offsets, hashes, cols[0], cols[1], cols[2], cols[3], self.source)


def fast_mooncake(data: bytes, source: str) -> PromptRequests | None:
    """A Mooncake trace's bytes read by kvviz.requests.fast_jsonl, or None (the strict reader's turn)."""
    got = fast_jsonl.mooncake(data, source)
    return None if got is None else PromptRequests(MOONCAKE, BLOCK_TOKENS[MOONCAKE], *got, source=source)


def refuse_unrecognised(path: Path) -> None:
    """A file no format claims, said as what it is where that is plain, not as "not a trace":
    empty (or blank), or compressed (`kvviz replay` decompresses a zstd trace before it reaches
    these readers; a scenario's workload does not)."""
    from .common import BOM, read_bytes
    from .zstd import compression
    head, size = read_bytes(path, 4096), path.stat().st_size
    if size <= len(head) and not head.removeprefix(BOM).strip():
        raise ScenarioError("the trace has no requests (the file is empty or blank)", str(path))
    kind = compression(head, size)
    if kind:
        raise ScenarioError(f"compressed with {kind}: a scenario reads its trace uncompressed (decompress it "
                            f"first; kvviz replay --prefix reads zstd)", str(path))


def read(path: str | Path) -> PromptRequests | None:
    """A Mooncake, Qwen/Bailian or plain (JSONL or CSV) trace's requests, every line checked,
    hash_ids required and times never going backwards; None when the file is none of them.
    A Mooncake file goes through kvviz.requests.fast_jsonl first (a compiled scanner, about 10x
    faster, then orjson, 3x; the same result or none), then, if neither could be sure, through
    the line-by-line checks below."""
    path = Path(path)
    fmt = detect(first_record(path), path)
    if fmt is None and not is_plain_csv(path):
        refuse_unrecognised(path)
        return None
    data = read_capped(path, "trace file")
    if fmt == MOONCAKE:
        fast = fast_mooncake(data, str(path))
        if fast is not None:
            return fast
    text = decode_text(data, path, "trace file")
    records = json_lines(path, text) if fmt is not None else csv_records(path, text)
    fmt = fmt or PLAIN
    rows = PromptRows(fmt, str(path))
    block_line = 0  # plain: the line that set block_tokens
    ids: list[int] | None
    for line, rec in records:
        if fmt == MOONCAKE:
            t, n_in, n_out, ids = mooncake_record(rec, path, line)
            rows.add(line, t, n_in, n_out, ids)
        elif fmt == QWEN:
            cid, parent, t, n_in, n_out, turn, ids = qwen_record(rec, path, line, need_hashes=True)
            rows.add(line, t, n_in, n_out, ids, (cid, parent, turn, rec.get("type")))
        else:
            t, n_in, n_out, tokens, ids = plain_record(rec, path, line)
            if not block_line:
                rows.block_tokens, block_line = tokens, line
            elif tokens != rows.block_tokens:
                raise ScenarioError(f"block_tokens {tokens} differs from line {block_line}'s "
                                    f"{rows.block_tokens}: one trace has one block size", str(path), f"line {line}")
            rows.add(line, t, n_in, n_out, ids)
    if not len(rows):
        raise ScenarioError("the trace has no requests", str(path))
    return rows.finish()
