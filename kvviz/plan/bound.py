"""A lower bound on every request's TTFT at every grid point, from one pass of stack distances:
what prunes the plan's grid before any timed run.

A request's first token comes when its prefill iteration ends, so its TTFT is at least that
iteration's length, which is at least the larger of (a) the roofline's prefill of the tokens it
computes, with no history (history only adds attention FLOPs: kvviz/serving/roofline.py) and
(b) the time its links take to load the hit blocks below HBM (each tier's link at its read
bandwidth, all links at once, no latency, nothing else booked on them). And the queue: the GPU
runs one iteration at a time, admits first come first served (kvviz/serving/batching.py, no
overtaking), and a prefill iteration computes at least the sum of its jobs' prefills, so by the
end of request j's prefill the GPU has computed, since any earlier request i arrived, at least
the tokens i..j must compute: first token of j >= max over i <= j of (arrival_i + Σ_{k=i..j}
w_k), w_k the roofline of k's computed tokens after the longest prefix that can hit, attention
over that history included (a cumulative maximum). Latencies, decode
iterations, preemptions and load waits are left out: each only adds.

What the request must compute or load comes from where its prompt blocks can be:
- a block never asked for before (stack distance -1) is computed;
- ASSUMPTION (`lru` on every tier, copy promotion, write-back, admission `always`): the tiers
  together hold no block that more than C_total other distinct blocks were asked for since its
  last use (C_total = every tier's capacity in blocks): its LRU stack distance > C_total means
  computed. Otherwise (another policy or rule) only cold blocks count as computed;
- the hit is a prefix: from the first block that must be computed, the rest is computed too;
- at most HBM's capacity of the hit is in HBM (free); the rest is loaded, at most a tier's
  capacity from each tier, or recomputed, whichever ends sooner (any split).
So the request's bound is the least T with roofline(computed + recomputed tokens) <= T and the
loads done by T. A percentile of the bounds bounds the percentile of the TTFTs (each TTFT is at
least its bound). tests/test_plan.py holds the bound under the timed run at every point of a grid.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..replay.kernels import previous_use_array
from ..replay.stack_distance import byte_stack_distances
from ..serving.roofline import Roofline

if TYPE_CHECKING:
    from ..mechanisms.prefix_cache.model import PrefixCacheScenario
    from ..mechanisms.prefix_cache.workload import Blocks

BOUNDED: dict[str, float | None] = {"ttft_p99_ms": 99.0, "ttft_p50_ms": 50.0, "mean_ttft_ms": None}
STACK_RULES = {"promote": "copy", "write_policy": "back", "admission": "always"}
COLD = np.iinfo(np.int64).max // 2  # a cold block's distance: beyond any capacity
ITERATIONS = 60  # bisection steps on T: ~1e-18 of the bracket, far below a ns


class TTFTBound:
    def __init__(self, blocks: Blocks) -> None:
        self.blocks = blocks
        ids = np.asarray(blocks.ids, dtype=np.int64)
        prev = previous_use_array(ids)
        dist = byte_stack_distances(ids, np.ones(len(ids), dtype=np.int64), prev)
        self.cold = dist < 0
        req = np.repeat(np.arange(len(blocks)), blocks.counts)
        # the largest distance over each request's blocks up to here (cold: infinite): the prefix
        # that can hit at total capacity C is the blocks whose running maximum is <= C
        d = np.where(self.cold, COLD, dist)
        self.run_max = np.empty_like(d)
        for j in range(len(blocks)):
            a, b = blocks.offsets[j], blocks.offsets[j + 1]
            if b > a:
                self.run_max[a:b] = np.maximum.accumulate(d[a:b])
        self.req = req
        self.tok = blocks.block_token_counts().astype(np.float64)

    def _prefix(self, limit: int | None) -> tuple[np.ndarray, np.ndarray]:
        """Per request, (blocks, tokens) of the longest prefix that can hit: up to its first block
        farther than `limit` in the stack, or (None) its first cold block."""
        ok = self.run_max <= limit if limit is not None else self.run_max < COLD
        n = len(self.blocks)
        blocks = np.bincount(self.req[ok], minlength=n).astype(np.float64)
        tokens = np.bincount(self.req[ok], weights=self.tok[ok], minlength=n)
        return blocks, tokens

    def request_bounds_ms(self, sc: PrefixCacheScenario) -> np.ndarray:
        """Each request's TTFT lower bound (ms) in scenario `sc` (a grid point)."""
        b = self.blocks
        bb = b.block_tokens * sc.model.kv_bytes_per_token
        caps = [t.blocks(bb) for t in sc.tiers]
        stack = all(t.eviction in ("policy", "lru") for t in sc.tiers) and sc.policies == ["lru"] and \
            all(getattr(sc.cache, k) == v for k, v in STACK_RULES.items()) and not sc.store.prefetch
        hit_blocks, hit_tokens = self._prefix(sum(caps) if stack else None)
        computed = b.input_tokens.astype(np.float64) - hit_tokens
        below: np.ndarray = np.maximum(0.0, hit_blocks - caps[0])             # hit blocks that cannot be in HBM
        per_block_tokens: np.ndarray = np.where(hit_blocks > 0, hit_tokens / np.maximum(hit_blocks, 1), 0.0)
        m, s = sc.model, sc.serving
        gpu = Roofline(m.params_b * 1e9, s.gpus, s.gpu_peak_tflops, s.mfu, s.hbm_tbps, s.hbm_efficiency,
                       m.kv_bytes_per_token, m.layers, m.d_model)
        # blocks a tier's link moves per ns, and the most it can hold
        rates = np.array([t.read_gbps / bb for t in sc.tiers[1:]])   # GB/s = bytes/ns
        held = np.array(caps[1:], dtype=np.float64)

        def loaded_by(T: np.ndarray) -> np.ndarray:  # the most blocks all links can bring by T (ns), per request
            return np.minimum(held[None, :], T[:, None] * rates[None, :]).sum(axis=1) if len(rates) else 0 * T

        def ok(T: np.ndarray) -> np.ndarray:
            rest: np.ndarray = np.maximum(0.0, below - loaded_by(T))
            done: np.ndarray = gpu.prefill_ns(computed + rest * per_block_tokens, 0) <= T
            return done

        # the queue: w_k, less a ns for the engine's rounding of each iteration's end. A request
        # that keeps K <= H of its prompt (H: the most that can hit) computes prefill(input - K
        # after K) = P(input) - P(K) >= P(input) - P(H) = prefill(input - H after H), P the
        # roofline's whole prefill (increasing): the attention over its history counts too
        w = np.maximum(0.0, gpu.prefill_ns(computed, hit_tokens) - 1.0)
        arrival = b.times_s * 1e9
        done = np.cumsum(w)
        first_token = done + np.maximum.accumulate(arrival - (done - w))
        queued = first_token - arrival
        lo = np.zeros(len(b))
        hi = gpu.prefill_ns(computed + below * per_block_tokens, 0) + 1.0  # recompute all: always done
        for _ in range(ITERATIONS):
            mid = (lo + hi) / 2
            good = ok(mid)
            hi = np.where(good, mid, hi)
            lo = np.where(good, lo, mid)
        return np.maximum(lo, queued) / 1e6  # lo: the largest T known too short, below the least that works

    def metric_bound(self, sc: PrefixCacheScenario, metric: str) -> float | None:
        """A lower bound on `metric` (the last path segment, one of BOUNDED) at `sc`, or None."""
        name = metric.rsplit(".", 1)[-1]
        if name not in BOUNDED or not len(self.blocks):
            return None
        x = self.request_bounds_ms(sc)
        q = BOUNDED[name]
        return float(x.mean()) if q is None else float(np.percentile(x, q))
