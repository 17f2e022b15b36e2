"""RAGPulse request traces (zhengchao wang et al., MIT; a university RAG service, one week):
`0_trace.jsonl` names, per request, the chunk ids of five prompt components, and five side
files beside it give each chunk id's `token_length`.

Trace line: `timestamp` (a string of seconds from the start), `input_length`, `output_length`,
`hash_ids` {sys_prompt, passages_ids, history, web_search, user_input: lists of chunk ids},
`session_id` (optional). Side files: `1_sys_prompt.jsonl` (sys_prompt_id), `2_passages.jsonl`
(passage_id), `3_history.jsonl` (history_id), `4_user_input.jsonl` (user_input_id),
`5_web_search.jsonl` (web_search_id), each line with `token_length`.

What a request's KV is (issue 32): its chunks concatenated in the order system prompt,
passages, history, web search, user input. A chunk id names content, not a prefix (passage 7398
after one system prompt is not the same KV as after another), so each chunk becomes one cache
block whose id names its whole prefix: block ids are the nodes of the trie of chunk sequences,
numbered 0.. in order of first request, exactly (no hash, no collision). A block is one chunk,
of its own token length (chunks are at most 512 tokens: `block_tokens` is 512, the nominal size;
`hash_tokens` holds each block's tokens). ASSUMPTION, ours: the few tokens of input_length the
chunks do not hold (6-12 on the public trace: the template) are computed every time, never
cached.

The file holds two segments, each in time order (the public one restarts at line 3,801): the
requests are sorted by time (stable: equal times keep file order) and each keeps its line.
Bad input raises ScenarioError naming the file, the line and the field.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ScenarioError
from ..io import decode_text, read_capped
from ..limits import MAX_NS
from .common import first_request_ids
from .jsonl import integer, json_lines, looks_like_ragpulse
from .objects import Requests
from .prompts import PromptRequests

RAGPULSE = "ragpulse"
CHUNK_TOKENS = 512  # the README's bound on a chunk: the nominal block
# (component in the trace, its side file, the id key there), in concatenation order
COMPONENTS = (("sys_prompt", "1_sys_prompt.jsonl", "sys_prompt_id"),
              ("passages_ids", "2_passages.jsonl", "passage_id"),
              ("history", "3_history.jsonl", "history_id"),
              ("web_search", "5_web_search.jsonl", "web_search_id"),
              ("user_input", "4_user_input.jsonl", "user_input_id"))
TRACE_KEYS = ("timestamp", "input_length", "output_length", "hash_ids")
_DECIMAL = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


@dataclass(frozen=True, eq=False)
class RagPulseRequests(PromptRequests):
    """PromptRequests whose blocks are chunks of their own lengths (`hash_tokens`, per hash id)."""
    hash_tokens: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    session_id: tuple[str | int | None, ...] | None = None


looks_like = looks_like_ragpulse  # read here by the cluster's workload and the format registry


def _side_file(path: Path, key: str) -> dict[int, int]:
    """chunk id -> token_length, every line checked."""
    if not path.exists():  # anything else there (a folder, a FIFO) is named as what it is by the read
        raise ScenarioError(f"the RAGPulse side file is missing (a trace's chunk lengths live beside it: "
                            f"{', '.join(c[1] for c in COMPONENTS)})", str(path))
    text = decode_text(read_capped(path, "RAGPulse side file"), path, "RAGPulse side file")
    out: dict[int, int] = {}
    for line, rec in json_lines(path, text):
        for k in (key, "token_length"):
            if k not in rec:
                raise ScenarioError(f"missing field {k} (a line needs {key} and token_length)", str(path),
                                    f"line {line}")
        cid = integer(rec, key, path, line, 0, 2 ** 62)
        if cid in out:
            raise ScenarioError(f"{key}: {cid} is given twice", str(path), f"line {line}")
        out[cid] = integer(rec, "token_length", path, line, 1)
    return out


def _seconds(v: object, path: Path, line: int) -> float:
    """A timestamp: a string of seconds (as the trace writes it), or a number."""
    if isinstance(v, str):
        # a decimal number as JSON writes one (float() also takes "1_0" as 10 and other scripts' digits)
        if not _DECIMAL.fullmatch(v.strip()):
            raise ScenarioError(f"timestamp: expected seconds as a number or a string of one, got {v!r:.40}",
                                str(path), f"line {line}")
        t = float(v.strip())
    elif isinstance(v, (int, float)) and not isinstance(v, bool):  # a JSON number (true is no time)
        t = float(v)
    else:
        raise ScenarioError(f"timestamp: expected seconds as a number or a string of one, got {v!r:.40}",
                            str(path), f"line {line}")
    if not math.isfinite(t) or t < 0:
        raise ScenarioError(f"timestamp: must be a finite number of seconds >= 0 (got {v!r:.40})", str(path),
                            f"line {line}")
    if t * 1e9 > MAX_NS:
        raise ScenarioError(f"timestamp: beyond the simulator's time range (at most {MAX_NS / 1e9:.3g} s)",
                            str(path), f"line {line}")
    return t


def read(path: str | Path) -> RagPulseRequests:
    """A RAGPulse trace and its five side files (in the trace's folder), in time order."""
    path = Path(path)
    text = decode_text(read_capped(path, "trace file"), path, "trace file")
    tokens_of: list[dict[int, int]] | None = None  # read at the first sound line: a trace that is none is said so
    trie: dict[tuple[int, int, int], int] = {}  # (parent block or -1, component, chunk id) -> block
    lines, times, inputs, outputs, sessions = [], [], [], [], []
    per_request: list[list[int]] = []
    block_tokens: list[int] = []  # tokens of each block id (trie node)
    for line, rec in json_lines(path, text):
        missing = [k for k in TRACE_KEYS if k not in rec]
        if missing:
            raise ScenarioError(f"missing field(s) {', '.join(missing)} (a RAGPulse trace line needs "
                                f"{', '.join(TRACE_KEYS)})", str(path), f"line {line}")
        t = _seconds(rec["timestamp"], path, line)
        n_in = integer(rec, "input_length", path, line)
        n_out = integer(rec, "output_length", path, line)
        comps = rec["hash_ids"]
        if not looks_like(rec):
            raise ScenarioError(f"hash_ids: expected an object of {', '.join(c[0] for c in COMPONENTS)}, got "
                                f"{str(comps)[:60]}", str(path), f"line {line}")
        unknown = sorted(set(comps) - {c[0] for c in COMPONENTS})
        if unknown:
            raise ScenarioError(f"hash_ids.{unknown[0]}: not a RAGPulse component (one of "
                                f"{', '.join(c[0] for c in COMPONENTS)})", str(path), f"line {line}")
        if tokens_of is None:
            tokens_of = [_side_file(path.parent / fname, key) for _, fname, key in COMPONENTS]
        parent, ids, total = -1, [], 0
        for ci, (name, fname, _) in enumerate(COMPONENTS):
            chunks = comps.get(name, [])
            if type(chunks) is not list or not all(type(c) is int for c in chunks):
                raise ScenarioError(f"hash_ids.{name}: expected a list of integer chunk ids, got {str(chunks)[:60]}",
                                    str(path), f"line {line}")
            lengths = tokens_of[ci]
            for c in chunks:
                n = lengths.get(c)
                if n is None:
                    raise ScenarioError(f"hash_ids.{name}: chunk {c} is not in {fname}", str(path), f"line {line}")
                key = (parent, ci, c)
                b = trie.get(key)
                if b is None:
                    b = trie[key] = len(trie)
                    block_tokens.append(n)
                ids.append(b)
                total += n
                parent = b
        if total > n_in:
            raise ScenarioError(f"input_length: {n_in:,} tokens, fewer than its chunks' {total:,}", str(path),
                                f"line {line}")
        sid = rec.get("session_id")
        if sid is not None and type(sid) not in (str, int):  # true is no session
            raise ScenarioError(f"session_id: expected a string, got {sid!r:.40}", str(path), f"line {line}")
        lines.append(line)
        times.append(t)
        inputs.append(n_in)
        outputs.append(n_out)
        sessions.append(sid)
        per_request.append(ids)
    if not lines:
        raise ScenarioError("the trace has no requests", str(path))
    order = np.argsort(np.array(times, dtype=np.float64), kind="stable")  # two sorted segments: one order
    counts = np.array([len(per_request[i]) for i in order], dtype=np.int64)
    offsets = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    nodes = np.fromiter((b for i in order for b in per_request[i]), np.int64, int(offsets[-1]))
    tok = np.asarray(block_tokens, dtype=np.int64)[nodes]
    hashes = first_request_ids(nodes)  # numbered in time order, as every reader numbers its objects
    pick = order.tolist()
    return RagPulseRequests(RAGPULSE, CHUNK_TOKENS, np.array(lines, dtype=np.int64)[order],
                            np.array(times, dtype=np.float64)[order], np.array(inputs, dtype=np.int64)[order],
                            np.array(outputs, dtype=np.int64)[order], offsets, hashes, source=str(path),
                            hash_tokens=tok,
                            session_id=tuple(sessions[i] for i in pick))


def as_objects(path: str | Path, kv_bytes_per_token: int) -> Requests:
    """The trace as object requests for a cache replay: each block (chunk, by its prefix) one
    request for an object of its own KV bytes, at its request's time."""
    got = read(path)
    sizes = got.hash_tokens * kv_bytes_per_token
    times = np.repeat(got.times_s, got.hash_counts)
    return Requests(got.hashes, sizes, times, f"{path} (ragpulse: {len(got):,} requests as {len(got.hashes):,} "
                                               f"chunks)")
