# The serving core's compiled event loop (kvviz/serving/event_loop.py's Loop) over a C binary heap of
# event structs, included by a compiled engine (AttentionStore's _engine.pyx; the loaders' source hash
# follows the include).
#
# Entries are ordered by (time, priority, seq) as events.py orders its tuples; seq is unique, so
# the order is total and any correct heap pops the same sequence. An event is either a Python
# callback (kind 0: fn(*args), kept in `objs` by slot: what the Python Store schedules) or one of
# the compiled Batcher's own kinds (no Python call at all). `stream` holds the first arrivals
# in a sorted array beside the heap, merged at each pop: events.py's stream, without its heap entry.

from cpython.mem cimport PyMem_Malloc, PyMem_Realloc, PyMem_Free

cdef struct Ev:
    long long t
    long long seq
    long long a       # the kind's arguments (a job, a version, ...); for kind 0 the slot in objs
    long long b
    int prio
    int kind


cdef inline bint ev_lt(Ev* x, Ev* y) noexcept nogil:
    if x.t != y.t:
        return x.t < y.t
    if x.prio != y.prio:
        return x.prio < y.prio
    return x.seq < y.seq


cdef object _past_error(long long t, long long now):
    """kvviz.engine.EventLoop's error for a time in the past."""
    if t < 0 <= now:
        return OverflowError(f"a time went past the int64 ns range (scheduled at {t} ns, now {now} ns)")
    return ValueError(f"cannot schedule in the past: {t} < {now}")


# The including engine declares its `Batcher` before including this file: the class whose
# `event(kind, a, b)` receives the events of kinds > 0 (AttentionStore's: its batcher.pxi).


cdef class Loop:
    """events.py's Loop: same order and count of events."""
    cdef Ev* heap
    cdef Py_ssize_t size, cap
    cdef public long long now
    cdef readonly long long processed
    cdef long long seq
    cdef list objs                 # slot -> (fn, args) of a pending Python callback
    cdef list free                 # slots free for reuse
    # the stream: sorted (time, original index); seq = s_seq0 + index
    cdef long long* s_t
    cdef long long* s_i
    cdef Py_ssize_t s_n, s_next
    cdef long long s_seq0
    cdef int s_prio, s_kind
    cdef object s_fn
    cdef list s_args
    cdef Batcher owner             # receives the events of kinds > 0

    def __cinit__(self):
        self.cap = 64
        self.heap = <Ev*> PyMem_Malloc(self.cap * sizeof(Ev))
        if self.heap == NULL:
            raise MemoryError()
        self.objs, self.free = [], []

    def __dealloc__(self):
        PyMem_Free(self.heap)
        PyMem_Free(self.s_t)
        PyMem_Free(self.s_i)

    cdef int _grow(self) except -1:
        cdef Ev* h = <Ev*> PyMem_Realloc(self.heap, 2 * self.cap * sizeof(Ev))
        if h == NULL:
            raise MemoryError()
        self.heap, self.cap = h, 2 * self.cap
        return 0

    cdef int put(self, long long t, int prio, int kind, long long a, long long b) except -1:
        """Schedule an event (never in the past): sift up."""
        cdef Py_ssize_t i, p
        cdef Ev e
        if t < self.now:
            raise _past_error(t, self.now)
        if self.size == self.cap:
            self._grow()
        e.t, e.prio, e.seq, e.kind, e.a, e.b = t, prio, self.seq, kind, a, b
        self.seq += 1
        i = self.size
        self.size += 1
        while i > 0:
            p = (i - 1) >> 1
            if not ev_lt(&e, &self.heap[p]):
                break
            self.heap[i] = self.heap[p]
            i = p
        self.heap[i] = e
        return 0

    cdef Ev pop(self) noexcept:
        cdef Ev top = self.heap[0]
        cdef Ev last
        cdef Py_ssize_t i = 0, c, n
        self.size -= 1
        n = self.size
        if n:
            last = self.heap[n]
            while True:
                c = 2 * i + 1
                if c >= n:
                    break
                if c + 1 < n and ev_lt(&self.heap[c + 1], &self.heap[c]):
                    c += 1
                if not ev_lt(&self.heap[c], &last):
                    break
                self.heap[i] = self.heap[c]
                i = c
            self.heap[i] = last
        return top

    cpdef push(self, long long t, int priority, object fn, tuple args):
        """Schedule fn(*args) at absolute time t (ns; never in the past)."""
        cdef Py_ssize_t slot
        if t < self.now:
            raise _past_error(t, self.now)
        if self.free:
            slot = self.free.pop()
            self.objs[slot] = (fn, args)
        else:
            slot = len(self.objs)
            self.objs.append((fn, args))
        self.put(t, priority, 0, slot, 0)

    def at(self, t, fn, *args, priority=0):
        self.push(t, priority, fn, args)

    def stream(self, times, fn, args, priority=0):
        """fn(*args[i]) at times[i] for every i, scheduled in that order (before any other event)."""
        self._stream(times, priority, 0, fn, list(args))

    cdef int _stream(self, times, int prio, int kind, object fn, list args) except -1:
        """kind 0: fn(*args[i]); else the owner's event (kind, args[i]) with args[i] an int."""
        cdef Py_ssize_t n = len(times), i
        cdef list order
        if self.seq or self.s_n:
            raise RuntimeError("stream() comes before any other scheduling")
        for t in times:
            if t < self.now:
                raise _past_error(t, self.now)
        order = sorted(range(n), key=lambda i: (int(times[i]), i))
        PyMem_Free(self.s_t)  # an empty stream may come before another
        PyMem_Free(self.s_i)
        self.s_t = <long long*> PyMem_Malloc((n + 1) * sizeof(long long))
        self.s_i = <long long*> PyMem_Malloc((n + 1) * sizeof(long long))
        if self.s_t == NULL or self.s_i == NULL:
            raise MemoryError()
        for i in range(n):
            self.s_t[i] = times[order[i]]
            self.s_i[i] = order[i]
        self.s_n, self.s_next, self.s_seq0 = n, 0, self.seq
        self.s_prio, self.s_kind, self.s_fn, self.s_args = prio, kind, fn, args
        self.seq += n
        return 0

    def run(self):
        cdef Ev e, s
        cdef long long done = 0
        cdef Py_ssize_t k
        cdef object fa
        try:
            while True:
                if self.s_next < self.s_n:
                    k = self.s_next
                    s.t, s.prio, s.seq = self.s_t[k], self.s_prio, self.s_seq0 + self.s_i[k]
                    if self.size == 0 or ev_lt(&s, &self.heap[0]):
                        self.s_next += 1
                        self.now = s.t
                        if self.s_kind:
                            self.owner.event(self.s_kind, self.s_args[self.s_i[k]], 0)
                        else:
                            self.s_fn(*self.s_args[self.s_i[k]])
                        done += 1
                        continue
                if self.size == 0:
                    break
                e = self.pop()
                self.now = e.t
                if e.kind:
                    self.owner.event(e.kind, e.a, e.b)
                else:
                    fa = self.objs[e.a]
                    self.objs[e.a] = None
                    self.free.append(e.a)
                    fa[0](*fa[1])
                done += 1
        finally:
            self.processed += done
        return self.now
