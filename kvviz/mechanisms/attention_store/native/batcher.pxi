# batching.py's Batcher compiled, and serving.Run's per-turn glue (arrive, job_done): each method
# is its namesake there, the same rules in the same order with the same float operations (read
# batching.py for the why; comments here say only where the C form differs). Its data and lists:
# batch_state.pxi.


cdef class Batcher(BatchState):
    """batching.Batcher compiled, with serving.Run's per-turn glue (arrive_job, job_done)."""

    cdef int event(self, int kind, long long a, long long b) except -1:
        """The Loop's dispatch of the Batcher's own events."""
        if kind == K_SEGMENT:
            self._segment_end(a)
        elif kind == K_PREFILL:
            self._prefill_done(a, b)
        elif kind == K_RELEASE:
            self._release(a, b)
        elif kind == K_ARRIVE:
            self.arrive_job(a)
        elif kind == K_STALL:
            self._stall_done()
        return 0

    def serve(self, first, times):
        """serving.Run.run's loop: the first turns released at `times`, every event run, and
        the run's arrival counters set."""
        self.loop._stream(times, 2, K_ARRIVE, None, list(first))
        self.loop.run()
        self.run.arrived, self.run.queue_mid, self.run.queue_end = self.arrived, self.queue_mid, self.queue_end

    # --- serving.Run's glue --------------------------------------------------------------------
    cdef int arrive_job(self, long long j) except -1:
        self.arrival_[j] = self.loop.now
        self.store.arrived(j)
        self.arrive(j)
        self.arrived += 1
        if self.arrived == (self.n + 1) // 2:
            self.queue_mid = self.w_len
        if self.arrived == self.n:
            self.queue_end = self.w_len
        return 0

    cdef int job_done(self, long long j) except -1:
        cdef long long c = self.conv[j], E = self.loop.now, nxt = self.next_row[j], at
        if nxt >= 0:
            if self.closed:
                at = E + self.think[nxt]
            else:
                at = self.rec_arrival[nxt] if self.rec_arrival[nxt] > E else E
            self.next_time[c] = at
            self.loop.put(at, 2, K_ARRIVE, nxt, 0)
        else:
            self.next_time[c] = INF
        self.store.finished(j)
        return 0

    # --- the run's calls -----------------------------------------------------------------------
    cpdef arrive(self, long long j):
        cdef long long h, k_a
        self.w_append(j)
        if self.state == IDLE:
            self._iterate()
        elif self.state == DECODE and self.b_len < self.max_batch:
            h = self.w_buf[self.w_head]
            if self.tok_run + (self.resume[h] if self.resume[h] else self.keep[h] + self.inn[h]) \
                    + self.n_dec + 1 <= self.cap_tok:
                k_a = self.gpu.decode_steps_to(self.seg_n, self.seg_ctx, self.loop.now - self.seg_T)
                if k_a < self.seg_k:
                    self._schedule_segment(k_a)

    # --- admission -----------------------------------------------------------------------------
    cdef int _make_room(self, long long tokens) except -1:
        while self.c_len and self.tok_run + self.cached_tok + tokens > self.cap_tok:
            self.cached_tok -= self.c_pop(self.c_head)
        return 0

    cdef Py_ssize_t _admit(self) except -1:
        """Admit into pf_jobs; the count."""
        cdef Py_ssize_t cnt = 0
        cdef long long j, c, need, room = self.cap_tok - self.n_dec - 1
        if not self.w_len or self.b_len >= self.max_batch:
            return 0
        while self.w_len and self.b_len < self.max_batch:
            j = self.w_buf[self.w_head]
            need = self.resume[j] if self.resume[j] else self.keep[j] + self.inn[j]
            if self.tok_run + need > room:
                break
            self.w_popleft()
            c = self.conv[j]
            if self.c_in[c]:
                self.cached_tok -= self.c_pop(c)
                self.hbm_hit[j] = not self.resume[j] and self.keep[j] > 0 and not (self.over[j] and self.coupled)
            while self.c_len and self.tok_run + self.cached_tok + need > self.cap_tok:
                self.cached_tok -= self.c_pop(self.c_head)
            self.b_append(j)
            self.tok_run += need
            if self.rec:
                self.rc.prefetch(j)
            self.pf_jobs[cnt] = j
            cnt += 1
        return cnt

    # --- iterations ----------------------------------------------------------------------------
    cdef int _iterate(self) except -1:
        cdef long long now = self.loop.now, n_dec, k_over, k
        cdef Py_ssize_t cnt
        cdef Fin e
        if self.stall_end > now:
            self.state, self.seg_on, self.stall_from = SAVE_STALL, False, now
            self.loop.put(self.stall_end, 1, K_STALL, 0, 0)
            return 0
        cnt = self._admit()
        if cnt:
            self._prefill(cnt, now)
            return 0
        if not self.n_dec:
            self.state, self.seg_on = IDLE, False
            if self.rec:
                self.rc.gpu_state(now, 0, self.w_len, (self.tok_run + self.cached_tok) * self.kv,
                                  self.store.dram_used, self.store.ssd_used)
            return 0
        while self.cap_tok - self.tok_run < self.n_dec:
            self._preempt_youngest()
            if not self.n_dec:
                self._iterate()
                return 0
        n_dec = self.n_dec
        k_over = (self.cap_tok - self.tok_run) // n_dec
        while self.fin_n:
            e = self.fin[0]
            if self.decoding[e.j] and self.fin_at[e.j] == e.f:
                break
            self.fin_pop()
        if not self.fin_n:
            raise RuntimeError("decoding jobs without an end")
        k = self.fin[0].f - self.G
        if k_over < k:
            k = k_over
        self.state = DECODE
        self.seg_on, self.seg_T, self.seg_n, self.seg_ctx, self.seg_k, self.seg_v = True, now, n_dec, self.ctx_dec, k, 0
        self._schedule_segment(k)
        if self.rec:
            self.rc.gpu_state(now, self.b_len, self.w_len, (self.tok_run + self.cached_tok) * self.kv,
                              self.store.dram_used, self.store.ssd_used)
        return 0

    cdef int _stall_done(self) except -1:
        cdef long long now = self.loop.now
        self.busy_ns += now - self.stall_from
        self.save_stall_ns += now - self.stall_from
        if self.rec:
            self.rc.stall(self.stall_from, now)
        self._iterate()
        return 0

    cdef int _schedule_segment(self, long long k) except -1:
        self.version += 1
        self.seg_k, self.seg_v = k, self.version
        self.loop.put(self.seg_T + pyround(self.gpu.decode_ns(self.seg_n, self.seg_ctx, k)), 1, K_SEGMENT,
                      self.version, 0)
        return 0

    cdef int _segment_end(self, long long version) except -1:
        cdef long long T_s = self.seg_T, n = self.seg_n, k = self.seg_k, now = self.loop.now, nk, G, j
        cdef Fin e
        if not self.seg_on or version != self.seg_v:
            return 0  # cut short by an arrival
        self.busy_ns += now - T_s
        self.dec_iters += k
        nk = n * k
        self.dec_job_iters += nk
        self.dec_share += <double> (now - T_s) / <double> n
        if self.rec:
            self.rc.decode(T_s, now, n, k, self.b_head)
        self.G = G = self.G + k
        self.ctx_dec += nk
        self.tok_run += nk
        while self.fin_n and self.fin[0].f <= G:
            e = self.fin_pop()
            j = e.j
            if self.decoding[j] and self.fin_at[j] == e.f:
                self._finish(j)
        if self.c_len:
            self._make_room(0)
        self._iterate()
        return 0

    cdef int _preempt_youngest(self) except -1:
        cdef long long j = self.b_tail, ctx
        while j >= 0 and not self.decoding[j]:
            j = self.b_prev[j]
        if j < 0:
            raise RuntimeError("no decoding job to preempt")
        ctx = self.ctx0[j] + self.G - self.g0[j]
        self.decoding[j] = 0
        self.gpu_ns_[j] += self.dec_share - self.d0[j]
        self.left[j] = self.left[j] - (self.G - self.g0[j])
        self.resume[j] = ctx
        self.n_dec -= 1
        self.ctx_dec -= ctx
        self.tok_run -= ctx
        self.b_remove(j)
        self.w_appendleft(j)
        self.preemptions += 1
        return 0

    cdef int _prefill(self, Py_ssize_t cnt, long long S) except -1:
        cdef long long comp = 0, dram = 0, ssd = 0, ready = 0, j, o, d, s_, r, pe, wait
        cdef double comp_ns = 0.0, w
        cdef Py_ssize_t i
        cdef list loads = None
        cdef object layer = None
        if self.pf_pending:
            raise RuntimeError("a prefill iteration while one is in flight")
        for i in range(cnt):
            j = self.pf_jobs[i]
            if self.resume[j]:  # preempted earlier: recompute what it held, load nothing
                comp += self.resume[j]
                w = self.gpu.prefill_ns_i(self.resume[j], 0)
                self.pf_work[i] = w
                comp_ns += w
                self.resume_tokens += self.resume[j]
                continue
            self.first_admit_[j] = S
            o, d, s_, r = self.store.admit(j, self.hbm_hit[j] != 0)
            self.outcome_[j] = o
            if o >= HIT_HBM:
                comp += self.inn[j]
                w = self.gpu.prefill_ns_i(self.inn[j], self.keep[j])
            else:
                comp += self.keep[j] + self.inn[j]
                w = self.gpu.prefill_ns_i(self.keep[j] + self.inn[j], 0)
            self.pf_work[i] = w
            comp_ns += w
            if d or s_:
                if loads is None:
                    loads = []
                loads.append(j)
                dram += d
                ssd += s_
                if r > ready:
                    ready = r
                if self.arrival_[j] > ready:
                    ready = self.arrival_[j]
        self.prefill_tokens += comp
        if loads is not None:
            pe, wait, layer = self.store.load(loads, dram, ssd, ready, S, comp_ns)
        else:
            pe, wait = S + pyround(comp_ns), 0
        self.state, self.seg_on = PREFILL, False
        if self.b_len > self.max_seen:
            self.max_seen = self.b_len
        if self.rec:
            self.rc.gpu_state(S, self.b_len, self.w_len, (self.tok_run + self.cached_tok) * self.kv,
                              self.store.dram_used, self.store.ssd_used)
            self.rc.prefill(S, pe, self.pf_jobs, cnt, loads is not None, layer)
        self.pf_n, self.pf_pending = cnt, True
        self.loop.put(pe, 1, K_PREFILL, S, wait)
        return 0

    cdef int _prefill_done(self, long long S, long long wait) except -1:
        cdef long long now = self.loop.now, j, ctx, s0, f
        cdef double tot, per_ns
        cdef Py_ssize_t i, cnt = self.pf_n
        cdef bint async_save = self.saves and not self.sync_save
        self.busy_ns += now - S
        self.prefill_ns += now - S
        self.load_wait_ns += wait
        tot = pysum(self.pf_work, cnt)
        if tot != 0.0:
            per_ns = <double> (now - S) / tot  # the iteration's time per ns of compute (waits included)
            for i in range(cnt):
                self.gpu_ns_[self.pf_jobs[i]] += self.pf_work[i] * per_ns
        else:  # nothing computed (empty turns): the loads' time is shared evenly
            for i in range(cnt):
                self.gpu_ns_[self.pf_jobs[i]] += <double> (now - S) / <double> cnt
        self.pf_pending = False
        for i in range(cnt):
            j = self.pf_jobs[i]
            ctx = self.resume[j] if self.resume[j] else self.keep[j] + self.inn[j]
            if self.resume[j]:
                self.resume[j] = 0
            else:
                self.first_token_[j] = now
                self.left[j] = self.out[j] - 1  # the prefill emitted the first token
                if async_save:
                    s0 = self.pcie_save_free if self.pcie_save_free > now else now
                    self.pcie_save_free = self.save_end[j] = s0 + <long long> (<double> self._new_kv(j) / self.pcie)
                    if self.rec:
                        self.rc.save(s0, self.save_end[j], j, self._new_kv(j))
            if self.left[j] <= 0:
                self._finish_now(j, ctx)
                continue
            self.decoding[j] = 1
            self.g0[j], self.ctx0[j] = self.G, ctx
            self.d0[j] = self.dec_share
            self.n_dec += 1
            self.ctx_dec += ctx
            f = self.G + self.left[j]
            self.fin_at[j] = f
            self.fin_push(f, j)
        self._iterate()
        return 0

    # --- completion ----------------------------------------------------------------------------
    cdef int _finish(self, long long j) except -1:
        cdef long long ctx = self.ctx0[j] + self.G - self.g0[j]
        self.decoding[j] = 0
        self.gpu_ns_[j] += self.dec_share - self.d0[j]
        self.n_dec -= 1
        self.ctx_dec -= ctx
        self._finish_now(j, ctx)
        return 0

    cdef int _finish_now(self, long long j, long long ctx) except -1:
        cdef long long now = self.loop.now, s0, release
        self.b_remove(j)
        self.end_[j] = now
        if self.saves and self.sync_save:  # written now, the GPU waiting (after earlier writes)
            s0 = self.stall_end if self.stall_end > now else now
            self.stall_end = self.save_end[j] = s0 + <long long> (<double> self._new_kv(j) / self.pcie)
            self.gpu_ns_[j] += <double> (self.stall_end - s0)
            if self.rec:
                self.rc.save(s0, self.stall_end, j, self._new_kv(j))
            release = self.stall_end
        else:
            release = self.save_end[j] - self.wb_ns
            if release < now:
                release = now
        if release > now:
            self.loop.put(release, 0, K_RELEASE, j, ctx)
        else:
            self._release(j, ctx)
        self.job_done(j)
        return 0

    cdef int _release(self, long long j, long long ctx) except -1:
        cdef long long tok, c
        self.tok_run -= ctx
        if self.hbm_cache:  # the session stays in HBM while nothing needs its blocks
            tok = self.after[j]
            self._make_room(tok)
            if self.tok_run + self.cached_tok + tok <= self.cap_tok:
                c = self.conv[j]
                if self.c_in[c]:  # dict assignment: the value changes, the place does not
                    self.c_val[c] = tok
                else:
                    self.c_append(c, tok)
                self.cached_tok += tok
        if self.state == IDLE:
            self._iterate()
        return 0
