"""How long one iteration of the serving engine takes: a roofline over the tensor-parallel group.

- Prefill is compute-bound. Its FLOPs for a job that computes n new tokens on top of h
  history tokens already in HBM (loaded, or none after a miss):
    matmuls:   MATMUL_FLOPS_PER_PARAM · params · n  (= 2 · params per token: one multiply-add
               per weight; the weights are the model's parameters)
    attention: per layer, the token at context position t (it sees t keys, itself included)
               costs QK^T, a q·k dot product of head_dim per key and query head, 2·head_dim·t
               FLOPs per head, so 2·d_model·t with d_model = query heads × head_dim; and AV the
               same again: ATTN_FLOPS_PER_DMODEL · d_model · t = 4 · d_model · t per layer.
               Causal masking: the new tokens sit at positions h+1 .. h+n, so
                 attention FLOPs = 4 · layers · d_model · (n·h + n(n+1)/2),
               about half of 4·layers·d_model·n·(h+n) a full (unmasked) square would cost.
  both at `gpus · peak · MFU`. Softmax, norms and the rest are left out (O(d_model) per
  token: far below either term). MFU is calibrated on the AttentionStore paper's one measured figure (§2.4:
  a 2,048-token LLaMA-65B prefill on 4×A100 takes ≈ 360 ms), counting both terms, see
  `calibrated_mfu`. A consequence: recomputing h history tokens costs exactly
  prefill(h, 0) = prefill(h + n, 0) − prefill(n, h), the prefill of those tokens alone.
- A decode iteration emits one token for each of the n running jobs and costs the larger of
  compute (n tokens · 2 · params FLOPs) and memory: reading the weights once plus every running
  job's KV, (weight bytes + Σ context · KV bytes per token) / (gpus · HBM bandwidth · efficiency).
  ASSUMPTION (ours): decode's attention FLOPs (4·layers·d_model per context token, about one
  FLOP per byte of KV read for multi-head attention, two orders below the A100's ridge point)
  are left out of the compute side; decode attention is paid through its KV reads.

Every running job's context grows by one token per decode iteration, so k iterations of an
unchanged batch cost a closed-form sum: the engine advances many identical iterations at once
instead of stepping each. Times are float ns; callers round at event boundaries.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:  # token counts may be arrays (the formulas hold element by element); numpy is not needed here
    import numpy as np

MATMUL_FLOPS_PER_PARAM = 2   # a multiply-add per weight, per token
ATTN_FLOPS_PER_DMODEL = 4    # per layer, per (query token, key) pair: QK^T 2·d_model + AV 2·d_model
FP16_BYTES = 2               # weights read per parameter by a decode iteration


@overload
def prefill_flops(params: float, tokens: float, history: float = 0, layers: int = 0, d_model: int = 0) -> float: ...
@overload
def prefill_flops(params: float, tokens: np.ndarray, history: np.ndarray | float = 0, layers: int = 0,
                  d_model: int = 0) -> np.ndarray: ...
@overload
def prefill_flops(params: float, tokens: float, history: np.ndarray, layers: int = 0, d_model: int = 0
                  ) -> np.ndarray: ...
def prefill_flops(params: float, tokens: float | np.ndarray, history: float | np.ndarray = 0, layers: int = 0,
                  d_model: int = 0) -> float | np.ndarray:
    """FLOPs of prefilling `tokens` new tokens after `history` cached ones (arrays work too)."""
    attn = ATTN_FLOPS_PER_DMODEL * layers * d_model * (tokens * history + tokens * (tokens + 1) / 2)
    return MATMUL_FLOPS_PER_PARAM * params * tokens + attn


def calibrated_mfu(params: float, tokens: int, seconds: float, gpus: int, peak_flops: float,
                   layers: int = 0, d_model: int = 0) -> float:
    """Model FLOP utilisation implied by one measured prefill of `tokens` from scratch."""
    return prefill_flops(params, tokens, 0, layers, d_model) / (seconds * gpus * peak_flops)


def _iterations_ns(pieces: tuple[float, float, float, float], k: int) -> float:
    """k >= 1 decode iterations from Roofline._pieces' (C, M0, g, i*): iteration i costs
    max(C, M0 + g·i)."""
    C, M0, g, i_star = pieces
    if k <= i_star:
        return C * k
    a = int(i_star)
    # sum_{i=a}^{k-1} (M0 + g·i)
    return C * a + (k - a) * M0 + g * (k * (k - 1) - a * (a - 1)) / 2


class Roofline:
    def __init__(self, params: float, gpus: int, peak_tflops: float, mfu: float, hbm_tbps: float,
                 hbm_efficiency: float, kv_bytes_per_token: int, layers: int = 0, d_model: int = 0) -> None:
        flop_per_ns = gpus * peak_tflops * 1e12 * mfu / 1e9
        self.prefill_ns_per_token = MATMUL_FLOPS_PER_PARAM * params / flop_per_ns  # the matmuls
        # The attention term: ns per (new token, context position) pair, before causal halving.
        self.attn_ns_per_pair = ATTN_FLOPS_PER_DMODEL * layers * d_model / flop_per_ns
        bytes_per_ns = gpus * hbm_tbps * 1e12 * hbm_efficiency / 1e9
        self.weights_ns = FP16_BYTES * params / bytes_per_ns       # FP16 weights read once per iteration
        self.kv_ns_per_token = kv_bytes_per_token / bytes_per_ns

    @overload
    def prefill_ns(self, tokens: float, history: float = 0) -> float: ...
    @overload
    def prefill_ns(self, tokens: np.ndarray, history: np.ndarray | float = 0) -> np.ndarray: ...
    @overload
    def prefill_ns(self, tokens: float, history: np.ndarray) -> np.ndarray: ...
    def prefill_ns(self, tokens: float | np.ndarray, history: float | np.ndarray = 0) -> float | np.ndarray:
        """Prefill of `tokens` new tokens after `history` cached ones (causal; arrays work too)."""
        return tokens * self.prefill_ns_per_token + \
            self.attn_ns_per_pair * (tokens * history + tokens * (tokens + 1) / 2)

    def decode_step_ns(self, n: int, ctx: int) -> float:
        """One decode iteration of n jobs holding `ctx` context tokens in all."""
        return max(n * self.prefill_ns_per_token, self.weights_ns + ctx * self.kv_ns_per_token)

    def _pieces(self, n: int, ctx: int) -> tuple[float, float, float, float]:
        """Iteration i costs max(C, M0 + g·i): (C, M0, g, i*), i* = iterations that are compute-bound."""
        C = n * self.prefill_ns_per_token
        M0 = self.weights_ns + ctx * self.kv_ns_per_token
        g = n * self.kv_ns_per_token
        i_star: float  # an int, or inf: compute-bound for ever (no KV to read)
        if M0 >= C:
            i_star = 0
        elif g > 0:
            i_star = math.ceil((C - M0) / g)
        else:
            i_star = math.inf
        return C, M0, g, i_star

    def decode_ns(self, n: int, ctx: int, k: int) -> float:
        """k decode iterations of n jobs starting with `ctx` context tokens in all."""
        if k <= 0:
            return 0.0
        return _iterations_ns(self._pieces(n, ctx), k)

    def decode_steps_to(self, n: int, ctx: int, x: float) -> int:
        """The fewest iterations (≥ 1) whose total time is ≥ x: the iteration in progress at
        elapsed time x ends after this many."""
        if x <= 0:
            return 1
        pieces = self._pieces(n, ctx)
        C, M0, g, i_star = pieces
        if C * min(i_star, 1e18) >= x:
            k = max(1, math.ceil(x / C))
        else:
            a = int(i_star)
            r = x - C * a
            M = M0 + g * a
            # smallest m with m·M + g·m(m−1)/2 >= r
            if g > 0:
                b = M - g / 2
                m = (-b + math.sqrt(b * b + 2 * g * r)) / g
            else:
                m = r / M
            k = a + max(1, math.ceil(m))
        # Float round-off: settle on the exact boundary.
        while k > 1 and _iterations_ns(pieces, k - 1) >= x:
            k -= 1
        while _iterations_ns(pieces, k) < x:
            k += 1
        return k
