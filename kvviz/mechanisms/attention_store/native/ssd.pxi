# The store's SSD queue (ssd_queue.py: FIFO, and the read-priority queue), the host link's load
# timing (host_load.py) and load-or-recompute (load_rule.py), as Store's compiled base class.
# Included by _engine.pyx after placement.pxi.

from libc.math cimport fmod, floor, copysign

# ssd_queue.py
cdef enum:
    ST_P_DEMAND = 0
    ST_P_PREFETCH = 1
    ST_P_WRITE = 2

# An op's label (ssd_queue.py's op[6]): "", "fetch", "prefetch".
cdef enum:
    ST_L_NONE = 0
    ST_L_FETCH = 1
    ST_L_PREFETCH = 2

# Columns of a queued op: ssd_queue.py's [start, end, prio, earliest, c, seq, label].
cdef enum:
    SQ_S0 = 0
    SQ_S1 = 1
    SQ_PRIO = 2
    SQ_EARL = 3
    SQ_C = 4
    SQ_SEQ = 5
    SQ_LBL = 6


cdef double st_floordiv(double vx, double wx):
    """Python's float `vx // wx` (CPython's float_floor_div), not C's floor(vx / wx)."""
    cdef double mod = fmod(vx, wx), div
    div = (vx - mod) / wx
    if mod:
        if (wx < 0) != (mod < 0):
            div -= 1.0
    if div:
        fd = floor(div)
        if div - fd > 0.5:
            fd += 1.0
        return fd
    return copysign(0.0, vx / wx)


cdef inline long long st_max(long long a, long long b):
    return a if a >= b else b


cdef class SsdCore(StoreState):
    cdef public object run, tb
    cdef Recorder rc                 # the recorded run's rows (recorder.pxi), or None
    cdef public Loop loop
    cdef object landed_fn            # the store's _landed, bound once (a prefetch's landing event)
    cdef long long[::1] m_conv, m_pf_seq, m_pf_end
    cdef bint ssd_prio
    cdef long long[:, ::1] q         # ssd_queue.py's ssd_q: rows qh .. qh+qn-1
    cdef Py_ssize_t qh, qn
    cdef public long long ssd_free, ssd_busy_ns
    # host_load.py
    cdef double pcie, ssd_stream
    cdef long long buf, L
    cdef bint preload
    cdef public long long pcie_load_free
    # load_rule.py
    cdef bint lr_enabled
    cdef long long lr_at, lr_pending
    cdef double pf_tok, attn_pair

    cdef void _init_ssd(self, sc, prep):
        h = sc.hardware
        self.q = np.zeros((16, 7), dtype=np.int64)
        self.qh = self.qn = 0
        self.ssd_free = self.ssd_busy_ns = 0
        self.pcie = h.host_bw_gbps
        self.ssd_stream = min(h.ssds * h.ssd_read_gbps, h.host_bw_gbps)
        self.buf = int(h.read_buffer_gb * 1_000_000_000)  # model.GB
        self.preload = sc.store.preload == "layerwise"
        self.L = sc.model.layers
        self.pcie_load_free = 0
        self.lr_enabled = sc.store.load_if_faster
        self.lr_at, self.lr_pending = -1, 0
        self.pf_tok, self.attn_pair = prep.gpu.prefill_ns_per_token, prep.gpu.attn_ns_per_pair

    # --- load_rule.py ----------------------------------------------------------------------
    cdef bint _rule_loads(self, long long keep, long long load_ns, long long demand_ns, long long now):
        if not self.lr_enabled:
            return True
        if self.lr_at != now:
            self.lr_at, self.lr_pending = now, 0
        # Roofline.prefill_ns(keep): keep·p + attn·(keep·0 + keep(keep+1)/2), in its order
        if load_ns + self.lr_pending < <double>keep * self.pf_tok + self.attn_pair * (<double>(keep * (keep + 1)) / 2.0):
            self.lr_pending += demand_ns
            return True
        return False

    # --- host_load.py ----------------------------------------------------------------------
    cpdef tuple load(self, list loads, long long dram, long long ssd, long long ready, long long S, double comp_ns):
        cdef long long L = self.L, c_layer, a, T0, k, k_buf, pe, le_last, wait, best, le_k1, run2
        cdef double layer_bytes
        c_layer = <long long>(comp_ns / L)
        layer_bytes = <double>(dram + ssd) / <double>L
        a = <long long>((dram / self.pcie + ssd / self.ssd_stream) / L)
        T0 = st_max(self.pcie_load_free, ready)
        if ssd:  # read on demand once the job runs
            T0 = self.demand_read(ssd, self.ssd_stream, st_max(T0, S), self.m_conv[<long long>loads[0]])
        if self.preload:
            k_buf = <long long>st_floordiv(<double>self.buf, layer_bytes)
            # layers.prefill_end(S, T0, a, c_layer, L, k)
            k = k_buf if k_buf < L else L
            best = S + L * c_layer
            if k:
                le_k1 = T0 + k * a
                best = st_max(best, st_max(T0 + a + L * c_layer, le_k1 + (L - k + 1) * c_layer))
                run2 = st_max(le_k1, S)
            else:
                le_k1 = T0
                run2 = st_max(T0, S)
            if k < L:
                le_last = run2 + (L - k) * a
                best = st_max(best, st_max(run2 + a + (L - k) * c_layer, le_last + c_layer))
            else:
                le_last = le_k1
            pe = best
            layer = (T0, a, c_layer, k_buf, S)
        else:
            T0 = st_max(T0, S)
            le_last = T0 + L * a
            pe = le_last + L * c_layer
            layer = (T0, a, c_layer, L, le_last)
        wait = pe - S - L * c_layer
        self.pcie_load_free = le_last
        if self.tb is not None:
            self.rc.load(min(T0, le_last), le_last, loads[0], len(loads), dram, ssd)
        return pe, wait, layer

    cpdef long long demand_read(self, long long nbytes, double bw, long long earliest, long long c):
        """An on-demand SSD read streamed at `bw` from `earliest` at the soonest: its start."""
        cdef long long dur = <long long>(nbytes / bw), t0
        self.lr_pending = 0  # LoadRule.booked
        if self.ssd_prio:
            return self.q[self._ssd_book(dur, ST_P_DEMAND, earliest, c, ST_L_FETCH, 0), SQ_S0]
        t0 = st_max(earliest, self.ssd_free)
        self.ssd_free = t0 + dur
        self.ssd_busy_ns += dur
        if self.tb is not None:
            self.rc.span_f(self.rc.l_ssd_read, t0, t0 + dur, RC_FETCH, self.rc.lab_fetch, c,
                         nbytes, RC_U, RC_SSD, RC_HBM, c, RC_U, RC_U, RC_U, RC_U)
        return t0

    # --- ssd_queue.py ----------------------------------------------------------------------
    cdef void _ssd_io(self, long long nbytes, double bw, int prio, long long c, long long seq, long long* out):
        """Book `nbytes` on the SSD: out[0], out[1] = (start, end)."""
        cdef long long s0, s1
        cdef Py_ssize_t r
        if self.ssd_prio:
            r = self._ssd_book(<long long>(nbytes / bw), prio, self.loop.now, c,
                               ST_L_PREFETCH if prio == ST_P_PREFETCH else ST_L_NONE, seq)
            out[0], out[1] = self.q[r, SQ_S0], self.q[r, SQ_S1]
            return
        s0 = st_max(self.loop.now, self.ssd_free)
        s1 = s0 + <long long>(nbytes / bw)
        self.ssd_free = s1
        self.ssd_busy_ns += s1 - s0
        out[0], out[1] = s0, s1

    cdef void _ssd_retire(self):
        cdef long long now = self.loop.now
        cdef Py_ssize_t k = 0, i
        while k < self.qn and self.q[self.qh + k, SQ_S1] <= now:
            k += 1
        if k:
            if self.tb is not None:
                for i in range(k):
                    self._ssd_span(self.qh + i)
            self.qh += k
            self.qn -= k

    cdef void _ssd_span(self, Py_ssize_t r):
        if self.tb is None:
            return
        cdef long long s0 = self.q[r, SQ_S0], s1 = self.q[r, SQ_S1], c = self.q[r, SQ_C]
        if self.q[r, SQ_PRIO] == ST_P_WRITE:
            self.rc.span_f(self.rc.l_ssd_write, s0, s1, RC_EVICT_WRITE, self.rc.lab_evict_write, c,
                         RC_U, RC_U, RC_DRAM, RC_SSD, c, RC_U, RC_U, RC_U, RC_U)
        elif self.q[r, SQ_LBL] == ST_L_FETCH:
            self.rc.span_f(self.rc.l_ssd_read, s0, s1, RC_FETCH, self.rc.lab_fetch, c, RC_U, RC_U, RC_SSD, RC_HBM, c, RC_U, RC_U, RC_U, RC_U)
        else:
            self.rc.span_f(self.rc.l_ssd_read, s0, s1, RC_PREFETCH, self.rc.lab_prefetch, c,
                         RC_U, RC_U, RC_SSD, RC_DRAM, c, RC_U, RC_U, RC_U, RC_U)

    cdef void _retime_from(self, Py_ssize_t i):
        """Ops from position i on start when the one before ends (or at their earliest)."""
        cdef long long[:, ::1] q = self.q
        cdef long long prev = q[self.qh + i - 1, SQ_S1] if i else self.loop.now, s0, d
        cdef Py_ssize_t k, r
        for k in range(i, self.qn):
            r = self.qh + k
            s0 = st_max(prev, q[r, SQ_EARL])
            if s0 != q[r, SQ_S0]:
                d = q[r, SQ_S1] - q[r, SQ_S0]
                q[r, SQ_S0], q[r, SQ_S1] = s0, s0 + d
                if q[r, SQ_LBL] == ST_L_PREFETCH and self.m_pf_seq[q[r, SQ_C]] == q[r, SQ_SEQ]:
                    self._pf_retimed(r)
            prev = q[r, SQ_S1]

    cdef Py_ssize_t _ssd_slot(self, int prio, long long c):
        """Where an op of priority `prio` for session c goes: behind the ops started and the
        queued ones of its own or a more urgent priority, and behind c's own queued write."""
        cdef long long[:, ::1] q = self.q
        cdef long long now = self.loop.now
        cdef Py_ssize_t i = self.qn, k, h = self.qh
        while i > 0 and q[h + i - 1, SQ_S0] > now and q[h + i - 1, SQ_PRIO] > prio:
            i -= 1
        if prio != ST_P_WRITE and c >= 0:  # not ahead of c's own queued write
            for k in range(self.qn - 1, i - 1, -1):
                if q[h + k, SQ_C] == c and q[h + k, SQ_PRIO] == ST_P_WRITE:
                    i = k + 1
                    break
        return i

    cdef Py_ssize_t _ssd_insert(self, long long s0, long long s1, int prio, long long earliest, long long c,
                                long long seq, int lbl):
        """Place the op by priority among the queued ops, re-time from there on: its row."""
        cdef Py_ssize_t i = self._ssd_slot(prio, c), r, k
        cdef long long prev = self.q[self.qh + i - 1, SQ_S1] if i else self.loop.now
        if self.qh + self.qn == self.q.shape[0]:  # full: to the front, or a larger array
            if self.qh * 2 >= self.q.shape[0]:
                for k in range(self.qn):
                    self._mv(k, self.qh + k)
            else:
                grown = np.zeros((2 * self.q.shape[0], 7), dtype=np.int64)
                grown[:self.qn] = np.asarray(self.q)[self.qh:self.qh + self.qn]
                self.q = grown
            self.qh = 0
        r = self.qh + i
        for k in range(self.qh + self.qn, r, -1):
            self._mv(k, k - 1)
        self.qn += 1
        self.q[r, SQ_S0] = st_max(prev, earliest)
        self.q[r, SQ_S1] = self.q[r, SQ_S0] + (s1 - s0)
        self.q[r, SQ_PRIO], self.q[r, SQ_EARL], self.q[r, SQ_C], self.q[r, SQ_SEQ], self.q[r, SQ_LBL] = \
            prio, earliest, c, seq, lbl
        self._retime_from(i + 1)
        return r

    cdef inline void _mv(self, Py_ssize_t dst, Py_ssize_t src):
        cdef int x
        for x in range(7):
            self.q[dst, x] = self.q[src, x]

    cdef void _pf_retimed(self, Py_ssize_t r):
        cdef long long c = self.q[r, SQ_C]
        self.m_pf_seq[c] += 1
        self.q[r, SQ_SEQ] = self.m_pf_seq[c]
        self.m_pf_end[c] = self.q[r, SQ_S1]
        self.loop.push(self.q[r, SQ_S1], 0, self.landed_fn, (c, self.q[r, SQ_SEQ]))

    cdef Py_ssize_t _ssd_book(self, long long dur, int prio, long long earliest, long long c, int lbl, long long seq):
        self._ssd_retire()
        r = self._ssd_insert(earliest, earliest + dur, prio, earliest, c, seq, lbl)
        self.ssd_busy_ns += dur
        return r

    cdef void _ssd_promote(self, long long c):
        """c's prefetch, still queued, now has a job waiting on it: serve it as a demand read."""
        self._ssd_retire()
        cdef long long now = self.loop.now, s0, s1, earl, seq, lbl
        cdef Py_ssize_t k, r, j
        for k in range(self.qn):
            r = self.qh + k
            if self.q[r, SQ_C] == c and self.q[r, SQ_LBL] == ST_L_PREFETCH and self.q[r, SQ_SEQ] == self.m_pf_seq[c] \
                    and self.q[r, SQ_S0] > now:
                s0, s1, earl, seq, lbl = self.q[r, SQ_S0], self.q[r, SQ_S1], self.q[r, SQ_EARL], self.q[r, SQ_SEQ], \
                    self.q[r, SQ_LBL]
                for j in range(r, self.qh + self.qn - 1):
                    self._mv(j, j + 1)
                self.qn -= 1
                self._retime_from(k)  # close the gap it leaves
                r = self._ssd_insert(s0, s1, ST_P_DEMAND, earl, c, seq, lbl)
                if self.q[r, SQ_S1] != s1:
                    self._pf_retimed(r)
                return

    cdef long long _demand_start(self, long long c):
        """When a demand read of session c issued now would start (the SSD's queue as it stands)."""
        cdef long long now = self.loop.now
        if not self.ssd_prio:
            return st_max(now, self.ssd_free)
        self._ssd_retire()
        cdef Py_ssize_t i = self._ssd_slot(ST_P_DEMAND, c)
        return st_max(now, self.q[self.qh + i - 1, SQ_S1]) if i else now

    cdef void _ssd_close(self):
        """Draw what is still queued (read priority: drawn once the times are final)."""
        cdef Py_ssize_t k
        for k in range(self.qn):
            self._ssd_span(self.qh + k)
        self.qh = self.qn = 0


def store_floordiv(double vx, double wx):
    """st_floordiv from Python (tests hold it to Python's float `//`)."""
    return st_floordiv(vx, wx)
