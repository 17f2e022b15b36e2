"""How long one iteration of the serving engine takes: a roofline over the tensor-parallel group.

- Prefill is compute-bound: 2 · params FLOPs per token (the matrix multiplies; the attention
  term, quadratic in context, is left out: at a 2K window it is a few per cent of the FLOPs),
  at `gpus · peak · MFU`. MFU is calibrated on the paper's one measured figure (§2.4: a
  2,048-token LLaMA-65B prefill on 4×A100 takes ≈ 360 ms), see `calibrated_mfu`.
- A decode iteration emits one token for each of the n running jobs and costs the larger of
  compute (n tokens · 2 · params FLOPs) and memory: reading the weights once plus every running
  job's KV, (weight bytes + Σ context · KV bytes per token) / (gpus · HBM bandwidth · efficiency).

Every running job's context grows by one token per decode iteration, so k iterations of an
unchanged batch cost a closed-form sum: the engine advances many identical iterations at once
instead of stepping each. Times are float ns; callers round at event boundaries.
"""
from __future__ import annotations

import math


def calibrated_mfu(params: float, tokens: int, seconds: float, gpus: int, peak_flops: float) -> float:
    """Model FLOP utilisation implied by one measured prefill: 2·params·tokens FLOPs in `seconds`."""
    return 2 * params * tokens / (seconds * gpus * peak_flops)


class Roofline:
    def __init__(self, params: float, gpus: int, peak_tflops: float, mfu: float, hbm_tbps: float,
                 hbm_efficiency: float, kv_bytes_per_token: int):
        flop_per_ns = gpus * peak_tflops * 1e12 * mfu / 1e9
        self.prefill_ns_per_token = 2 * params / flop_per_ns
        bytes_per_ns = gpus * hbm_tbps * 1e12 * hbm_efficiency / 1e9
        self.weights_ns = 2 * params / bytes_per_ns       # FP16 weights read once per iteration
        self.kv_ns_per_token = kv_bytes_per_token / bytes_per_ns

    def prefill_ns(self, tokens: int) -> float:
        return tokens * self.prefill_ns_per_token

    def decode_step_ns(self, n: int, ctx: int) -> float:
        """One decode iteration of n jobs holding `ctx` context tokens in all."""
        return max(n * self.prefill_ns_per_token, self.weights_ns + ctx * self.kv_ns_per_token)

    def _pieces(self, n: int, ctx: int):
        """Iteration i costs max(C, M0 + g·i): (C, M0, g, i*), i* = iterations that are compute-bound."""
        C = n * self.prefill_ns_per_token
        M0 = self.weights_ns + ctx * self.kv_ns_per_token
        g = n * self.kv_ns_per_token
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
        C, M0, g, i_star = self._pieces(n, ctx)
        if k <= i_star:
            return C * k
        a = int(i_star)
        # sum_{i=a}^{k-1} (M0 + g·i)
        return C * a + (k - a) * M0 + g * (k * (k - 1) - a * (a - 1)) / 2

    def decode_steps_to(self, n: int, ctx: int, x: float) -> int:
        """The fewest iterations (≥ 1) whose total time is ≥ x: the iteration in progress at
        elapsed time x ends after this many."""
        if x <= 0:
            return 1
        C, M0, g, i_star = self._pieces(n, ctx)
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
        while k > 1 and self.decode_ns(n, ctx, k - 1) >= x:
            k -= 1
        while self.decode_ns(n, ctx, k) < x:
            k += 1
        return k
