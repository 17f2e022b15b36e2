"""The serving core's batcher as the cluster's instances need it.

ClusterBatcher, every instance's: the serving core's batcher (kvviz/serving/batching.py), but a
decode segment cut short by an arrival moves its pending end earlier in place (the event loop's
`sooner`) instead of pushing a new end and leaving the old one in the heap to be popped and
skipped (the core's lazy versions): the same events run at the same times in the same order,
the superseded ones no longer counted in the loop's `processed`.

SharedPoolBatcher, over a shared HBM pool (`instance.hbm_pool = shared`): a waiting
request's need is its context less the tokens of its blocks a running request on the instance
already holds (vLLM allocates only the blocks it lacks: shared blocks are reference-counted).
Everything else is ClusterBatcher's; these two methods are the core's `arrive` and `_admit`
with that need (the instance's cache, cache.py, keeps the reference counts and gives the
credited tokens back when they stop being shared).

PrefillBatcher and DecodeBatcher, a prefill and a decode instance's (P/D split): below."""
from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from ...serving.batching import DECODE, IDLE, PREFILL, BatchConfig, Batcher, BatchRun

if TYPE_CHECKING:
    from ...engine import Entry
    from .cache import InstanceCache


class ClusterBatcher(Batcher):
    def __init__(self, run: BatchRun, cfg: BatchConfig) -> None:
        super().__init__(run, cfg)
        self.seg_entry: Entry | None = None  # the pending end of the segment in progress

    def _schedule_segment(self, k: int) -> None:
        seg = self.seg
        assert seg is not None
        cut = seg[4] != 0  # a segment already scheduled (its end pending: an arrival cuts it short), else a new one
        self.version = v = self.version + 1
        seg[3], seg[4] = k, v
        t = seg[0] + round(self.gpu.decode_ns(seg[1], seg[2], k))
        if cut:
            assert self.seg_entry is not None
            self.seg_entry = self.loop.sooner(self.seg_entry, t, 1, self._segment_end, (v,))
        else:
            self.seg_entry = self.loop.push_entry(t, 1, self._segment_end, (v,))


class SharedPoolBatcher(ClusterBatcher):
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


class PrefillBatcher(ClusterBatcher):
    """A prefill instance's batcher (P/D split): every request's reply here is its first token
    (instance.py), so it ends with its prefill iteration. The instance's cache saves nothing
    and keeps no session in HBM, so its blocks go at once: the core's _prefill_done with its
    _finish_now and _release inlined (the hot path). A request that resumes or has more to
    emit (none here) takes the core's path."""

    def __init__(self, run: BatchRun, cfg: BatchConfig) -> None:
        super().__init__(run, cfg)
        if self.saves or self.hbm_cache:
            raise ValueError("a prefill instance's batcher saves nothing and keeps no session in HBM")

    def _prefill_done(self, jobs: list[int], S: int, work: list[float], wait: int) -> None:
        resume, out = self.resume, self.out
        for j in jobs:
            if resume[j] or out[j] > 1:
                super()._prefill_done(jobs, S, work, wait)
                return
        now = self._prefill_time(jobs, S, work, wait)
        keep, inn, left, first_token, batch, end = self.keep, self.inn, self.left, self.first_token, self.batch, self.end
        job_done = self.run.job_done
        for j in jobs:
            first_token[j] = now
            left[j] = out[j] - 1  # the prefill emitted the reply's one token
            del batch[j]  # _finish_now and _release: nothing to save, the blocks go now
            end[j] = now
            self.tok_run -= keep[j] + inn[j]
            job_done(j)
        self._iterate()


class DecodeBatcher(ClusterBatcher):
    """A decode instance's batcher (P/D split): a request joins with its KV already in HBM and
    nothing to compute (prefill of 0 new tokens = 0 ns), so its "prefill" iteration ends where
    it starts; it is ended at once instead of through an event of no length (the serving core
    would push one at the same time), and the next iteration starts in the same call. A request
    preempted here recomputes, as the core does. Its store (instance.py's HeldKV) saves nothing
    and the instance keeps no session in HBM, so a finished request's blocks go at once: the
    core's _finish, _finish_now and _release, inlined at a segment's end (the hot path)."""

    def __init__(self, run: BatchRun, cfg: BatchConfig) -> None:
        super().__init__(run, cfg)
        if self.saves or self.hbm_cache or self.resumable is not None:
            raise ValueError("a decode instance's batcher saves nothing, keeps no session in HBM and has no cache")

    def _iterate(self) -> None:
        now = self.loop.now
        while self.waiting:  # the core's _admit and prefill, looped: the held KV's iteration takes no time
            jobs = self._admit()
            if not jobs:
                break
            if not self._held(jobs, now):
                self._prefill(jobs, now)  # a preempted request recomputes: the core's prefill iteration
                return
        n_dec = self.n_dec
        if not n_dec or self.cap_tok - self.tok_run < n_dec:
            super()._iterate()  # idle, or a preemption first: the core's rules (its _admit finds nothing)
            return
        # the core's _iterate from here, inlined (the hot path): a segment of identical decode
        # iterations until the first job ends or the pool would overflow
        k = self._segment_length(n_dec)
        self.state = DECODE
        self.version = v = self.version + 1
        ctx = self.ctx_dec
        self.seg = [now, n_dec, ctx, k, v]  # _schedule_segment's, of a new segment
        self.seg_entry = self.loop.push_entry(now + round(self.gpu.decode_ns(n_dec, ctx, k)), 1, self._segment_end, (v,))
        if self.rec:
            self.run.gpu_state(now, len(self.batch))

    def _held(self, jobs: list[int], S: int) -> bool:
        """The core's _prefill then _prefill_done of jobs whose KV is all held (none resumes or
        computes a token), at once: False (nothing done) if one does."""
        resume, inn = self.resume, self.inn
        for j in jobs:
            if resume[j] or inn[j]:
                return False
        first_admit, outcome, admit, hbm_hit = self.first_admit, self.outcome, self.store.admit, self.hbm_hit
        for j in jobs:
            first_admit[j] = S
            outcome[j] = admit(j, hbm_hit[j])[0]
        self.state, self.seg = PREFILL, None
        if len(self.batch) > self.max_seen:
            self.max_seen = len(self.batch)
        if self.rec:
            self.run.gpu_state(S, len(self.batch))
            self.run.prefill_span(S, S, jobs, None)
        # _prefill_done at S: no time passed, nothing computed (the even split of 0 ns)
        gpu_ns, keep, out, left, first_token = self.gpu_ns, self.keep, self.out, self.left, self.first_token
        decoding, g0, ctx0, d0, fin_at, fin = self.decoding, self.g0, self.ctx0, self.d0, self.fin_at, self.fin
        G, share = self.G, self.dec_share
        for j in jobs:
            gpu_ns[j] += 0.0
            ctx = keep[j]
            first_token[j] = S
            left[j] = lj = out[j] - 1  # the "prefill" emitted the first token
            if lj <= 0:
                self._finish_now(j, ctx)
                continue
            decoding[j] = True
            g0[j], ctx0[j] = G, ctx
            d0[j] = share
            self.n_dec += 1
            self.ctx_dec += ctx
            fin_at[j] = f = G + lj
            heapq.heappush(fin, (f, j))
        return True

    def _segment_end(self, version: int) -> None:
        seg = self.seg
        if seg is None or version != seg[4]:
            return  # cut short by an arrival (the core's lazy versions; ClusterBatcher moves the end instead)
        G = self._segment_done(seg)
        fin = self.fin
        if fin and fin[0][0] <= G:
            now, share = self.loop.now, self.dec_share
            decoding, fin_at, ctx0, g0, gpu_ns, d0 = self.decoding, self.fin_at, self.ctx0, self.g0, self.gpu_ns, self.d0
            batch, end, job_done = self.batch, self.end, self.run.job_done
            while fin and fin[0][0] <= G:
                f, j = heapq.heappop(fin)
                if decoding[j] and fin_at[j] == f:  # the core's _finish, _finish_now and _release
                    c = ctx0[j] + G - g0[j]
                    decoding[j] = False
                    gpu_ns[j] += share - d0[j]
                    self.n_dec -= 1
                    self.ctx_dec -= c
                    del batch[j]
                    end[j] = now
                    self.tok_run -= c
                    job_done(j)
        self._iterate()
