# The compiled Batcher's data (batcher.pxi holds its rules): per-job int64/double arrays, a ring
# buffer for the waiting queue, intrusive doubly linked lists for the running batch (admission
# order) and the HBM-kept sessions (LRU first), a C heap for the ends of decoding; what the run,
# the metrics and the tests read, with batching.py's names.
#
# The store is the compiled Store (store.pxi): its entry points are C calls.

import sys
import numpy as np
from libc.math cimport nearbyint, fabs

cdef enum:
    IDLE = 0
    PREFILL = 1
    DECODE = 2
    SAVE_STALL = 3
    HIT_HBM = 3        # store.HIT_HBM: outcomes >= it are hits
    # the Batcher's own events (Loop kinds > 0)
    K_ARRIVE = 1
    K_SEGMENT = 2
    K_PREFILL = 3
    K_RELEASE = 4
    K_STALL = 5

cdef long long INF = 1LL << 62
# sum() of floats: left to right before Python 3.12, Neumaier-compensated from 3.12 on
cdef bint NEUMAIER = sys.version_info >= (3, 12)


cdef struct Fin:
    long long f   # G at which the job ends
    long long j


cdef inline bint fin_lt(Fin* x, Fin* y) noexcept nogil:
    return x.f < y.f or (x.f == y.f and x.j < y.j)


cdef inline long long pyround(double x) noexcept nogil:
    """Python's round(float): half to even (the default rounding mode's nearbyint)."""
    return <long long> nearbyint(x)


cdef double pysum(double* w, Py_ssize_t n, int compensated=-1) noexcept:
    """sum(list of floats) as this Python computes it (compensated: 0/1 forces a way, for tests)."""
    cdef double f = 0.0, c = 0.0, t, x
    cdef Py_ssize_t i
    if not (NEUMAIER if compensated < 0 else compensated):
        for i in range(n):
            f += w[i]
        return f
    for i in range(n):
        x = w[i]
        t = f + x
        if fabs(f) >= fabs(x):
            c += (f - t) + x
        else:
            c += (x - t) + f
        f = t
    if c != 0.0 and c - c == 0.0:  # finite
        f += c
    return f


def sum_like_python(values, compensated=None):
    """pysum over a list of floats, for the tests: this Python's sum(), or the way asked for."""
    a = np.append(np.asarray(values, dtype=np.float64), 0.0)
    return pysum(pf64(a), len(a) - 1, -1 if compensated is None else int(compensated))


cdef inline long long* p64(object a) except NULL:
    cdef long long[::1] v = a
    return &v[0]


cdef inline double* pf64(object a) except NULL:
    cdef double[::1] v = a
    return &v[0]


cdef object i64(object values, Py_ssize_t n):
    """An int64 array of n + 1 (element 0 exists even when n == 0) holding `values` (or zeros)."""
    a = np.zeros(n + 1, dtype=np.int64)
    if values is not None:
        a[:n] = values
    return a



cdef class _Jobs:
    """A read-only view of the waiting queue (front first) or the running batch (oldest first):
    len(), bool(), iteration, as batching.py's deque and dict answer them."""
    cdef BatchState g
    cdef bint batch

    def __len__(self):
        return self.g.b_len if self.batch else self.g.w_len

    def __bool__(self):
        return len(self) > 0

    def __iter__(self):
        return iter(self.g.jobs_of(self.batch))


cdef class BatchState:
    """The compiled Batcher's data (its rules: batcher.pxi's Batcher, a subclass)."""
    cdef object run
    cdef Store store
    cdef Recorder rc                     # a recorded run's rows (recorder.pxi, shared with the store), or None
    cdef long long[::1] next_time
    cdef Loop loop
    cdef readonly Roofline gpu
    cdef readonly long long kv, L, wb_ns, max_batch, cap_tok, n, n_conv
    cdef readonly double pcie
    cdef readonly bint saves, sync_save, hbm_cache, rec, coupled, closed
    cdef list owners                     # the numpy arrays behind the pointers below
    cdef long long* conv
    cdef long long* keep
    cdef long long* inn
    cdef long long* out
    cdef long long* over
    cdef long long* after
    cdef long long* next_row
    cdef long long* think
    cdef long long* rec_arrival
    # state (batching.py's names)
    cdef readonly int state
    cdef readonly long long G, n_dec, ctx_dec, tok_run, cached_tok, version, pcie_save_free, stall_from, stall_end
    cdef long long* g0
    cdef long long* ctx0
    cdef long long* left
    cdef long long* resume
    cdef long long* fin_at
    cdef long long* decoding
    cdef long long* save_end
    cdef long long* hbm_hit
    cdef double* d0
    cdef long long* w_buf                # the waiting queue: a ring of n + 1
    cdef long long w_head, w_len, w_cap
    cdef long long* b_prev               # the running batch, in admission order
    cdef long long* b_next
    cdef long long b_head, b_tail, b_len
    cdef long long* c_prev               # sessions kept in HBM (tokens in c_val), LRU first
    cdef long long* c_next
    cdef long long* c_val
    cdef long long* c_in
    cdef long long c_head, c_tail, c_len
    cdef Fin* fin                        # (G at which it ends, job); stale unless fin_at agrees
    cdef Py_ssize_t fin_n, fin_cap
    cdef bint seg_on                     # the decode run in progress: T_s, n, ctx, k, version
    cdef long long seg_T, seg_n, seg_ctx, seg_k, seg_v
    cdef long long* pf_jobs              # the prefill iteration in flight (one at a time)
    cdef double* pf_work
    cdef Py_ssize_t pf_n
    cdef bint pf_pending
    # outputs
    cdef object _first_admit, _first_token, _end, _outcome, _gpu_ns, _arrival
    cdef long long* first_admit_
    cdef long long* first_token_
    cdef long long* end_
    cdef long long* outcome_
    cdef long long* arrival_
    cdef double* gpu_ns_
    cdef readonly long long busy_ns, prefill_ns, load_wait_ns, dec_iters, dec_job_iters, max_seen
    cdef readonly long long prefill_tokens, resume_tokens, preemptions, save_stall_ns
    cdef readonly double dec_share
    cdef readonly long long arrived, queue_mid, queue_end

    def __init__(self, run, cfg):
        cdef Py_ssize_t n = run.n
        self.run, self.store = run, run.store
        self.next_time = self.store.m_next_time
        self.loop = run.loop
        self.loop.owner = self
        self.gpu = Roofline.of(cfg.gpu)
        self.kv, self.L, self.pcie = cfg.kv, cfg.layers, cfg.save_gbps
        self.wb_ns = int(cfg.write_buffer / self.pcie)
        self.max_batch, self.cap_tok = cfg.max_batch, cfg.cap_tok
        self.saves, self.sync_save, self.hbm_cache = run.store.stores, cfg.sync_save, cfg.hbm_cache
        self.coupled, self.closed, self.rec = run.coupled, run.closed, run.tb is not None
        self.n, self.n_conv = n, run.prep.wl.n_conv
        self.owners = []
        self.conv, self.keep, self.inn = self._in(run.conv, n), self._in(run.keep, n), self._in(run.inn, n)
        self.out, self.over, self.after = self._in(run.out, n), self._in(run.over, n), self._in(run.after, n)
        self.next_row, self.think = self._in(run.next_row, n), self._in(run.think, n)
        self.rec_arrival = self._in(run.rec_arrival, n)
        self.g0, self.ctx0, self.left = self._in(None, n), self._in(None, n), self._in(None, n)
        self.resume, self.decoding, self.save_end = self._in(None, n), self._in(None, n), self._in(None, n)
        self.hbm_hit, self.fin_at = self._in(None, n), self._in([-1] * n, n)
        self.w_buf, self.w_cap = self._in(None, n), n + 1
        self.b_prev, self.b_next = self._in(None, n), self._in(None, n)
        self.b_head = self.b_tail = -1
        self.c_prev, self.c_next = self._in(None, self.n_conv), self._in(None, self.n_conv)
        self.c_val, self.c_in = self._in(None, self.n_conv), self._in(None, self.n_conv)
        self.c_head = self.c_tail = -1
        self.pf_jobs = self._in(None, min(n, self.max_batch))
        a = np.zeros(min(n, self.max_batch) + 1)
        self.owners.append(a)
        self.pf_work = pf64(a)
        a = np.zeros(n + 1)
        self.owners.append(a)
        self.d0 = pf64(a)
        self._first_admit, self._first_token = i64([-1] * n, n), i64(None, n)
        self._end, self._outcome, self._arrival = i64(None, n), i64(None, n), i64(None, n)
        self._gpu_ns = np.zeros(n + 1)
        self.first_admit_, self.first_token_ = p64(self._first_admit), p64(self._first_token)
        self.end_, self.outcome_, self.arrival_ = p64(self._end), p64(self._outcome), p64(self._arrival)
        self.gpu_ns_ = pf64(self._gpu_ns)
        self.rc = self.store.rc
        if self.rc is not None:
            self.rc.outcome, self.rc.conv, self.rc.keep, self.rc.over = self.outcome_, self.conv, self.keep, self.over

    def __dealloc__(self):
        PyMem_Free(self.fin)

    cdef long long* _in(self, values, Py_ssize_t n) except NULL:
        a = i64(values, n)
        self.owners.append(a)
        return p64(a)

    # --- what the run, the metrics and the tests read ----------------------------------------
    @property
    def first_admit(self):
        return self._first_admit[:self.n]

    @property
    def first_token(self):
        return self._first_token[:self.n]

    @property
    def end(self):
        return self._end[:self.n]

    @property
    def outcome(self):
        return self._outcome[:self.n]

    @property
    def gpu_ns(self):
        return self._gpu_ns[:self.n]

    @property
    def arrival(self):
        return self._arrival[:self.n]

    @property
    def waiting(self):
        cdef _Jobs v = _Jobs.__new__(_Jobs)
        v.g, v.batch = self, False
        return v

    @property
    def batch(self):
        cdef _Jobs v = _Jobs.__new__(_Jobs)
        v.g, v.batch = self, True
        return v

    cdef list jobs_of(self, bint batch):
        cdef list out = []
        cdef long long j, i
        if batch:
            j = self.b_head
            while j >= 0:
                out.append(j)
                j = self.b_next[j]
        else:
            for i in range(self.w_len):
                j = self.w_head + i
                out.append(self.w_buf[j - self.w_cap if j >= self.w_cap else j])
        return out

    cpdef long long queue_len(self):
        return self.w_len

    cpdef long long _new_kv(self, long long j):
        """Bytes of KV the turn adds to its stored session (its history too after a miss)."""
        return ((self.inn[j] if self.outcome_[j] >= HIT_HBM else self.keep[j] + self.inn[j]) + self.out[j]) * self.kv

    # --- the lists ----------------------------------------------------------------------------
    cdef inline void w_append(self, long long j) noexcept:
        cdef long long i = self.w_head + self.w_len
        self.w_buf[i - self.w_cap if i >= self.w_cap else i] = j
        self.w_len += 1

    cdef inline void w_appendleft(self, long long j) noexcept:
        self.w_head = self.w_head - 1 if self.w_head else self.w_cap - 1
        self.w_buf[self.w_head] = j
        self.w_len += 1

    cdef inline long long w_popleft(self) noexcept:
        cdef long long j = self.w_buf[self.w_head]
        self.w_head = self.w_head + 1 if self.w_head + 1 < self.w_cap else 0
        self.w_len -= 1
        return j

    cdef inline void b_append(self, long long j) noexcept:
        self.b_prev[j], self.b_next[j] = self.b_tail, -1
        if self.b_tail >= 0:
            self.b_next[self.b_tail] = j
        else:
            self.b_head = j
        self.b_tail = j
        self.b_len += 1

    cdef inline void b_remove(self, long long j) noexcept:
        cdef long long p = self.b_prev[j], q = self.b_next[j]
        if p >= 0:
            self.b_next[p] = q
        else:
            self.b_head = q
        if q >= 0:
            self.b_prev[q] = p
        else:
            self.b_tail = p
        self.b_len -= 1

    cdef inline void c_append(self, long long c, long long tok) noexcept:
        self.c_prev[c], self.c_next[c], self.c_val[c], self.c_in[c] = self.c_tail, -1, tok, 1
        if self.c_tail >= 0:
            self.c_next[self.c_tail] = c
        else:
            self.c_head = c
        self.c_tail = c
        self.c_len += 1

    cdef inline long long c_pop(self, long long c) noexcept:
        """Remove session c: its tokens."""
        cdef long long p = self.c_prev[c], q = self.c_next[c]
        if p >= 0:
            self.c_next[p] = q
        else:
            self.c_head = q
        if q >= 0:
            self.c_prev[q] = p
        else:
            self.c_tail = p
        self.c_len -= 1
        self.c_in[c] = 0
        return self.c_val[c]

    cdef int fin_push(self, long long f, long long j) except -1:
        cdef Fin e
        cdef Fin* h
        cdef Py_ssize_t i, p
        if self.fin_n == self.fin_cap:
            self.fin_cap = 2 * self.fin_cap + 16
            h = <Fin*> PyMem_Realloc(self.fin, self.fin_cap * sizeof(Fin))
            if h == NULL:
                raise MemoryError()
            self.fin = h
        e.f, e.j = f, j
        i = self.fin_n
        self.fin_n += 1
        while i > 0:
            p = (i - 1) >> 1
            if not fin_lt(&e, &self.fin[p]):
                break
            self.fin[i] = self.fin[p]
            i = p
        self.fin[i] = e
        return 0

    cdef Fin fin_pop(self) noexcept:
        cdef Fin top = self.fin[0]
        cdef Fin last
        cdef Py_ssize_t i = 0, c, n
        self.fin_n -= 1
        n = self.fin_n
        if n:
            last = self.fin[n]
            while True:
                c = 2 * i + 1
                if c >= n:
                    break
                if c + 1 < n and fin_lt(&self.fin[c + 1], &self.fin[c]):
                    c += 1
                if not fin_lt(&self.fin[c], &last):
                    break
                self.fin[i] = self.fin[c]
                i = c
            self.fin[i] = last
        return top

