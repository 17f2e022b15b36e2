"""A run's counts as metrics: rates over the whole workload, and per tier (by name).

Rates: token_hit_rate = hit tokens / prompt tokens (the prefill tokens saved, as a share);
block_hit_ratio = hit blocks / cacheable blocks looked up; request_hit_rate = requests with at
least one hit block. Bytes count whole blocks (a partial block occupies a whole one, as vLLM
allocates): bytes_read = hit blocks served from the tier, bytes_written = blocks written into it.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .engine import Outcome
from .model import Tier
from .workload import Blocks


def _share(a: float, b: float) -> float:
    return a / b if b else 0.0


def run_metrics(out: Outcome, names: Sequence[str], blocks: Blocks, block_bytes: int, belady_rate: float) -> dict[str, Any]:
    tokens, lookups, R = int(blocks.input_tokens.sum()), len(blocks.ids), len(blocks)
    hit_tokens, hit_blocks = sum(out.hit_tokens), sum(out.hit_blocks)
    rate = _share(hit_tokens, tokens)
    tiers: dict[str, dict[str, float]] = {}
    for k, name in enumerate(names):
        tiers[name] = {
            "token_hit_rate": _share(out.hit_tokens[k], tokens),
            "request_hit_rate": _share(out.hit_requests[k], R),
            "hit_share": _share(out.hit_tokens[k], hit_tokens),  # of all hit tokens, those served here
            "hit_tokens": out.hit_tokens[k],
            "hit_blocks": out.hit_blocks[k],
            "bytes_read": out.hit_blocks[k] * block_bytes,
            "bytes_written": out.written[k] * block_bytes,
            "blocks_written": out.written[k],
            "blocks_demoted": out.demoted[k],
            "evictions": out.evicted[k],
            "peak_blocks": out.peak[k],
        }
    return {
        "token_hit_rate": rate,
        "block_hit_ratio": _share(hit_blocks, lookups),
        "request_hit_rate": _share(int((out.hits > 0).sum()), R),
        "prefill_tokens_saved": hit_tokens,
        "belady_gap": belady_rate - rate,
        "tiers": tiers,
    }


def tier_setup(tiers: Sequence[Tier], caps: list[int], block_bytes: int) -> dict[str, dict[str, float | str]]:
    """Each tier as the run used it: capacity in blocks and GB, and the figures the timed engine
    will read (latency, bandwidth), so a result names them."""
    return {t.name: {"capacity_blocks": c, "capacity_gb": c * block_bytes / 1e9, "eviction": t.eviction,
                     "read_latency_us": t.read_latency_us, "write_latency_us": t.write_latency_us,
                     "read_gbps": t.read_gbps, "write_gbps": t.write_gbps}
            for t, c in zip(tiers, caps)}
