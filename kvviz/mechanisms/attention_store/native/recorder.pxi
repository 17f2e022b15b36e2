# The recorded run's rows packed in C (serving.Run's gpu_state, prefill_span, decode_span,
# load_span, save_span, stall_span and the store's spans, marks and residency): the same rows, in
# the same order, as the reference's TraceBuilder calls make, written into buffers of
# SPAN_ROW_DTYPE / INSTANT_ROW_DTYPE / RESIDENCY_DTYPE rows and a counter series' rows, handed
# over with TraceBuilder.add_rows / counter_rows when a buffer is full, before the chosen turn's
# layers are drawn (by Python calls) and at the end of the run. The buffers are small and reused, so
# they stay in cache and their pages are touched once (the builder's copy is the only fresh memory).
# One Recorder per run, held by the Batcher and the Store: rows with equal start times keep their
# emission order (build()'s stable sort), so both must write into the same buffers.
# Included by _engine.pyx before batch_state.pxi and ssd.pxi.

from libc.stdint cimport int8_t, uint8_t, int32_t, int64_t
from cpython.memoryview cimport PyMemoryView_FromMemory
from cpython.buffer cimport PyBUF_READ

from kvviz import trace as _trace
from kvviz.mechanisms.attention_store import recording as _rec

# recording.py's kinds and tiers, as C constants
cdef long long RC_U = _rec.U
cdef long long RC_FETCH = _rec.FETCH, RC_PREFETCH = _rec.PREFETCH, RC_EVICT_WRITE = _rec.EVICT_WRITE
cdef long long RC_LAND = _rec.LAND, RC_EVICT = _rec.EVICT
cdef long long RC_HBM = _rec.T_HBM, RC_DRAM = _rec.T_DRAM, RC_SSD = _rec.T_SSD
cdef long long RC_PREFILL = _rec.PREFILL, RC_DECODE = _rec.DECODE, RC_LOAD = _rec.LOAD
cdef long long RC_SAVE = _rec.SAVE, RC_STALL = _rec.STALL, RC_OVERFLOW = _rec.OVERFLOW
cdef int32_t RC_INLINE = _trace.INLINE, RC_NO_FACT = _trace.NO_FACT
cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define KVVIZ_PREFETCH(p) __builtin_prefetch(p)
    #else
    #define KVVIZ_PREFETCH(p) ((void) 0)
    #endif
    """
    void KVVIZ_PREFETCH(const void* p) noexcept nogil

cdef Py_ssize_t RC_ROWS = 1 << 12  # the rows a buffer holds (recorder_rows)
cdef enum:
    N_COUNTERS = 5                  # len(serving.COUNTERS): checked by Recorder


cdef packed struct RFact:           # FACT_DTYPE
    int64_t bytes_
    int64_t items
    int8_t src
    int8_t dst
    int64_t job
    int64_t turn
    int64_t pos
    int32_t layer
    int64_t flow

cdef packed struct RSpan:           # SPAN_ROW_DTYPE
    int32_t lane
    int64_t start
    int64_t end
    uint8_t kind
    int32_t label
    int64_t ref
    int32_t fact
    RFact f

cdef packed struct RInstant:        # INSTANT_ROW_DTYPE
    int32_t lane
    int64_t t
    uint8_t kind
    int64_t ref
    int32_t fact
    RFact f

cdef packed struct RResidency:      # RESIDENCY_DTYPE
    int32_t slot
    int64_t start
    int64_t end
    int64_t item

cdef packed struct RCounters:       # a counter series' row: t, then its values
    int64_t t
    double v[N_COUNTERS]


cdef inline Py_ssize_t _off(void* row, void* field) noexcept:
    return <char*> field - <char*> row


def _check_layouts():
    """The C rows against the dtypes they stand for (field offsets and sizes): at import."""
    cdef RSpan s
    cdef RInstant i
    cdef RResidency r
    span = (sizeof(RSpan), [_off(&s, &s.lane), _off(&s, &s.start), _off(&s, &s.end), _off(&s, &s.kind),
                            _off(&s, &s.label), _off(&s, &s.ref), _off(&s, &s.fact)])
    inst = (sizeof(RInstant), [_off(&i, &i.lane), _off(&i, &i.t), _off(&i, &i.kind), _off(&i, &i.ref),
                               _off(&i, &i.fact)])
    res = (sizeof(RResidency), [_off(&r, &r.slot), _off(&r, &r.start), _off(&r, &r.end), _off(&r, &r.item)])
    fact = (sizeof(RFact), [_off(&s.f, &s.f.bytes_), _off(&s.f, &s.f.items), _off(&s.f, &s.f.src),
                            _off(&s.f, &s.f.dst), _off(&s.f, &s.f.job), _off(&s.f, &s.f.turn),
                            _off(&s.f, &s.f.pos), _off(&s.f, &s.f.layer), _off(&s.f, &s.f.flow)])
    for (size, offsets), dt in ((span, _trace.SPAN_ROW_DTYPE), (inst, _trace.INSTANT_ROW_DTYPE),
                                (res, _trace.RESIDENCY_DTYPE), (fact, _trace.FACT_DTYPE)):
        want = [dt.fields[n][1] for n in dt.names[:len(offsets)]]
        if size != dt.itemsize or offsets != want:
            raise ImportError(f"the compiled recorder's rows do not match {dt}: {size}, {offsets}")
    if _off(&s, &s.f) != _trace.SPAN_DTYPE.itemsize or _off(&i, &i.f) != _trace.INSTANT_DTYPE.itemsize:
        raise ImportError("the compiled recorder's rows do not carry their facts where the dtypes do")


_check_layouts()


def recorder_rows(n=None):
    """The rows a recorder's buffer holds before it hands them over (for tests: a small n makes
    hand-overs happen mid-run); sets it when n is given. The previous value."""
    global RC_ROWS
    old = RC_ROWS
    if n is not None:
        if n < 1:
            raise ValueError(f"recorder_rows: {n} < 1")
        RC_ROWS = n
    return old


cdef class LabelIds:
    """Label ids by a non-negative key (open addressing): the builder is asked once per key."""
    cdef long long* keys
    cdef int32_t* ids
    cdef Py_ssize_t cap, n

    def __cinit__(self):
        self.cap = 64
        self.keys = <long long*> PyMem_Malloc(self.cap * sizeof(long long))
        self.ids = <int32_t*> PyMem_Malloc(self.cap * sizeof(int32_t))
        if self.keys == NULL or self.ids == NULL:
            raise MemoryError()
        for i in range(self.cap):
            self.keys[i] = -1

    def __dealloc__(self):
        PyMem_Free(self.keys)
        PyMem_Free(self.ids)

    cdef inline Py_ssize_t _at(self, long long key) noexcept:
        cdef Py_ssize_t i = <Py_ssize_t> ((<unsigned long long> key * 0x9E3779B97F4A7C15ULL) >> 40) & (self.cap - 1)
        while self.keys[i] != key and self.keys[i] != -1:
            i = (i + 1) & (self.cap - 1)
        return i

    cdef inline int32_t get(self, long long key) noexcept:
        """The key's id, or -2 where not known yet."""
        cdef Py_ssize_t i = self._at(key)
        return self.ids[i] if self.keys[i] == key else -2

    cdef int put(self, long long key, int32_t id_) except -1:
        cdef long long* old_k = self.keys
        cdef int32_t* old_i = self.ids
        cdef Py_ssize_t old_cap = self.cap, i, at
        if 2 * (self.n + 1) > self.cap:
            self.cap *= 2
            self.keys = <long long*> PyMem_Malloc(self.cap * sizeof(long long))
            self.ids = <int32_t*> PyMem_Malloc(self.cap * sizeof(int32_t))
            if self.keys == NULL or self.ids == NULL:
                raise MemoryError()
            for i in range(self.cap):
                self.keys[i] = -1
            for i in range(old_cap):
                if old_k[i] != -1:
                    at = self._at(old_k[i])
                    self.keys[at], self.ids[at] = old_k[i], old_i[i]
            PyMem_Free(old_k)
            PyMem_Free(old_i)
        at = self._at(key)
        self.keys[at], self.ids[at] = key, id_
        self.n += 1
        return 0


cdef inline void rc_fact(RFact* f, long long bytes_, long long items, long long src, long long dst, long long job,
                         long long turn, long long pos, long long layer, long long flow) noexcept:
    f.bytes_, f.items, f.src, f.dst, f.job = bytes_, items, <int8_t> src, <int8_t> dst, job
    f.turn, f.pos, f.layer, f.flow = turn, pos, <int32_t> layer, flow


cdef class Recorder:
    """One recorded run's rows (see the top of this file). The Store makes it (after its lanes),
    the Batcher gives it its per-job arrays; `flush()` hands every row over to the run's TraceBuilder."""
    cdef object run, tb, series
    cdef RSpan* spans
    cdef RInstant* instants
    cdef RResidency* res
    cdef RCounters* ctr
    cdef Py_ssize_t n_spans, n_instants, n_res, n_ctr, cap
    cdef long long last[N_COUNTERS]     # serving.Run._last: the counters' last row
    cdef bint has_last
    cdef LabelIds prefill_ids, decode_ids, load_ids
    cdef object py_prefill, py_decode, py_load  # recording.Labels: the texts, registered on first use
    cdef int32_t lab_save, lab_stall, lab_fetch, lab_prefetch, lab_evict_write
    cdef int32_t l_gpu, l_load, l_save, l_ssd_read, l_ssd_write
    cdef long long[::1] turn1_
    cdef long long* turn1
    cdef long long* conv                 # the Batcher's arrays (set by it: rows it has just read)
    cdef long long* keep
    cdef long long* over
    cdef long long* outcome
    cdef long long kv, detail, load_flow, load_bytes
    cdef long long mark[8]               # serving.MARK: the mark a turn's outcome puts at its prefill
    cdef long long* free_slots           # residency slots given back: a min-heap (the store's heapq)
    cdef Py_ssize_t n_free, cap_free

    def __init__(self, run, long long l_ssd_read, long long l_ssd_write):
        from kvviz.mechanisms.attention_store import serving
        prep, lab = run.prep, run.labels
        self.run, self.tb, self.series = run, run.tb, run.counters
        self.cap = RC_ROWS
        self.spans = <RSpan*> PyMem_Malloc(RC_ROWS * sizeof(RSpan))
        self.instants = <RInstant*> PyMem_Malloc(RC_ROWS * sizeof(RInstant))
        self.res = <RResidency*> PyMem_Malloc(RC_ROWS * sizeof(RResidency))
        self.ctr = <RCounters*> PyMem_Malloc(RC_ROWS * sizeof(RCounters))
        self.cap_free = 64
        self.free_slots = <long long*> PyMem_Malloc(self.cap_free * sizeof(long long))
        if not (self.spans and self.instants and self.res and self.ctr and self.free_slots):
            raise MemoryError()
        self.prefill_ids, self.decode_ids, self.load_ids = LabelIds(), LabelIds(), LabelIds()
        self.py_prefill, self.py_decode, self.py_load = lab.prefill, lab.decode, lab.load
        self.lab_save, self.lab_stall, self.lab_fetch = lab.save, lab.stall, lab.fetch
        self.lab_prefetch, self.lab_evict_write = lab.prefetch, lab.evict_write
        self.l_gpu, self.l_load, self.l_save = run.l_gpu, run.l_load, run.l_save
        self.l_ssd_read, self.l_ssd_write = l_ssd_read, l_ssd_write
        self.turn1_ = np.append(prep.wl.turn + 1, 0).astype(np.int64)  # turns as the trace numbers them, from 1
        self.turn1 = &self.turn1_[0]
        self.kv, self.detail = prep.kv, run.detail
        self.load_flow = self.load_bytes = 0
        if len(serving.MARK) > 8 or len(serving.COUNTERS) != N_COUNTERS:
            raise ValueError("serving.MARK or COUNTERS: not what the compiled recorder holds")
        for o, m in enumerate(serving.MARK):
            self.mark[o] = m

    def __dealloc__(self):
        PyMem_Free(self.spans)
        PyMem_Free(self.instants)
        PyMem_Free(self.res)
        PyMem_Free(self.ctr)
        PyMem_Free(self.free_slots)

    # --- hand-over ------------------------------------------------------------------------
    cdef int flush(self) except -1:
        """Every buffered row to the TraceBuilder, in order."""
        if self.n_spans:
            self.tb.add_rows("spans", PyMemoryView_FromMemory(<char*> self.spans, self.n_spans * sizeof(RSpan), PyBUF_READ))
            self.n_spans = 0
        if self.n_instants:
            self.tb.add_rows("instants", PyMemoryView_FromMemory(<char*> self.instants,
                                                                 self.n_instants * sizeof(RInstant), PyBUF_READ))
            self.n_instants = 0
        if self.n_res:
            self.tb.add_rows("residency", PyMemoryView_FromMemory(<char*> self.res, self.n_res * sizeof(RResidency),
                                                                  PyBUF_READ))
            self.n_res = 0
        if self.n_ctr:
            self.tb.counter_rows(self.series, PyMemoryView_FromMemory(<char*> self.ctr, self.n_ctr * sizeof(RCounters),
                                                                      PyBUF_READ))
            self.n_ctr = 0
        return 0

    # --- rows -----------------------------------------------------------------------------
    cdef int span_f(self, long long lane, long long start, long long end, long long kind, long long label,
                    long long ref, long long bytes_, long long items, long long src, long long dst, long long job,
                    long long turn, long long pos, long long layer, long long flow) except -1:
        """TraceBuilder.add_span_facts."""
        cdef RSpan* r
        if self.n_spans == self.cap:
            self.flush()
        r = &self.spans[self.n_spans]
        self.n_spans += 1
        r.lane, r.start, r.end, r.kind, r.label, r.ref, r.fact = \
            <int32_t> lane, start, end, <uint8_t> kind, <int32_t> label, ref, RC_INLINE
        rc_fact(&r.f, bytes_, items, src, dst, job, turn, pos, layer, flow)
        return 0

    cdef int span0(self, long long lane, long long start, long long end, long long kind, long long label,
                   long long ref) except -1:
        """TraceBuilder.add_span with NO_FACT (the fact's columns are ignored: zeros, as _SPAN pads)."""
        cdef RSpan* r
        if self.n_spans == self.cap:
            self.flush()
        r = &self.spans[self.n_spans]
        self.n_spans += 1
        r.lane, r.start, r.end, r.kind, r.label, r.ref, r.fact = \
            <int32_t> lane, start, end, <uint8_t> kind, <int32_t> label, ref, RC_NO_FACT
        rc_fact(&r.f, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        return 0

    cdef int instant_f(self, long long lane, long long t, long long kind, long long ref, long long bytes_,
                       long long items, long long src, long long dst, long long job, long long turn, long long pos,
                       long long layer, long long flow) except -1:
        """TraceBuilder.add_instant_facts."""
        cdef RInstant* r
        if self.n_instants == self.cap:
            self.flush()
        r = &self.instants[self.n_instants]
        self.n_instants += 1
        r.lane, r.t, r.kind, r.ref, r.fact = <int32_t> lane, t, <uint8_t> kind, ref, RC_INLINE
        rc_fact(&r.f, bytes_, items, src, dst, job, turn, pos, layer, flow)
        return 0

    cdef int residency(self, long long slot, long long start, long long end, long long item) except -1:
        cdef RResidency* r
        if self.n_res == self.cap:
            self.flush()
        r = &self.res[self.n_res]
        self.n_res += 1
        r.slot, r.start, r.end, r.item = <int32_t> slot, start, end, item
        return 0

    # --- residency slots: heapq's pop and push of the smallest free slot ---------------------
    cdef long long slot_take(self) noexcept:
        """The smallest free slot, or -1 (none free)."""
        cdef long long top, last
        cdef Py_ssize_t i = 0, c, n
        if not self.n_free:
            return -1
        top = self.free_slots[0]
        self.n_free -= 1
        n = self.n_free
        if n:
            last = self.free_slots[n]
            while True:
                c = 2 * i + 1
                if c >= n:
                    break
                if c + 1 < n and self.free_slots[c + 1] < self.free_slots[c]:
                    c += 1
                if self.free_slots[c] >= last:
                    break
                self.free_slots[i] = self.free_slots[c]
                i = c
            self.free_slots[i] = last
        return top

    cdef int slot_give(self, long long slot) except -1:
        cdef Py_ssize_t i, p
        cdef long long* h
        if self.n_free == self.cap_free:
            h = <long long*> PyMem_Realloc(self.free_slots, 2 * self.cap_free * sizeof(long long))
            if h == NULL:
                raise MemoryError()
            self.free_slots, self.cap_free = h, 2 * self.cap_free
        i = self.n_free
        self.n_free += 1
        while i > 0:
            p = (i - 1) >> 1
            if self.free_slots[p] <= slot:
                break
            self.free_slots[i] = self.free_slots[p]
            i = p
        self.free_slots[i] = slot
        return 0

    # --- serving.Run's recording calls --------------------------------------------------------
    cdef int gpu_state(self, long long t, long long batch, long long waiting, long long hbm, long long dram,
                       long long ssd) except -1:
        """Counters at an iteration boundary: a row only where a value changed."""
        cdef RCounters* r
        cdef long long now[N_COUNTERS]
        cdef int i
        now[0], now[1], now[2], now[3], now[4] = batch, waiting, hbm, dram, ssd
        if self.has_last:
            for i in range(N_COUNTERS):
                if now[i] != self.last[i]:
                    break
            else:
                return 0
        if self.n_ctr == self.cap:
            self.flush()
        r = &self.ctr[self.n_ctr]
        self.n_ctr += 1
        r.t = t
        for i in range(N_COUNTERS):
            r.v[i] = <double> now[i]
            self.last[i] = now[i]
        self.has_last = True
        return 0

    cdef void prefetch(self, long long j) noexcept:
        """What prefill() will read of job j that the engine does not: asked for early (at admission),
        so the reads of a batch's jobs overlap rather than wait one by one."""
        KVVIZ_PREFETCH(&self.turn1[j])
        KVVIZ_PREFETCH(&self.over[j])

    cdef int prefill(self, long long S, long long pe, long long* jobs, Py_ssize_t cnt, bint loaded,
                     object layer) except -1:
        cdef Py_ssize_t i
        cdef long long j, c, first = jobs[0]
        cdef int32_t label
        cdef bint drawn = False
        for i in range(cnt):
            j = jobs[i]
            c = self.conv[j]
            self.instant_f(self.l_gpu, S, self.mark[self.outcome[j]], c, self.keep[j] * self.kv, RC_U, RC_U, RC_U,
                           c, self.turn1[j], RC_U, RC_U, RC_U)
            if self.over[j]:
                self.instant_f(self.l_gpu, S, RC_OVERFLOW, c, RC_U, RC_U, RC_U, RC_U, c, self.turn1[j], RC_U, RC_U, RC_U)
            if j == self.detail:
                drawn = True
        label = self.prefill_ids.get(cnt)
        if label == -2:
            label = self.py_prefill[cnt]
            self.prefill_ids.put(cnt, label)
        self.span_f(self.l_gpu, S, pe, RC_PREFILL, label, self.detail if drawn else first, RC_U, cnt, RC_U, RC_U,
                    self.conv[first], self.turn1[first], RC_U, RC_U, self.load_flow if loaded else RC_U)
        if drawn:  # the chosen turn's layers: Python calls into the builder, after the rows before them
            self.flush()
            self.run._load_flow, self.run._load_bytes = self.load_flow, self.load_bytes
            self.run._draw_layers(S, pe, [jobs[i] for i in range(cnt)], layer)
        return 0

    cdef int decode(self, long long t0, long long t1, long long n, long long k, long long ref) except -1:
        cdef long long key = (n << 32) | k
        cdef int32_t label = self.decode_ids.get(key)
        if label == -2:
            label = self.py_decode[n, k]
            self.decode_ids.put(key, label)
        return self.span0(self.l_gpu, t0, t1, RC_DECODE, label, ref)

    cdef int load(self, long long t0, long long t1, long long first, long long n, long long dram,
                  long long ssd) except -1:
        """The load feeds the iteration's prefill (a flow, by the first job's row) and its layers."""
        cdef long long c
        if self.conv == NULL:
            raise RuntimeError("the compiled recorder has no compiled batcher")
        c = self.conv[first]
        cdef int32_t label = self.load_ids.get(n)
        if label == -2:
            label = self.py_load[n]
            self.load_ids.put(n, label)
        self.load_flow, self.load_bytes = first, dram + ssd
        return self.span_f(self.l_load, t0, t1, RC_LOAD, label, c, dram + ssd, n, RC_DRAM if dram else RC_SSD, RC_HBM,
                           c, self.turn1[first], RC_U, RC_U, first)

    cdef int save(self, long long t0, long long t1, long long j, long long new_kv) except -1:
        cdef long long c = self.conv[j]
        return self.span_f(self.l_save, t0, t1, RC_SAVE, self.lab_save, c, new_kv, RC_U, RC_HBM, RC_DRAM, c,
                           self.turn1[j], RC_U, RC_U, RC_U)

    cdef int stall(self, long long t0, long long t1) except -1:
        return self.span0(self.l_gpu, t0, t1, RC_STALL, self.lab_stall, -1)
