"""The serving core's batcher as two kinds of instance need it.

SharedPoolBatcher, over a shared HBM pool (`instance.hbm_pool = shared`): a waiting
request's need is its context less the tokens of its blocks a running request on the instance
already holds (vLLM allocates only the blocks it lacks: shared blocks are reference-counted).
Everything else is the serving core's batcher (kvviz/serving/batching.py); these two methods
are its `arrive` and `_admit` with that need (the instance's cache, cache.py, keeps the
reference counts and gives the credited tokens back when they stop being shared).

DecodeBatcher, a decode instance's (P/D split): below."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...serving.batching import DECODE, IDLE, PREFILL, BatchConfig, Batcher, BatchRun

if TYPE_CHECKING:
    from .cache import InstanceCache


class SharedPoolBatcher(Batcher):
    def __init__(self, run: BatchRun, cfg: BatchConfig, store: InstanceCache) -> None:
        super().__init__(run, cfg)
        self.pool = store  # the instance's cache: held_tokens(j), credited

    def _need_now(self, j: int) -> int:
        if self.resume[j]:
            return self.resume[j]
        return self.keep[j] + self.inn[j] - self.pool.held_tokens(j)

    def arrive(self, j: int) -> None:
        waiting = self.waiting
        waiting.append(j)
        if self.state == IDLE:
            self._iterate()
        elif self.state == DECODE and len(self.batch) < self.max_batch:
            if self.tok_run + self._need_now(waiting[0]) + self.n_dec + 1 <= self.cap_tok:
                assert self.seg is not None  # decoding: end the identical iterations at the next boundary
                T_s, n, ctx, k, _ = self.seg
                k_a = self.gpu.decode_steps_to(n, ctx, self.loop.now - T_s)
                if k_a < k:
                    self._schedule_segment(k_a)

    def _admit(self) -> list[int]:
        out: list[int] = []
        waiting, batch = self.waiting, self.batch
        if not waiting or len(batch) >= self.max_batch:
            return out
        room = self.cap_tok - self.n_dec - 1
        credited = self.pool.credited
        while waiting and len(batch) < self.max_batch:
            j = waiting[0]
            full = self.resume[j] or self.keep[j] + self.inn[j]
            credit = 0 if self.resume[j] else self.pool.held_tokens(j)
            if self.tok_run + full - credit > room:
                break
            waiting.popleft()
            batch[j] = None
            self.tok_run += full - credit
            if credit:
                credited[j] = credit
            out.append(j)
        return out


class DecodeBatcher(Batcher):
    """A decode instance's batcher (P/D split): a request joins with its KV already in HBM and
    nothing to compute (prefill of 0 new tokens = 0 ns), so its "prefill" iteration ends where
    it starts; it is ended at once instead of through an event of no length (the serving core
    would push one at the same time). A request preempted here recomputes, as the core does."""

    def _prefill(self, jobs: list[int], S: int) -> None:
        resume, inn = self.resume, self.inn
        for j in jobs:
            if resume[j] or inn[j]:
                super()._prefill(jobs, S)
                return
        first_admit, outcome, admit = self.first_admit, self.outcome, self.store.admit
        for j in jobs:
            first_admit[j] = S
            outcome[j] = admit(j, self.hbm_hit[j])[0]
        self.state, self.seg = PREFILL, None
        if len(self.batch) > self.max_seen:
            self.max_seen = len(self.batch)
        if self.rec:
            self.run.gpu_state(S, len(self.batch))
            self.run.prefill_span(S, S, jobs, None)
        self._prefill_done(jobs, S, [0.0] * len(jobs), 0)
