"""A seeded workload of prompts that share prefixes the ways served traffic does, when no trace
is given (every knob a `workload.` field; each shape an ASSUMPTION, ours):

- sessions start as a Poisson process; each opens with one of `system_prompts` system prompts
  (Zipf popularity), then, for `document_share` of them, one of `documents` documents (Zipf
  popularity, a fixed lognormal length each), shared by every session that picks it;
- a session is an agent loop (`agent_share`), a multi-turn chat (`multi_turn_share` of the rest)
  or a single request. Every later request re-sends the whole context so far: a chat adds the
  previous reply and new user tokens, an agent the previous reply and a tool result;
- block ids are chained as a serving engine's prefix hashes are: a block's id names its content
  and its parent's id, so equal prefixes give equal ids and the last, partial block of a prompt
  gets another id once it fills.
"""
from __future__ import annotations

import bisect
import math
from typing import TypedDict, overload

import numpy as np
import numpy.typing as npt

from ...errors import ScenarioError
from .model import Workload

Piece = tuple[int, int, int]  # (segment key, from, to): tokens of one segment of a context
Segment = tuple[int, int]     # (segment key, length)
# (hashes, offsets, input tokens, times in s, output tokens): generate's answer
Generated = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64],
                  npt.NDArray[np.int64]]


class _Session(TypedDict):
    """A session's context so far: its segments, and its full blocks' ids."""
    segs: list[Segment]
    full: list[int]
    last: int


def _zipf(n: int, s: float) -> npt.NDArray[np.float64]:
    p: npt.NDArray[np.float64] = 1.0 / np.arange(1, n + 1, dtype=np.float64) ** s
    shares: npt.NDArray[np.float64] = p / p.sum()
    return shares


@overload
def _lognormal(rng: np.random.Generator, mean: float, sigma: float, size: None = None) -> float: ...
@overload
def _lognormal(rng: np.random.Generator, mean: float, sigma: float, size: int) -> npt.NDArray[np.float64]: ...
def _lognormal(rng: np.random.Generator, mean: float, sigma: float,
               size: int | None = None) -> float | npt.NDArray[np.float64]:
    return rng.lognormal(math.log(mean) - sigma * sigma / 2, sigma, size)


class _Ids:
    """Chained block ids: (parent id, content) -> a new integer the first time it is seen."""

    def __init__(self) -> None:
        self.table: dict[tuple[int, tuple[Piece, ...]], int] = {}

    def of(self, parent: int, content: tuple[Piece, ...]) -> int:
        return self.table.setdefault((parent, content), len(self.table))


def _content(segs: list[Segment], starts: list[int], a: int, b: int) -> tuple[Piece, ...]:
    """The pieces (segment key, from, to) that tokens [a, b) of a context are made of."""
    i = bisect.bisect_right(starts, a) - 1
    out: list[Piece] = []
    while a < b:
        key, length = segs[i]
        off = a - starts[i]
        take = min(length - off, b - a)
        out.append((key, off, off + take))
        a += take
        i += 1
    return tuple(out)


def _sessions(w: Workload, rng: np.random.Generator) \
        -> tuple[list[tuple[str, int]], npt.NDArray[np.float64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(start time, kind, turns) of each session until enough requests fall before the latest
    start (later sessions can only add later requests), and the requests' (time, session, turn)."""
    req_t: list[float] = []
    req_s: list[int] = []
    req_k: list[int] = []
    sessions: list[tuple[str, int]] = []
    t = 0.0
    while True:
        for _ in range(256):
            t += rng.exponential(1.0 / w.session_rate_per_s)
            u = rng.random()
            if u < w.agent_share:
                kind, turns, gap = "agent", 1 + rng.geometric(1.0 / (w.agent_steps_mean - 1)), w.agent_gap_s
            elif rng.random() < w.multi_turn_share:
                kind, turns, gap = "chat", 1 + rng.geometric(1.0 / (w.mean_turns - 1)), w.think_time_s
            else:
                kind, turns, gap = "single", 1, 0.0
            turns = int(min(turns, 10_000))
            times = t + np.concatenate(([0.0], np.cumsum(rng.exponential(gap, turns - 1)) if gap > 0 else
                                        np.zeros(turns - 1)))
            sid = len(sessions)
            sessions.append((kind, turns))
            req_t.extend(times.tolist())
            req_s.extend([sid] * turns)
            req_k.extend(range(turns))
        if sum(1 for x in req_t if x <= t) >= w.requests:
            break
    order = np.argsort(np.array(req_t), kind="stable")[:w.requests]
    return sessions, np.array(req_t)[order], np.array(req_s)[order], np.array(req_k)[order]


KEEP_LOOKUPS = 2_000_000  # a generation this small is kept for the next ask (16 MB of ids at most)
# [((w, block_tokens, max_lookups), result)] of the last generation kept, or []
_last: list[tuple[tuple[Workload, int, int | None], Generated]] = []


def _copied(g: Generated) -> Generated:
    hashes, offsets, inputs, times, outputs = g
    return hashes.copy(), offsets.copy(), inputs.copy(), times.copy(), outputs.copy()


def generated(w: Workload, block_tokens: int, max_lookups: int | None = None) -> Generated:
    """generate(), the last small generation kept: `kvviz run` generates a workload for its
    estimate (the lookup count) and again for the run; the second is a copy of the first."""
    key = (w, block_tokens, max_lookups)
    if _last and _last[0][0] == key:
        return _copied(_last[0][1])
    out = generate(w, block_tokens, max_lookups)
    _last[:] = [(key, _copied(out))] if out[1][-1] <= KEEP_LOOKUPS else []
    return out


def generate(w: Workload, block_tokens: int, max_lookups: int | None = None) -> Generated:
    """(hashes, offsets, input tokens, times in s, output tokens) of `w.requests` requests in time
    order: every block of each prompt, its last partial block included (as a trace records them).
    A request's output is the reply that joins its session's next prompt; a session's last reply
    (never re-sent) is drawn from a second generator (seed [seed, 1]), so the prompts are those
    the untimed replay has always read. Past `max_lookups` block ids in all (lognormal lengths have
    long tails: a mean is no bound) it stops at once, naming the request, rather than build them."""
    rng = np.random.default_rng(w.seed)
    sessions, times, sess_of, turn_of = _sessions(w, rng)
    n_sys, n_doc = w.system_prompts, w.documents
    sys_p, doc_p = _zipf(n_sys, w.system_zipf), _zipf(n_doc, w.document_zipf)
    doc_len = np.maximum(1, np.rint(_lognormal(rng, w.document_tokens, w.tokens_sigma, n_doc))).astype(np.int64)
    sig = w.tokens_sigma
    ids = _Ids()
    next_key = n_sys + n_doc  # keys below are the shared system prompts and documents
    state: dict[int, _Session] = {}  # per session: its segments, its full block ids
    prompts: list[list[int]] = []
    inputs: list[int] = []
    lookups = 0
    outputs = [0] * len(sess_of)  # per request
    last_of: dict[int, int] = {}  # per session: its latest request
    for r, (s, k) in enumerate(zip(sess_of.tolist(), turn_of.tolist())):
        kind, _ = sessions[s]
        st = state.get(s)
        if st is None:
            segs: list[Segment] = []
            if w.system_prompt_tokens:
                segs.append((int(rng.choice(n_sys, p=sys_p)), w.system_prompt_tokens))
            if rng.random() < w.document_share:
                d = int(rng.choice(n_doc, p=doc_p))
                segs.append((n_sys + d, int(doc_len[d])))
            st = state[s] = {"segs": segs, "full": [], "last": -1}
        else:  # the previous reply joins the context
            st["segs"].append((next_key, max(1, int(round(_lognormal(rng, w.output_tokens_mean, sig))))))
            outputs[last_of[s]] = st["segs"][-1][1]
            next_key += 1
        last_of[s] = r
        mean_new = w.agent_step_tokens if kind == "agent" and k > 0 else w.user_tokens_mean
        st["segs"].append((next_key, max(1, int(round(_lognormal(rng, mean_new, sig))))))
        next_key += 1
        segs = st["segs"]
        starts = [0]
        for _, length in segs[:-1]:
            starts.append(starts[-1] + length)
        total = starts[-1] + segs[-1][1]
        lookups += -(-total // block_tokens)
        if max_lookups is not None and lookups > max_lookups:
            raise ScenarioError(f"too large to simulate: the generator's first {r + 1:,} of {len(sess_of):,} requests "
                                f"already hold {lookups:,} block lookups (limit {max_lookups:,}); lower "
                                f"workload.requests or the token means, or raise workload.block_tokens",
                                field="workload.requests")
        full = st["full"]
        parent = full[-1] if full else -1
        for b in range(len(full), total // block_tokens):
            parent = ids.of(parent, _content(segs, starts, b * block_tokens, (b + 1) * block_tokens))
            full.append(parent)
        row = list(full)
        if total % block_tokens:
            row.append(ids.of(parent, _content(segs, starts, len(full) * block_tokens, total)))
        prompts.append(row)
        inputs.append(total)
    counts = np.fromiter(map(len, prompts), np.int64, len(prompts))
    offsets = np.zeros(len(prompts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    hashes = np.fromiter((h for row in prompts for h in row), np.int64, int(offsets[-1]))
    out = np.array(outputs, dtype=np.int64)
    last = out == 0
    rng2 = np.random.default_rng([w.seed, 1])
    out[last] = np.maximum(1, np.rint(_lognormal(rng2, w.output_tokens_mean, sig, int(last.sum()))))
    return hashes, offsets, np.array(inputs, dtype=np.int64), times.astype(np.float64), out
