"""The requests a run replays, as cacheable block ids: from a Mooncake or Qwen/Bailian trace
(read by kvviz.requests.prompts) or from the generator.

`Blocks` holds every request's block ids in one int64 array cut by offsets (request i's are
`ids[offsets[i]:offsets[i + 1]]`), in prompt order, after the cache's view of them: the last,
partial block dropped unless `cache.partial_block`, and the trace's blocks grouped when
`workload.block_tokens` is a multiple of the trace's own.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ...errors import ScenarioError
from ...requests.formats import read_workload
from .generator import generated
from .model import PrefixCacheScenario, Workload

GENERATOR_BLOCK_TOKENS = 16  # vLLM's default block size


@dataclass(frozen=True, eq=False)
class Blocks:
    ids: npt.NDArray[np.int64]           # every request's cacheable block ids one after another
    offsets: npt.NDArray[np.int64]       # len(self) + 1
    input_tokens: npt.NDArray[np.int64]  # per request
    times_s: npt.NDArray[np.float64]     # arrival per request
    block_tokens: int
    source: str              # what the requests came from, one line
    output_tokens: npt.NDArray[np.int64] | None = None  # per request (the timed engine's decode)

    def __len__(self) -> int:
        return len(self.input_tokens)

    @property
    def counts(self) -> npt.NDArray[np.int64]:
        return np.diff(self.offsets)

    def block_token_counts(self) -> npt.NDArray[np.int64]:
        """Tokens of each block, per position: block_tokens, less for a partial last block."""
        start = np.repeat(self.offsets[:-1], self.counts)
        pos = np.arange(len(self.ids)) - start
        rest = np.repeat(self.input_tokens, self.counts) - pos * self.block_tokens
        return np.clip(rest, 0, self.block_tokens)


def select(hashes: npt.NDArray[np.int64], offsets: npt.NDArray[np.int64], input_tokens: npt.NDArray[np.int64],
           own_tokens: int, group: int, partial: bool) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The cacheable ids of each request (flat ids, offsets): blocks of `group` × `own_tokens`
    tokens, each named by the last id of its group; the partial last block kept only if `partial`."""
    counts = np.diff(offsets)
    if not len(hashes):
        return hashes.copy(), np.zeros_like(offsets)
    start = np.repeat(offsets[:-1], counts)
    pos = np.arange(len(hashes)) - start
    c = np.repeat(counts, counts)
    full = np.minimum(input_tokens // (group * own_tokens), counts // group)
    keep = (pos % group == group - 1) & (pos < np.repeat(full * group, counts))
    if partial:
        keep |= (pos == c - 1) & (c > np.repeat(full * group, counts))
    kept = np.concatenate(([0], np.cumsum(keep, dtype=np.int64)))
    return hashes[keep], kept[offsets]


def from_trace(w: Workload, partial: bool) -> Blocks:
    path = Path(w.trace_file)
    got = read_workload(path)  # a registered format that claims it, else by content
    if got is None:
        raise ScenarioError("not a Mooncake, Qwen/Bailian or plain request trace: the first record has neither "
                            "hash_ids with timestamp (Mooncake), chat_id (Qwen/Bailian) nor time and block_tokens "
                            "(plain), nor is it a CSV whose header names hash_ids", str(path), "line 1")
    n = len(got) if not w.max_requests else min(w.max_requests, len(got))
    t = got.times_s[:n]
    back = np.flatnonzero(t[1:] < t[:-1])
    if len(back):
        i = int(back[0]) + 1
        raise ScenarioError(f"timestamp goes backwards ({float(t[i]):g} s after {float(t[i - 1]):g} s); requests "
                            f"must be in time order", str(path), f"line {got.lines[i]}")
    own = got.block_tokens
    tokens = w.block_tokens or own
    if tokens % own:
        raise ScenarioError(f"{tokens} is not a multiple of the trace's own {own}-token blocks ({got.format})",
                            field="workload.block_tokens")
    offsets = got.hash_offsets[:n + 1]
    ids, new_offsets = select(got.hashes[:offsets[-1]], offsets, got.input_tokens[:n], own, tokens // own, partial)
    return Blocks(ids, new_offsets, got.input_tokens[:n].copy(), t.copy(), tokens,
                  f"{path.name} ({got.format}: {n:,} requests, {tokens}-token blocks)",
                  got.output_tokens[:n].copy())


def load(sc: PrefixCacheScenario, max_lookups: int | None = None) -> Blocks:
    w, partial = sc.workload, sc.cache.partial_block
    if w.trace_file:
        return from_trace(w, partial)
    tokens = w.block_tokens or GENERATOR_BLOCK_TOKENS
    hashes, offsets, inputs, times, outputs = generated(w, tokens, max_lookups)
    ids, new_offsets = select(hashes, offsets, inputs, tokens, 1, partial)
    return Blocks(ids, new_offsets, inputs, times, tokens, f"generator (seed {w.seed}: {len(inputs):,} requests, "
                                                           f"{tokens}-token blocks)", outputs)
