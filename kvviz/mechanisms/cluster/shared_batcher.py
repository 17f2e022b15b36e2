"""The serving core's batcher over a shared HBM pool (`instance.hbm_pool = shared`): a waiting
request's need is its context less the tokens of its blocks a running request on the instance
already holds (vLLM allocates only the blocks it lacks: shared blocks are reference-counted).
Everything else is the serving core's batcher (kvviz/serving/batching.py); these two methods
are its `arrive` and `_admit` with that need (the instance's cache, cache.py, keeps the
reference counts and gives the credited tokens back when they stop being shared)."""
from __future__ import annotations

from ...serving.batching import DECODE, IDLE, Batcher


class SharedPoolBatcher(Batcher):
    def __init__(self, run, cfg, store):
        super().__init__(run, cfg)
        self.pool = store  # the instance's cache: held_tokens(j), credited

    def _need_now(self, j: int) -> int:
        if self.resume[j]:
            return self.resume[j]
        return self.keep[j] + self.inn[j] - self.pool.held_tokens(j)

    def arrive(self, j: int):
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
