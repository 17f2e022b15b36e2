"""The serving engine: iteration-level continuous batching (as Orca and vLLM schedule) on the
tensor-parallel GPU group, with an HBM pool of KV blocks. AttentionStore and prefix_cache's timed
engine serve with it; the settings named below are AttentionStore's (`serving.*`, `store.*`), and
each mechanism hands the engine its own in a BatchConfig and a store (kv_source.py).

- Waiting queue, first come first served. At every iteration boundary the scheduler admits
  waiting jobs in order while the batch has fewer than `serving.max_batch` jobs and the job's
  prompt KV (its history plus new tokens, and a token of growth per decoding job) fits in the
  HBM pool; the first job that does not fit stops admission (no overtaking). The pool is
  `hbm_free_gb` less the read buffer (with layer-wise pre-loading) and the write buffer (with
  async saving); finished sessions kept in HBM (`store.tiers` with hbm) give way first.
- Newly admitted jobs run one prefill iteration together, which pauses decoding (vLLM without
  chunked prefill: ASSUMPTION, named). Its compute is the sum of each job's prefill (roofline.py:
  matmuls plus causal attention over the job's own context). Their histories load layer by
  layer over PCIe while the batch computes (`prefill_end`, with the read buffer; or, with
  `store.preload = none`, all of it before the compute starts); the iteration emits each job's
  first token. Then decode iterations emit one token per running job each (roofline.py).
- Between admissions, completions and arrivals, decode iterations are identical but for the
  growing context, so they are advanced many at once in closed form.
- KV blocks are counted per token as a job's context grows (ASSUMPTION: vLLM allocates
  16-token blocks; the difference is under one block per job). When the running batch's KV
  would outgrow the pool, the youngest job is preempted by recomputation (vLLM's default):
  its blocks are freed, it goes back to the head of the queue, and on re-admission its prompt
  and the tokens it had generated are prefilled again.
- `store.save = async`: a job's new KV saves to DRAM from the end of its prefill. When it
  finishes, what is not yet saved must fit in the write buffer; otherwise its HBM blocks stay
  held until it does (the GPU does not stall: the other jobs go on). `sync`: when it finishes,
  its whole new KV is written then, on the GPU's critical path: the save stall. Its blocks are
  released when the write ends, and the next iteration boundary (where the scheduler admits the
  next waiting job and the running jobs decode on) waits for it; jobs ending together write one
  after another. The stall is GPU busy time. Policies that store nothing save nothing.
- GPU time as work (`gpu_ns`, per job): every busy ns is attributed to the jobs of its
  iteration, once. A prefill iteration (its load waits included) is split by each job's share
  of the tokens it computes there (new tokens; after a miss its history too; after a
  preemption what it recomputes): the compute-share rule. A decode iteration, or a segment of
  k identical ones, is divided evenly among its running jobs: the even-split rule, kept as a
  running per-job share (`dec_share`, like G) so a segment costs O(1), not O(batch).
"""
from __future__ import annotations

import heapq
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Protocol

from .event_loop import Loop
from .kv_source import HIT_HBM, KVSource, LayerSchedule, ResumableKVSource
from .roofline import Roofline

IDLE, PREFILL, DECODE, SAVE_STALL = 0, 1, 2, 3


@dataclass(frozen=True)
class BatchConfig:
    """What the engine reads of a scenario; each mechanism that serves with it builds one."""
    gpu: Roofline         # the iteration times
    kv: int               # KV bytes per token
    layers: int
    max_batch: int
    cap_tok: int          # HBM pool for the running jobs' KV (and sessions kept in HBM), tokens
    save_gbps: float      # HBM→DRAM bandwidth of a save (store.stores only)
    write_buffer: float   # bytes a finished job's unsaved KV may leave in the write buffer
    sync_save: bool
    hbm_cache: bool       # finished sessions stay in free HBM (AttentionStore's hbm tier)
    # a preempted job, re-admitted, recomputes its context less the cached prompt prefix its store
    # answers with (`store.resume(j, context)` -> (tokens kept, bytes loaded during the
    # iteration)), as vLLM's re-prefill hits its prefix cache; false: all of it, loading nothing
    resume_from_cache: bool = False


class BatchRun(Protocol):
    """What the engine reads of the run that owns it (AttentionStore's and prefix_cache's Run): per-job
    columns as lists, the loop and the store, and the trace calls of a recorded run (`tb` set)."""
    @property
    def loop(self) -> Loop: ...
    @property
    def store(self) -> KVSource: ...
    @property
    def tb(self) -> object | None: ...
    @property
    def n(self) -> int: ...
    @property
    def conv(self) -> list[int]: ...
    @property
    def keep(self) -> list[int]: ...
    @property
    def inn(self) -> list[int]: ...
    @property
    def out(self) -> list[int]: ...
    @property
    def after(self) -> list[int]: ...
    @property
    def over(self) -> list[bool]: ...
    @property
    def coupled(self) -> bool: ...
    @property
    def arrival(self) -> list[int]: ...
    def gpu_state(self, t: int, running: int) -> None: ...
    def prefill_span(self, S: int, end: int, jobs: list[int], layer: LayerSchedule | None) -> None: ...
    def decode_span(self, T_s: int, end: int, n: int, k: int, first: int) -> None: ...
    def save_span(self, s0: int, s1: int, j: int) -> None: ...
    def stall_span(self, t0: int, t1: int) -> None: ...
    def job_done(self, j: int) -> None: ...


class Batcher:
    """Runs the iterations. What it asks of the run's store (`run.store`) is the interface in
    kv_source.py: where an admitted job's cached tokens are, how their load overlaps the
    prefill iteration's layers, and (if it stores) what the finished job saves."""

    def __init__(self, run: BatchRun, cfg: BatchConfig) -> None:
        self.run, self.loop, self.store = run, run.loop, run.store
        self.gpu = cfg.gpu  # the roofline (one per scenario)
        self.kv = cfg.kv
        self.L = cfg.layers
        self.pcie = cfg.save_gbps
        self.wb_ns = int(cfg.write_buffer / self.pcie)
        self.max_batch = cfg.max_batch
        self.saves = run.store.stores        # a policy that stores nothing has nothing to save
        self.sync_save = cfg.sync_save
        self.cap_tok = cfg.cap_tok
        self.hbm_cache = cfg.hbm_cache
        # a preempted request's return served from what the store still holds (the prefix cache)
        self.resumable: ResumableKVSource | None = None
        if cfg.resume_from_cache:
            if not isinstance(run.store, ResumableKVSource):
                raise TypeError(f"resume_from_cache needs a store with resume(); {type(run.store).__name__} has none")
            self.resumable = run.store
        self.conv, self.keep, self.inn, self.out = run.conv, run.keep, run.inn, run.out
        self.over, self.coupled = run.over, run.coupled
        self.after = run.after
        self.rec = run.tb is not None  # the recorded run draws its iterations
        n = run.n

        self.waiting: deque[int] = deque()
        self.batch: dict[int, None] = {}      # running jobs, in admission order (youngest last)
        self.state = IDLE
        self.G = 0                            # decode iterations done so far
        self.n_dec = 0                        # jobs decoding
        self.ctx_dec = 0                      # their context tokens (at G)
        self.tok_run = 0                      # HBM tokens held by running (and releasing) jobs
        self.g0 = [0] * n                     # G when the job joined decoding
        self.ctx0 = [0] * n                   # its context then
        self.left = [0] * n                   # decode iterations it still needs
        self.resume = [0] * n                 # tokens to prefill again after a preemption (0: none)
        self.fin: list[tuple[int, int]] = []  # (G at which it ends, job); stale unless fin_at agrees
        self.fin_at = [-1] * n
        self.decoding = [False] * n
        self.save_end = [0] * n
        self.hbm_hit = [False] * n
        self.cached: OrderedDict[int, int] = OrderedDict()  # session -> tokens kept in HBM (LRU first)
        self.cached_tok = 0
        self.seg: list[int] | None = None     # the decode run in progress: [T_s, n, ctx, k, version]
        self.version = 0
        self.pcie_save_free = 0
        self.stall_from = self.stall_end = 0  # sync save: the GPU waits on writes until stall_end

        # Outputs.
        self.first_admit = [-1] * n
        self.first_token = [0] * n
        self.end = [0] * n
        self.outcome = [0] * n
        self.busy_ns = self.prefill_ns = 0
        self.load_wait_ns = 0                 # prefill iterations' layers waiting on their KV
        self.gpu_ns = [0.0] * n               # GPU time attributed to each job
        self.dec_share = 0.0                  # decode ns per running job so far (Σ segment / n)
        self.d0 = [0.0] * n                   # dec_share when the job joined decoding
        self.dec_iters = self.dec_job_iters = 0
        self.max_seen = 0
        self.prefill_tokens = self.resume_tokens = 0  # computed in prefill iterations (all; after preemption)
        self.preemptions = 0
        self.save_stall_ns = 0

    # --- the run's calls -------------------------------------------------------------------
    # The hot path (every method below runs a few times per turn) reads attributes into locals
    # and inlines the one-line helpers (_need, _admissible, _live); the trace calls run only in
    # the recorded run (`rec`).
    def arrive(self, j: int) -> None:
        waiting = self.waiting
        waiting.append(j)
        state = self.state
        if state == IDLE:
            self._iterate()
        elif state == DECODE and len(self.batch) < self.max_batch:
            h = waiting[0]
            if self.tok_run + (self.resume[h] or self.keep[h] + self.inn[h]) + self.n_dec + 1 <= self.cap_tok:
                # The scheduler looks at the queue at every iteration: end the run of identical
                # iterations at the first boundary from now.
                assert self.seg is not None  # decoding
                T_s, n, ctx, k, _ = self.seg
                k_a = self.gpu.decode_steps_to(n, ctx, self.loop.now - T_s)
                if k_a < k:
                    self._schedule_segment(k_a)

    def queue_len(self) -> int:
        return len(self.waiting)

    # --- admission -------------------------------------------------------------------------
    def _need(self, j: int) -> int:
        return self.resume[j] or self.keep[j] + self.inn[j]

    def _admissible(self) -> bool:
        # Room for the prompt plus one token of growth for each decoding job and the new one
        # (a watermark, as vLLM keeps): an admission never forces a preemption at once.
        return bool(self.waiting) and len(self.batch) < self.max_batch and \
            self.tok_run + self._need(self.waiting[0]) + self.n_dec + 1 <= self.cap_tok

    def _make_room(self, tokens: int) -> None:
        """Evict sessions cached in HBM (least recently used first) until `tokens` more fit."""
        while self.cached and self.tok_run + self.cached_tok + tokens > self.cap_tok:
            _, t = self.cached.popitem(last=False)
            self.cached_tok -= t

    def _admit(self) -> list[int]:
        """Admit waiting jobs in order while `_admissible` (inlined: this runs at every boundary)."""
        out: list[int] = []
        waiting, batch = self.waiting, self.batch
        if not waiting or len(batch) >= self.max_batch:  # the usual case at a decode boundary
            return out
        resume, keep, inn = self.resume, self.keep, self.inn
        max_batch, cap, room = self.max_batch, self.cap_tok, self.cap_tok - self.n_dec - 1
        cached = self.cached
        while waiting and len(batch) < max_batch:
            j = waiting[0]
            need = resume[j] or keep[j] + inn[j]
            if self.tok_run + need > room:
                break
            waiting.popleft()
            c = self.conv[j]
            if c in cached:  # its blocks become the running job's (a hit if still valid)
                self.cached_tok -= cached.pop(c)
                self.hbm_hit[j] = not resume[j] and keep[j] > 0 and not (self.over[j] and self.coupled)
            while cached and self.tok_run + self.cached_tok + need > cap:  # _make_room(need)
                _, t = cached.popitem(last=False)
                self.cached_tok -= t
            batch[j] = None
            self.tok_run += need
            out.append(j)
        return out

    # --- iterations ------------------------------------------------------------------------
    def _iterate(self) -> None:
        """At an iteration boundary: a prefill iteration for newly admitted jobs, else decode."""
        now = self.loop.now
        if self.stall_end > now:  # sync save: nothing runs until the writes end
            self.state, self.seg, self.stall_from = SAVE_STALL, None, now
            self.loop.push(self.stall_end, 1, self._stall_done, ())
            return
        jobs = self._admit()
        if jobs:
            self._prefill(jobs, now)
            return
        if not self.n_dec:
            self.state, self.seg = IDLE, None
            if self.rec:
                self.run.gpu_state(now, 0)
            return
        # Every decoding job grows by a token per iteration: preempt while not one more fits.
        while self.cap_tok - self.tok_run < self.n_dec:
            self._preempt_youngest()
            if not self.n_dec:
                self._iterate()
                return
        n_dec = self.n_dec
        k = self._segment_length(n_dec)
        self.state = DECODE
        self.seg = [now, n_dec, self.ctx_dec, k, 0]
        self._schedule_segment(k)
        if self.rec:
            self.run.gpu_state(now, len(self.batch))

    def _segment_length(self, n_dec: int) -> int:
        """The iterations of the decode segment that starts now: until the first decoding job
        ends, or the pool would overflow (`n_dec` jobs each growing a token per iteration)."""
        k_over = (self.cap_tok - self.tok_run) // n_dec
        fin, decoding, fin_at = self.fin, self.decoding, self.fin_at
        while fin:
            e = fin[0]
            if decoding[e[1]] and fin_at[e[1]] == e[0]:
                break
            heapq.heappop(fin)  # preempted since
        return min(fin[0][0] - self.G, k_over)

    def _stall_done(self) -> None:
        now = self.loop.now
        self.busy_ns += now - self.stall_from
        self.save_stall_ns += now - self.stall_from
        if self.rec:
            self.run.stall_span(self.stall_from, now)
        self._iterate()

    def _schedule_segment(self, k: int) -> None:
        seg = self.seg
        assert seg is not None
        self.version = v = self.version + 1
        seg[3], seg[4] = k, v
        self.loop.push(seg[0] + round(self.gpu.decode_ns(seg[1], seg[2], k)), 1, self._segment_end, (v,))

    def _segment_end(self, version: int) -> None:
        seg = self.seg
        if seg is None or version != seg[4]:
            return  # cut short by an arrival
        G = self._segment_done(seg)
        fin = self.fin
        if fin and fin[0][0] <= G:
            decoding, fin_at = self.decoding, self.fin_at
            while fin and fin[0][0] <= G:
                e = heapq.heappop(fin)
                j = e[1]
                if decoding[j] and fin_at[j] == e[0]:
                    self._finish(j)
        if self.cached:
            self._make_room(0)
        self._iterate()

    def _segment_done(self, seg: list[int]) -> int:
        """A decode segment [T_s, n, ctx, k, version] ran its k iterations: the busy time, the
        iterations, each job's share and the tokens grown are counted; the new iteration count G."""
        T_s, n, ctx, k, _ = seg
        now = self.loop.now
        self.busy_ns += now - T_s
        self.dec_iters += k
        nk = n * k
        self.dec_job_iters += nk
        self.dec_share += (now - T_s) / n
        if self.rec:
            self.run.decode_span(T_s, now, n, k, next(iter(self.batch)))
        self.G = G = self.G + k
        self.ctx_dec += nk
        self.tok_run += nk
        return G

    def _live(self, entry: tuple[int, int]) -> bool:
        return self.decoding[entry[1]] and self.fin_at[entry[1]] == entry[0]

    def _preempt_youngest(self) -> None:
        j = next(x for x in reversed(self.batch) if self.decoding[x])
        ctx = self.ctx0[j] + self.G - self.g0[j]
        self.decoding[j] = False
        self.gpu_ns[j] += self.dec_share - self.d0[j]
        self.left[j] = self.left[j] - (self.G - self.g0[j])
        self.resume[j] = ctx
        self.n_dec -= 1
        self.ctx_dec -= ctx
        self.tok_run -= ctx
        del self.batch[j]
        self.waiting.appendleft(j)
        self.preemptions += 1

    def _prefill(self, jobs: list[int], S: int) -> None:
        store, gpu = self.store, self.gpu
        resume, keep, inn, outcome_of = self.resume, self.keep, self.inn, self.outcome
        comp = dram = ssd = 0
        comp_ns = 0.0
        ready = 0
        loads = []
        work = []  # each job's compute here (ns): its share of the iteration's GPU time
        for j in jobs:
            if resume[j]:  # preempted earlier: recompute what it held (less what HBM still has), load nothing
                kept, load = self.resumable.resume(j, resume[j]) if self.resumable is not None else (0, 0)
                if load:  # its cached blocks below HBM load during this iteration, as an admission's
                    loads.append(j)
                    dram += load
                comp += resume[j] - kept
                w = gpu.prefill_ns(resume[j] - kept, kept)
                work.append(w)
                comp_ns += w
                self.resume_tokens += resume[j] - kept
                continue
            self.first_admit[j] = S
            outcome, d, s_, r = store.admit(j, self.hbm_hit[j])
            outcome_of[j] = outcome
            if outcome >= HIT_HBM:  # the new tokens, attending over the history in HBM
                comp += inn[j]
                w = gpu.prefill_ns(inn[j], keep[j])
            else:
                comp += keep[j] + inn[j]
                w = gpu.prefill_ns(keep[j] + inn[j])
            work.append(w)  # its compute: its share of the iteration's GPU time
            comp_ns += w
            if d or s_:
                loads.append(j)
                dram += d
                ssd += s_
                ready = max(ready, r, self.run.arrival[j])
        self.prefill_tokens += comp
        if loads:  # the store times the loads against the iteration's layers
            pe, wait, layer = store.load(loads, dram, ssd, ready, S, comp_ns)
        else:
            pe = S + round(comp_ns)
            layer = None
            wait = 0
        self.state, self.seg = PREFILL, None
        if len(self.batch) > self.max_seen:
            self.max_seen = len(self.batch)
        if self.rec:
            self.run.gpu_state(S, len(self.batch))
            self.run.prefill_span(S, pe, jobs, layer)
        self.loop.push(pe, 1, self._prefill_done, (jobs, S, work, wait))

    def _prefill_time(self, jobs: list[int], S: int, work: list[float], wait: int) -> int:
        """A prefill iteration from S ended now: its time is counted, and each job's share of it
        (by its compute, `work`); now."""
        now = self.loop.now
        self.busy_ns += now - S
        self.prefill_ns += now - S
        self.load_wait_ns += wait
        gpu_ns = self.gpu_ns
        tot = sum(work)
        if tot:
            per_ns = (now - S) / tot  # the iteration's time per ns of compute (waits included)
            for j, w in zip(jobs, work):
                gpu_ns[j] += w * per_ns
        else:  # nothing computed (empty turns): the loads' time is shared evenly
            for j in jobs:
                gpu_ns[j] += (now - S) / len(jobs)
        return now

    def _prefill_done(self, jobs: list[int], S: int, work: list[float], wait: int) -> None:
        now = self._prefill_time(jobs, S, work, wait)
        resume, keep, inn, left = self.resume, self.keep, self.inn, self.left
        async_save = self.saves and not self.sync_save
        for j in jobs:
            ctx = resume[j] or keep[j] + inn[j]
            if resume[j]:
                resume[j] = 0
            else:
                self.first_token[j] = now
                left[j] = self.out[j] - 1  # the prefill emitted the first token
                if async_save:
                    # Asynchronous saving: the turn's new KV (all of it after a miss) streams
                    # to DRAM from now, the decode KV as it is made.
                    s0 = max(now, self.pcie_save_free)
                    self.pcie_save_free = self.save_end[j] = s0 + int(self._new_kv(j) / self.pcie)
                    if self.rec:
                        self.run.save_span(s0, self.save_end[j], j)
            if left[j] <= 0:
                self._finish_now(j, ctx)
                continue
            self.decoding[j] = True
            G = self.G
            self.g0[j], self.ctx0[j] = G, ctx
            self.d0[j] = self.dec_share
            self.n_dec += 1
            self.ctx_dec += ctx
            self.fin_at[j] = f = G + left[j]
            heapq.heappush(self.fin, (f, j))
        self._iterate()

    # --- completion ------------------------------------------------------------------------
    def _new_kv(self, j: int) -> int:
        """Bytes of KV the turn adds to its stored session (its history too after a miss)."""
        return ((self.inn[j] if self.outcome[j] >= HIT_HBM else self.keep[j] + self.inn[j]) + self.out[j]) * self.kv

    def _finish(self, j: int) -> None:
        ctx = self.ctx0[j] + self.G - self.g0[j]
        self.decoding[j] = False
        self.gpu_ns[j] += self.dec_share - self.d0[j]
        self.n_dec -= 1
        self.ctx_dec -= ctx
        self._finish_now(j, ctx)

    def _finish_now(self, j: int, ctx: int) -> None:
        now = self.loop.now
        del self.batch[j]
        self.end[j] = now
        if self.saves and self.sync_save:  # written now, the GPU waiting (after earlier writes)
            s0 = max(now, self.stall_end)
            self.stall_end = self.save_end[j] = s0 + int(self._new_kv(j) / self.pcie)
            self.gpu_ns[j] += self.stall_end - s0  # the GPU waits on this job's write: its work
            if self.rec:
                self.run.save_span(s0, self.stall_end, j)
            release = self.stall_end
        else:
            # What is not yet saved must fit in the write buffer; until then the blocks stay held.
            release = max(now, self.save_end[j] - self.wb_ns)
        if release > now:
            self.loop.push(release, 0, self._release, (j, ctx))
        else:
            self._release(j, ctx)
        self.run.job_done(j)

    def _release(self, j: int, ctx: int) -> None:
        self.tok_run -= ctx
        if self.hbm_cache:  # the session stays in HBM while nothing needs its blocks
            tok = self.after[j]
            self._make_room(tok)
            if self.tok_run + self.cached_tok + tok <= self.cap_tok:
                self.cached[self.conv[j]] = tok
                self.cached_tok += tok
        if self.state == IDLE:
            self._iterate()
