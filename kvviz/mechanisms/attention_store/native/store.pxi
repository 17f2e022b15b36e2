# store.py's Store over C data: the same rules, calls and order (store.py is the definition and
# its docstring the description). Included by _engine.pyx after placement.pxi and ssd.pxi.
# `loop` is the compiled Loop; a recorded run's rows go to the run's Recorder (recorder.pxi),
# shared with the batcher. The batcher writes `m_next_time` (the `next_time` array) directly.

# Job outcomes (store.py)
cdef enum:
    ST_FIRST = 0
    ST_MISS = 1
    ST_RECOMPUTE_FASTER = 2
    ST_HIT_HBM = 3
    ST_HIT_DRAM = 4
    ST_HIT_SSD = 5



cdef class Store(SsdCore):
    cdef dict __dict__  # callers (tests) may note things on the store, as on the Python one
    cdef public bint coupled, stores, prefetches, inclusive, job_list
    cdef public long long kv, block, ssd_r, ssd_w
    cdef double d_ssd_r, d_ssd_w, load_bw, stream
    cdef public long long dram_cap, ssd_cap, horizon, shown, pf_scan, n_jobs
    cdef long long[::1] m_next_row, m_keep, m_hist, m_over, m_size_after, m_after, m_jobs, m_rank, m_nominal
    cdef long long[::1] m_upcoming, m_where, m_size, m_tok, m_ssd_tok, m_ssd_size, m_queued
    cdef public object where, size, tok, ssd_tok, ssd_size, running, queued, next_time, key, pf_end, pf_seq
    cdef public Placement policy
    cdef public long long dram_used, ssd_used, demoted, dropped, prefetched, ssd_copies_evicted, lost_queued
    cdef public long long ssd_write_bytes, ssd_read_bytes, late_prefetch
    # residency slots (recorded runs): slot_of as arrays plus an insertion-ordered list (dict order)
    cdef public long long n_slots
    cdef long long[::1] m_slot, m_since
    cdef KeyOrder slot_order

    def __init__(self, run, str policy, bint coupled):
        sc, prep = run.sc, run.prep
        h = sc.hardware
        wl = prep.wl
        n, n_conv = len(wl), wl.n_conv
        self.run, self.loop, self.tb = run, run.loop, run.tb
        self.landed_fn = self._landed
        self._init_ssd(sc, prep)
        self.coupled = coupled
        self.kv, self.block = prep.kv, prep.block
        self.d_ssd_r, self.d_ssd_w = h.ssds * h.ssd_read_gbps, h.ssds * h.ssd_write_gbps
        self.load_bw = h.host_bw_gbps
        self.ssd_prio = sc.store.ssd_read_priority
        self.stream = min(h.ssds * h.ssd_read_gbps, h.host_bw_gbps)
        self.inclusive = sc.store.ssd_inclusive
        self.dram_cap, self.ssd_cap = prep.dram_cap, prep.ssd_cap
        self.L_pw, self.L_ew = prep.L_pw, prep.L_ew
        i64 = lambda a: np.ascontiguousarray(a, dtype=np.int64) if len(a) else st_i64(1, 0)
        self.m_conv, self.m_next_row = i64(wl.conv), i64(prep.next_row)
        self.m_keep, self.m_hist, self.m_over = i64(prep.keep), i64(prep.hist), i64(prep.overflow)
        self.m_size_after, self.m_after = i64(prep.size_after), i64(prep.after)

        # Look-ahead
        self.job_list = sc.store.lookahead == "job_list"
        self.m_jobs = i64(prep.order) if self.job_list else st_i64(n, 0)
        self.n_jobs = n if self.job_list else 0
        self.m_rank = i64(prep.rank) if self.job_list else st_i64(n, ST_INF)
        self.key = st_i64(n_conv, ST_INF)
        self.lo = 0
        poisson = self.job_list and sc.serving.arrivals == "conversation_poisson"
        self.horizon = int(sc.store.lookahead_horizon_s * 1e9) if poisson else -1
        self.shown = 0 if poisson else n
        self.m_nominal = i64(wl.arrival_ns[prep.order]) if poisson else st_i64(1, 0)
        self.m_upcoming = st_i64(n_conv, -1)
        self.pf_scan = 0

        self.where, self.size, self.tok = st_i64(n_conv, ST_NONE), st_i64(n_conv, 0), st_i64(n_conv, 0)
        self.ssd_tok, self.ssd_size = st_i64(n_conv, 0), st_i64(n_conv, 0)
        self.running, self.queued = st_i64(n_conv, 0), st_i64(n_conv, 0)
        self.next_time = st_i64(n_conv, ST_INF)  # the Run writes it (Belady's oracle)
        self.pf_end, self.pf_seq = st_i64(n_conv, 0), st_i64(n_conv, 0)
        self.m_key, self.m_where, self.m_size, self.m_tok = self.key, self.where, self.size, self.tok
        self.m_ssd_tok, self.m_ssd_size, self.m_running, self.m_queued = \
            self.ssd_tok, self.ssd_size, self.running, self.queued
        self.m_next_time, self.m_pf_end, self.m_pf_seq = self.next_time, self.pf_end, self.pf_seq
        self.dram_used = self.ssd_used = 0
        self.policy = st_policy(self, policy)
        self.stores = self.policy.stores and self.dram_cap > 0
        self.prefetches = self.policy.prefetches and self.ssd_cap > 0

        self.demoted = self.dropped = self.prefetched = self.ssd_copies_evicted = 0
        self.lost_queued = 0
        self.ssd_write_bytes = self.ssd_read_bytes = self.ssd_busy_ns = 0
        self.late_prefetch = 0

        if self.tb is not None:
            self.rc = Recorder(run, self.tb.lane("SSD · prefetch + demand reads", "SSD"),
                               self.tb.lane("SSD · eviction writes", "SSD"))
            self.n_slots = 0
            self.m_slot, self.m_since = st_i64(n_conv, 0), st_i64(n_conv, 0)
            self.slot_order = KeyOrder(n_conv, False)

    # --- the scheduler's calls -------------------------------------------------------------
    cpdef void arrived(self, long long j):
        cdef long long c = self.m_conv[j]
        self.m_queued[c] = 1
        if self.horizon >= 0:
            self._reveal()
        if not self.job_list:  # the waiting queue shows a job from its arrival on
            self.m_rank[j] = self.n_jobs
            self.m_jobs[self.n_jobs] = j
            self.n_jobs += 1
            self._set_key(c, self.m_rank[j])
            if self.prefetches:
                self._prefetch()

    cpdef tuple admit(self, long long j, bint hbm_hit):
        """Job j enters the batch: (outcome, bytes to load from DRAM, bytes to read from SSD on
        demand, when the DRAM bytes are ready)."""
        cdef long long c = self.m_conv[j], nxt, keep, nbytes, read, land, now
        cdef long long dram = 0, ssd = 0, ready = 0
        cdef int where, outcome
        self.lo += 1
        self.m_queued[c] = 0
        self.m_running[c] = 1
        nxt = self.m_next_row[j]
        if self.horizon >= 0:
            self._reveal()
            self.m_upcoming[c] = nxt
        self._set_key(c, self.m_rank[nxt] if self.job_list and 0 <= nxt and self.m_rank[nxt] < self.shown
                      else ST_INF)
        keep, where = self.m_keep[j], self.m_where[c]
        if keep == 0:
            outcome = ST_FIRST  # nothing to reuse (a first turn, or truncated to nothing)
            self._remove(c)
        elif self.m_over[j] and self.coupled:
            outcome = ST_MISS   # coupled truncation: positions shifted, every stored copy is invalid
            self._remove(c)
        elif hbm_hit:
            outcome = ST_HIT_HBM
            self._truncated(j, c)
            if where == ST_DRAM:
                self.policy.on_hit(c)
        elif where == ST_NONE:
            outcome = ST_MISS
        else:
            self._truncated(j, c)
            nbytes = keep * self.kv
            now = self.loop.now
            if where == ST_SSD:
                read = <long long>(nbytes / self.stream)
                if self._rule_loads(keep, self._demand_start(c) - now + read, read, now):
                    outcome, ssd = ST_HIT_SSD, nbytes
                    self.ssd_read_bytes += nbytes
                else:
                    outcome = ST_RECOMPUTE_FASTER
                if self.inclusive:
                    self.policy.on_access(ST_SSD, c)  # the SSD copy stays valid
                else:
                    self._remove(c)
            elif where == ST_PREFETCHING:
                # A prefetch in flight: it lands at pf_end (as queued now), then loads over the link.
                land = st_max(0, self.m_pf_end[c] - now)
                if self._rule_loads(keep, land + <long long>(nbytes / self.load_bw), 0, now):
                    if self.ssd_prio:
                        self._ssd_promote(c)  # the job now waits on it: a demand read
                    outcome, dram = ST_HIT_SSD, nbytes
                    ready = self.m_pf_end[c]
                    self.late_prefetch += 1
                else:
                    outcome = ST_RECOMPUTE_FASTER
                self._drop_dram(c)  # it is re-saved to DRAM when the turn ends
                self.m_where[c] = ST_SSD if self.m_ssd_size[c] else ST_NONE
            else:
                outcome, dram = ST_HIT_DRAM, nbytes
                self.policy.on_hit(c)
        if self.prefetches:
            self._prefetch()
        return outcome, dram, ssd, ready

    cpdef void finished(self, long long j):
        """j's turn ended: the session's KV (history + the turn) is in DRAM, making room."""
        cdef long long c = self.m_conv[j], new
        self.m_running[c] = 0
        self.policy.on_done(c)
        if self.horizon >= 0:
            self._reveal()
        if not self.stores:
            self._remove(c)
            return
        new = self.m_size_after[j]
        self.m_tok[c] = self.m_after[j]
        if self.m_where[c] == ST_DRAM:
            self.dram_used += new - self.m_size[c]
            self.m_size[c] = new
        else:
            self._drop_dram(c)
            self.m_size[c] = new
            self._insert_dram(c)
        self.policy.on_resave(c)
        self._fit_dram(0, -1)  # c itself may be the victim: then it goes straight on to SSD
        if self.prefetches:
            self._prefetch()

    def protected(self, long long c):
        """Inside the eviction window: the session's next job is among the next L_ew jobs."""
        return self.m_key[c] < self.lo + self.L_ew

    # --- look-ahead ----------------------------------------------------------------------
    cdef inline void _set_key(self, long long c, long long k):
        if self.m_key[c] != k:
            self.m_key[c] = k
            self.policy.on_key(c)

    cpdef void _reveal(self):
        """List the jobs whose nominal release came within the horizon; a job that is its
        session's next one gives the session its key."""
        cdef long long t = self.loop.now + self.horizon, i = self.shown, j
        while i < self.n_jobs and self.m_nominal[i] <= t:
            j = self.m_jobs[i]
            if self.m_upcoming[self.m_conv[j]] == j:
                self._set_key(self.m_conv[j], i)
            i += 1
        self.shown = i

    cdef void _prefetch(self):
        """Fetch SSD→DRAM the sessions of the next L_pw listed jobs."""
        cdef long long end = min(self.n_jobs if self.horizon < 0 else self.shown, self.lo + self.L_pw)
        cdef long long i = st_max(self.pf_scan, self.lo), c, size
        cdef long long io[2]
        while i < end:
            c = self.m_conv[self.m_jobs[i]]
            if self.m_where[c] == ST_SSD and not self.m_running[c] and self.m_key[c] <= i:
                size = self.m_size[c]
                if not self._fit_dram(size, c):
                    break  # DRAM holds only sessions needed sooner: try again later
                if self.m_where[c] != ST_SSD:  # making room pushed c's own copy off the SSD
                    i += 1
                    continue
                if self.inclusive:
                    self.policy.on_access(ST_SSD, c)  # the SSD copy stays valid
                else:
                    self._drop_ssd(c)
                self.m_where[c] = ST_PREFETCHING
                self.dram_used += size
                self._resident(c)  # its DRAM space is taken from now, not from when the data lands
                self.m_pf_seq[c] += 1
                self._ssd_io(size, self.d_ssd_r, ST_P_PREFETCH, c, self.m_pf_seq[c], io)
                self.ssd_read_bytes += size
                self.m_pf_end[c] = io[1]
                self.prefetched += 1
                self.loop.push(io[1], 0, self.landed_fn, (c, self.m_pf_seq[c]))
                if self.tb is not None and not self.ssd_prio:
                    self.rc.span_f(self.rc.l_ssd_read, io[0], io[1], RC_PREFETCH, self.rc.lab_prefetch, c,
                                 size, RC_U, RC_SSD, RC_DRAM, c, RC_U, RC_U, RC_U, RC_U)
            i += 1
        self.pf_scan = i

    def _landed(self, long long c, long long seq):
        if self.m_where[c] == ST_PREFETCHING and self.m_pf_seq[c] == seq:
            self.m_where[c] = ST_DRAM
            self.policy.on_insert(ST_DRAM, c)
            if self.tb is not None:
                self.rc.instant_f(self.rc.l_ssd_read, self.loop.now, RC_LAND, c, RC_U, RC_U, RC_U, RC_DRAM, c, RC_U, RC_U, RC_U, RC_U)

    # --- residency (the occupancy view) ----------------------------------------------------
    cdef void _resident(self, long long c):
        cdef long long slot
        if self.tb is not None:
            slot = self.rc.slot_take()
            if slot < 0:
                slot = self.n_slots
                self.n_slots += 1
            self.m_slot[c], self.m_since[c] = slot, self.loop.now
            self.slot_order.append(c)

    cdef void _gone(self, long long c):
        if self.tb is not None:
            self.slot_order.remove(c)
            self.rc.residency(self.m_slot[c], self.m_since[c], self.loop.now, c)
            self.rc.slot_give(self.m_slot[c])

    cpdef void close(self):
        """End of the run: draw what is still queued or resident."""
        if self.tb is not None:
            self._ssd_close()
            while self.slot_order.head >= 0:
                self._gone(self.slot_order.head)
            self.tb.slots = self.n_slots
            self.rc.flush()

    # --- tiers -----------------------------------------------------------------------------
    cdef void _drop_dram(self, long long c):
        """Free c's DRAM copy (or its in-flight prefetch reservation); `where` is the caller's."""
        cdef long long w = self.m_where[c]
        if w == ST_DRAM or w == ST_PREFETCHING:
            self.dram_used -= self.m_size[c]
            self._gone(c)
            if w == ST_DRAM:
                self.policy.on_remove(ST_DRAM, c)

    cdef void _drop_ssd(self, long long c):
        """Free c's SSD copy; if that was its only copy, the session is gone from the store."""
        if self.m_ssd_size[c]:
            self.ssd_used -= self.m_ssd_size[c]
            self.policy.on_remove(ST_SSD, c)
            self.m_ssd_size[c] = self.m_ssd_tok[c] = 0
        if self.m_where[c] == ST_SSD:
            self.m_where[c] = ST_NONE

    cdef void _remove(self, long long c):
        self._drop_dram(c)
        self._drop_ssd(c)
        self.m_where[c] = ST_NONE

    cdef void _truncated(self, long long j, long long c):
        """Decoupled truncation dropped the oldest tokens: so does the SSD copy (a prefix)."""
        cdef long long dropped = self.m_hist[j] - self.m_keep[j], left, size
        if dropped <= 0 or not self.m_ssd_size[c]:
            return
        left = self.m_ssd_tok[c] - dropped
        if left <= 0:
            self._drop_ssd(c)
            return
        size = ((left + self.block - 1) // self.block) * self.block * self.kv
        self.ssd_used += size - self.m_ssd_size[c]
        self.m_ssd_tok[c], self.m_ssd_size[c] = left, size

    cdef void _insert_dram(self, long long c):
        self.m_where[c] = ST_DRAM
        self.dram_used += self.m_size[c]
        self.policy.on_insert(ST_DRAM, c)
        self._resident(c)

    cdef void _demote(self, long long v):
        """DRAM victim v: written to SSD (making room there), or dropped without an SSD."""
        cdef long long t, size, write
        cdef bint had
        cdef long long io[2]
        self._drop_dram(v)
        if self.m_key[v] < ST_INF:
            self.pf_scan = min(self.pf_scan, self.m_key[v])  # look at it again for prefetch
        if not self.ssd_cap:
            self.m_where[v] = ST_NONE
            self._lost(v)
            return
        t = self.loop.now
        size, had = self.m_size[v], self.m_ssd_size[v] > 0
        write = size - self.m_ssd_size[v]
        self.demoted += 1
        if write > 0:
            self._ssd_io(write, self.d_ssd_w, ST_P_WRITE, v, 0, io)
            self.ssd_write_bytes += write
            if self.tb is not None and not self.ssd_prio:
                self.rc.span_f(self.rc.l_ssd_write, io[0], io[1], RC_EVICT_WRITE, self.rc.lab_evict_write, v,
                             write, RC_U, RC_DRAM, RC_SSD, v, RC_U, RC_U, RC_U, RC_U)
        if self.tb is not None:
            self.rc.instant_f(self.rc.l_ssd_write, t, RC_EVICT, v, RC_U, RC_U, RC_DRAM, RC_SSD, v, RC_U, RC_U, RC_U, RC_U)
        self.m_where[v] = ST_SSD
        self.ssd_used += write
        self.m_ssd_size[v], self.m_ssd_tok[v] = size, self.m_tok[v]
        if had:
            self.policy.on_access(ST_SSD, v)
        else:
            self.policy.on_insert(ST_SSD, v)
        self._fit_ssd()

    cdef void _lost(self, long long c):
        self.dropped += 1
        if self.m_queued[c]:  # the queue already said it would be needed
            self.lost_queued += 1

    cdef void _fit_ssd(self):
        cdef long long x
        cdef bint lost
        while self.ssd_used > self.ssd_cap:
            x = self.policy.victim(ST_SSD, -1)
            if x < 0:
                break
            lost = self.m_where[x] == ST_SSD  # its only copy
            self._drop_ssd(x)
            if lost:
                self._lost(x)
            else:
                self.ssd_copies_evicted += 1
            if self.tb is not None:
                self.rc.instant_f(self.rc.l_ssd_write, self.loop.now, RC_EVICT, x, RC_U, RC_U, RC_SSD, RC_U, x, RC_U, RC_U, RC_U, RC_U)

    cdef bint _fit_dram(self, long long extra, long long before):
        """Evict until `extra` more bytes fit in DRAM; False if the policy finds no victim."""
        cdef long long v
        while self.dram_used + extra > self.dram_cap:
            v = self.policy.victim(ST_DRAM, before)
            if v < 0:
                return False
            self._demote(v)
        return True
