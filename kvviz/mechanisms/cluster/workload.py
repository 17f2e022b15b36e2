"""The requests a cluster run serves, as cacheable block ids per request (flat, cut by offsets),
each block's tokens, and each request's prompt, reply and arrival.

- A Mooncake, Qwen/Bailian or plain trace (kvviz.requests.prompts): its own blocks; the last,
  partial block of a prompt is neither cached nor looked up (vLLM's rule, and the prefix
  cache's default `cache.partial_block = false`, so one instance gives its numbers).
- A RAGPulse trace (kvviz.requests.ragpulse): one block per chunk, of the chunk's tokens, every
  chunk cacheable (a chunk is a whole unit; the template tokens outside chunks are computed).
- llm-d's shared-prefix generator (kvviz.requests.shared_prefix): its blocks, the last partial
  one dropped as for a trace.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...errors import ScenarioError
from ...requests import prompts, ragpulse
from ...requests.jsonl import first_record
from ...requests.prompts import PromptRequests
from ...requests.shared_prefix import SharedPrefixSpec, generate
from ...serving.pool_fit import refuse_unservable

if TYPE_CHECKING:
    from .model import ClusterScenario


@dataclass(frozen=True, eq=False)
class Work:
    ids: np.ndarray            # int64, cacheable block ids of every request, one after another
    offsets: np.ndarray        # int64, len + 1
    tokens: np.ndarray         # int64, tokens of each block (per position)
    input_tokens: np.ndarray   # int64 per request
    output_tokens: np.ndarray  # int64 per request (>= 1)
    times_s: np.ndarray        # float64 per request, in time order
    block_tokens: int          # the nominal block (RAGPulse: the largest chunk, 512)
    source: str

    def __len__(self) -> int:
        return len(self.input_tokens)


def _full_blocks(got: PromptRequests) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ids, offsets, tokens) keeping each request's full blocks only."""
    counts = got.hash_counts
    full = np.minimum(got.input_tokens // got.block_tokens, counts)
    start = np.repeat(got.hash_offsets[:-1], counts)
    pos = np.arange(len(got.hashes)) - start
    keep = pos < np.repeat(full, counts)
    offsets = np.zeros(len(got) + 1, dtype=np.int64)
    np.cumsum(full, out=offsets[1:])
    ids = got.hashes[keep]
    return ids, offsets, np.full(len(ids), got.block_tokens, dtype=np.int64)


def load(sc: ClusterScenario) -> Work:
    w = sc.workload
    if w.trace_file:
        path = Path(w.trace_file)
        got: PromptRequests | None
        if ragpulse.looks_like(first_record(path)):
            rag = ragpulse.read(path)
            ids, offsets, tokens = rag.hashes, rag.hash_offsets, rag.hash_tokens
            got = rag
        else:
            got = prompts.read(path)
            if got is None:
                raise ScenarioError("not a Mooncake, Qwen/Bailian, plain or RAGPulse request trace with block "
                                    "hashes", str(path), "line 1")
            ids, offsets, tokens = _full_blocks(got)
        source = f"{path.name} ({got.format}: {len(got):,} requests)"
    else:
        spec = SharedPrefixSpec(w.groups, w.prompts_per_group, w.system_prompt_tokens, w.question_tokens,
                                w.generated_output_tokens, tuple((r, d) for r, d in w.stages), w.block_tokens,
                                w.multi_turn, w.seed)
        got = generate(spec)
        ids, offsets, tokens = _full_blocks(got)
        source = got.source
    n = len(got) if not w.max_requests else min(w.max_requests, len(got))
    if n == 0:
        raise ScenarioError("the workload has no request", field="workload.trace_file" if w.trace_file
                            else "workload.stages")
    out = got.output_tokens[:n] if not w.output_tokens else np.full(n, w.output_tokens, dtype=np.int64)
    _check_every_request_fits(sc, got.input_tokens[:n], out, source)
    end = int(offsets[n])
    return Work(np.ascontiguousarray(ids[:end]), offsets[:n + 1].copy(), np.ascontiguousarray(tokens[:end]),
                got.input_tokens[:n].copy(), np.maximum(out, 1).astype(np.int64), got.times_s[:n].copy(),
                got.block_tokens, source)


def _check_every_request_fits(sc: ClusterScenario, inputs: np.ndarray, outputs: np.ndarray, source: str) -> None:
    """Refuse a workload with a request no instance's running pool can ever hold (the same pool
    on every instance; kvviz.serving.pool_fit): it waited forever, and its TTFT came out negative.
    A decode instance of a P/D split holds the whole context, prompt and reply, as an instance
    that does both."""
    ins = sc.instance
    kv = sc.model.kv_bytes_per_token
    pool: str | None
    if ins.hbm_pool == "shared":
        cap, pool, field = ins.hbm_cache_tokens, None, "instance.hbm_cache_tokens"
    else:
        cap, pool, field = int(ins.running_kv_gb * 1e9) // kv, f"{ins.running_kv_gb:g} GB", "instance.running_kv_gb"
    refuse_unservable(inputs, outputs, cap, kv, source, pool, field)
