"""Mooncake, Qwen/Bailian and plain request traces as object requests for a cache replay: each hash id
of a request's prompt (512-token blocks in Mooncake, 16 in Qwen/Bailian) is one request for an
object of one block's KV bytes, in prompt order, at the request's timestamp. Every block counts
full: the partial last block of a prompt re-hashes when it fills, so it is a different object
anyway."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ScenarioError

if TYPE_CHECKING:
    from .objects import Requests

# KV bytes per token when a JSONL trace is replayed as blocks: Llama-2-70B (80 layers, 8 KV heads
# of 128 dims, K and V, FP16), as in the attention_store presets.
DEFAULT_KV_BYTES_PER_TOKEN = 2 * 80 * 8 * 128 * 2


def read_blocks(path: str | Path, kv_bytes_per_token: int = DEFAULT_KV_BYTES_PER_TOKEN,
                expect: str | None = None) -> Requests:
    import numpy as np  # here: the CLI's parser reads DEFAULT_KV_BYTES_PER_TOKEN without numpy

    from . import prompts
    from .common import first_request_ids
    from .objects import Requests
    path = Path(path)
    if kv_bytes_per_token < 1:
        raise ScenarioError(f"KV bytes per token must be >= 1 (got {kv_bytes_per_token})", "--kv-bytes-per-token")
    got = prompts.read(path)
    if got is None or (expect and got.format != expect):
        what = f"a {expect} request trace" if expect else "a Mooncake, Qwen/Bailian or plain request trace"
        raise ScenarioError(f"not {what}: the first record has neither hash_ids with timestamp "
                            f"(Mooncake) nor chat_id (Qwen/Bailian) nor time (plain)", str(path), "line 1")
    if not len(got.hashes):  # libCacheSim fails on a trace of no request ("Unable to allocate 0 bytes")
        raise ScenarioError("every request's hash_ids is empty: no block to replay", str(path))
    times = np.repeat(got.times_s, got.hash_counts)  # in time order: prompts.read checks
    ids = first_request_ids(got.hashes)
    tokens = got.block_tokens
    sizes = np.full(len(ids), tokens * kv_bytes_per_token, dtype=np.int64)
    return Requests(ids.astype(np.int64), sizes, times, f"{path} ({got.format}: {len(got):,} requests as "
                                                         f"{len(ids):,} {tokens}-token blocks)")
