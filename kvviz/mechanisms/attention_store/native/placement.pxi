# The placement policies of placement/ (recompute, lru, fifo, scheduler_aware, belady) over C data:
# lru, fifo and belady are the serving core's compiled policies (serving/native/policies.pxi, which
# _engine.pyx includes: one compiled twin of each, shared with the block cache) run per tier over
# sessions, running sessions as pins; scheduler_aware is built from the same lists and heaps.
# Included by _engine.pyx; the store they read is StoreState (below), Store's base.

import numpy as np

from cpython.mem cimport PyMem_Calloc, PyMem_Free

cdef long long ST_INF = 4611686018427387904  # 1 << 62: store.INF
# placement/base.py
cdef enum:
    ST_NONE = 0
    ST_DRAM = 1
    ST_SSD = 2
    ST_PREFETCHING = 3


cdef object st_i64(Py_ssize_t n, long long fill):
    return np.full(max(n, 1), fill, dtype=np.int64)


cdef class StoreState:
    """What a policy reads of the store (placement/base.py: read-only to it)."""
    cdef long long[::1] m_key, m_running, m_next_time
    cdef public long long lo, L_ew, L_pw


cdef class KeyOrder:
    """An OrderedDict of sessions (oldest first) as policies.pxi's Order, with its memory."""
    cdef Order o
    cdef Link* links

    def __cinit__(self, Py_ssize_t n_conv, bint recency=True):
        cdef Py_ssize_t n = max(n_conv, 1)
        if n > 2**31 - 2:
            raise ValueError(f"{n_conv:,} sessions: the compiled placement takes fewer than 2**31")
        self.links = <Link*> PyMem_Calloc(n, sizeof(Link))
        if self.links == NULL:
            raise MemoryError()
        order_init(&self.o, self.links, recency)

    def __dealloc__(self):
        PyMem_Free(self.links)

    @property
    def head(self):
        return self.o.head[0]

    cdef inline bint has(self, long long c):
        return order_has(&self.o, <int32_t> c)

    cdef void append(self, long long c):
        """d[c] = None: at the end if absent, unmoved if present."""
        if not order_has(&self.o, <int32_t> c):
            order_insert(&self.o, <int32_t> c)

    cdef void remove(self, long long c):
        """d.pop(c, None)."""
        order_remove(&self.o, <int32_t> c)

    cdef void to_end(self, long long c):
        """d.move_to_end(c) (c present)."""
        order_touch(&self.o, <int32_t> c)


cdef bint _stale_calls(const void* ctx, const Entry* e) noexcept nogil:
    """belady with ties="calls": an entry is stale once a newer call about its session came."""
    return e.tie != (<const long long*> ctx)[e.b]


cdef struct ProtectedView:       # what scheduler_aware's stale rule reads, per tier
    const long long* mem         # session -> stored in this tier
    const long long* key         # session -> its job's place in the list
    const Link* unprotected      # session -> its place in the tier's unprotected order (state nonzero: in it)


cdef bint _stale_protected(const void* ctx, const Entry* e) noexcept nogil:
    cdef const ProtectedView* v = <const ProtectedView*> ctx
    return not v.mem[e.b] or v.key[e.b] != -e.key or v.unprotected[e.b].state != 0


cdef class Placement:
    """placement/base.Placement: no-op hooks; `victim` answers -1. Running sessions are the pins
    of every policy (the store never evicts a session its job is reading)."""
    cdef StoreState st
    cdef Pins pins
    cdef public bint stores, prefetches
    cdef public str name

    def __init__(self, StoreState st, str name):
        self.st, self.name = st, name
        self.stores, self.prefetches = True, False
        self.pins.keys, self.pins.holders, self.pins.protect = NULL, False, False
        self.pins.running = &st.m_running[0]

    cdef void on_insert(self, int tier, long long c): pass
    cdef void on_remove(self, int tier, long long c): pass
    cdef void on_hit(self, long long c): pass
    cdef void on_resave(self, long long c): pass
    cdef void on_access(self, int tier, long long c): pass
    cdef void on_key(self, long long c): pass
    cdef void on_done(self, long long c): pass

    cdef long long victim(self, int tier, long long before):
        return -1


cdef class PolicyRecompute(Placement):
    def __init__(self, StoreState st, str name):
        Placement.__init__(self, st, name)
        self.stores = False


cdef class PolicyOrdered(Placement):
    """lru (recency) and fifo (insertion order) per tier: policies.pxi's Order, the compiled
    kvviz/serving/eviction/{lru,fifo}.py, as placement/base.EvictionPlacement runs them."""
    cdef KeyOrder dram, ssd

    def __init__(self, StoreState st, str name, bint recency):
        Placement.__init__(self, st, name)
        n = st.m_key.shape[0]
        self.dram, self.ssd = KeyOrder(n, recency), KeyOrder(n, recency)

    cdef inline KeyOrder _order(self, int tier):
        return self.dram if tier == ST_DRAM else self.ssd

    cdef void on_insert(self, int tier, long long c):
        self._order(tier).append(c)

    cdef void on_remove(self, int tier, long long c):
        self._order(tier).remove(c)

    cdef void on_hit(self, long long c):
        if self.dram.has(c):
            self.dram.to_end(c)

    cdef void on_resave(self, long long c):
        self.on_hit(c)

    cdef void on_access(self, int tier, long long c):
        cdef KeyOrder o = self._order(tier)
        if o.has(c):
            o.to_end(c)

    cdef void on_done(self, long long c):
        order_unpin(&self.dram.o)
        order_unpin(&self.ssd.o)

    cdef long long victim(self, int tier, long long before):
        return order_victim(&self._order(tier).o, &self.pins)


cdef class PolicyBelady(Placement):
    """kvviz/serving/eviction/belady.py with ties="calls", as placement/belady.py runs it:
    policies.pxi's Furthest per tier over entries (-next arrival, calls, session), `before`:
    victim_after."""
    cdef Furthest f[2]
    cdef long long[::1] ver1, ver2, mem1, mem2

    def __init__(self, StoreState st, str name):
        Placement.__init__(self, st, name)
        self.prefetches = True
        n = st.m_key.shape[0]
        self.ver1, self.ver2, self.mem1, self.mem2 = st_i64(n, 0), st_i64(n, 0), st_i64(n, 0), st_i64(n, 0)

    def __dealloc__(self):
        furthest_free(&self.f[0])
        furthest_free(&self.f[1])

    cdef void on_done(self, long long c):
        furthest_unpin(&self.f[0])
        furthest_unpin(&self.f[1])

    cdef void on_insert(self, int tier, long long c):
        if tier == ST_DRAM:
            self.mem1[c] = 1
            self.ver1[c] += 1
            heap_push(&self.f[0].heap, -self.st.m_next_time[c], self.ver1[c], <int32_t> c)
        else:
            self.mem2[c] = 1
            self.ver2[c] += 1
            heap_push(&self.f[1].heap, -self.st.m_next_time[c], self.ver2[c], <int32_t> c)

    cdef void on_resave(self, long long c):
        if self.mem1[c]:
            self.on_insert(ST_DRAM, c)
        if self.mem2[c]:
            self.on_insert(ST_SSD, c)

    cdef void on_remove(self, int tier, long long c):
        if tier == ST_DRAM:
            self.mem1[c] = 0
            self.ver1[c] += 1
        else:
            self.mem2[c] = 0
            self.ver2[c] += 1

    cdef long long victim(self, int tier, long long before):
        cdef long long limit = self.st.m_next_time[before] if before >= 0 else -1
        if tier == ST_DRAM:
            return furthest_victim(&self.f[0], &self.pins, _stale_calls, &self.ver1[0], limit)
        return furthest_victim(&self.f[1], &self.pins, _stale_calls, &self.ver2[0], limit)


cdef class PolicySchedulerAware(Placement):
    """placement/scheduler_aware.py: per tier the unprotected sessions in LRU order, the protected
    in a Furthest by list position (-key, 0, c), and a min-heap (key, 0, c) of unprotected ones
    with a listed next job, moved over as the window's end passes them."""
    cdef long long[::1] mem1, mem2
    cdef KeyOrder un1, un2
    cdef Furthest prot[2]
    cdef Heap pend[2]
    cdef ProtectedView view[2]

    def __init__(self, StoreState st, str name):
        Placement.__init__(self, st, name)
        self.prefetches = True
        n = st.m_key.shape[0]
        self.mem1, self.mem2 = st_i64(n, 0), st_i64(n, 0)
        self.un1, self.un2 = KeyOrder(n), KeyOrder(n)
        self.view[0].mem, self.view[0].unprotected = &self.mem1[0], self.un1.links
        self.view[1].mem, self.view[1].unprotected = &self.mem2[0], self.un2.links
        self.view[0].key = self.view[1].key = &st.m_key[0]

    def __dealloc__(self):
        for i in range(2):
            furthest_free(&self.prot[i])
            heap_free(&self.pend[i])

    cdef void _place(self, int tier, long long c):
        cdef long long k = self.st.m_key[c]
        cdef KeyOrder un = self.un1 if tier == ST_DRAM else self.un2
        cdef int i = tier - ST_DRAM
        if k < self.st.lo + self.st.L_ew:
            un.remove(c)
            heap_push(&self.prot[i].heap, -k, 0, <int32_t> c)
        else:
            un.append(c)
            if k < ST_INF:
                heap_push(&self.pend[i], k, 0, <int32_t> c)

    cdef void on_insert(self, int tier, long long c):
        cdef KeyOrder un = self.un1 if tier == ST_DRAM else self.un2
        if tier == ST_DRAM:
            self.mem1[c] = 1
        else:
            self.mem2[c] = 1
        un.remove(c)
        self._place(tier, c)
        if un.has(c):
            un.to_end(c)

    cdef void on_remove(self, int tier, long long c):
        if tier == ST_DRAM:
            self.mem1[c] = 0
            self.un1.remove(c)
        else:
            self.mem2[c] = 0
            self.un2.remove(c)

    cdef void on_key(self, long long c):
        if self.mem1[c]:
            self._place(ST_DRAM, c)
        if self.mem2[c]:
            self._place(ST_SSD, c)

    cdef void on_done(self, long long c):
        for i in range(2):
            furthest_unpin(&self.prot[i])
        order_unpin(&self.un1.o)
        order_unpin(&self.un2.o)

    cdef void on_access(self, int tier, long long c):
        cdef KeyOrder un = self.un1 if tier == ST_DRAM else self.un2
        if un.has(c):
            un.to_end(c)

    cdef void on_hit(self, long long c):
        self.on_access(ST_DRAM, c)

    cdef void on_resave(self, long long c):
        self.on_access(ST_DRAM, c)

    cdef long long victim(self, int tier, long long before):
        cdef StoreState st = self.st
        cdef long long[::1] key = st.m_key
        cdef long long limit = st.lo + st.L_ew, k, c
        cdef int i = tier - ST_DRAM
        cdef KeyOrder un = self.un1 if tier == ST_DRAM else self.un2
        cdef Heap* pend = &self.pend[i]
        while pend.n and pend.a[0].key < limit:  # the window's end moved past them
            k, c = pend.a[0].key, pend.a[0].b
            heap_pop(pend)
            if un.has(c) and key[c] == k:
                un.remove(c)
                heap_push(&self.prot[i].heap, -k, 0, <int32_t> c)
        c = order_victim(&un.o, &self.pins)  # unprotected, least recently used first
        if c >= 0:
            return c
        # All protected: the furthest-future one, and for a prefetch only one listed behind it.
        return furthest_victim(&self.prot[i], &self.pins, _stale_protected, &self.view[i],
                               key[before] if before >= 0 else -1)


STORE_POLICIES = ("recompute", "lru", "fifo", "scheduler_aware", "belady")  # the ones compiled here


cdef Placement st_policy(StoreState st, str name):
    if name == "recompute":
        return PolicyRecompute(st, name)
    if name == "lru" or name == "fifo":
        return PolicyOrdered(st, name, name == "lru")
    if name == "scheduler_aware":
        return PolicySchedulerAware(st, name)
    if name == "belady":
        return PolicyBelady(st, name)
    raise KeyError(name)


def st_drive(str name, long long[::1] key, long long[::1] running, long long[::1] next_time, list ops):
    """A test seam (tests/test_placement_twins.py): run the compiled placement `name` over a
    stream of operations, as the store would, and return the answers of its "victim" ops. The
    arrays are the store's state the policy reads; "set_*" ops change them between calls.
    Ops: ("insert"|"remove"|"access", tier, c), ("hit"|"resave"|"key"|"done", c),
    ("victim", tier, before), ("set_key"|"set_running"|"set_next", c, value), ("set_lo", lo, L_ew)."""
    cdef StoreState st = StoreState()
    st.m_key, st.m_running, st.m_next_time = key, running, next_time
    st.lo, st.L_ew, st.L_pw = 0, 0, 0
    cdef Placement p = st_policy(st, name)
    out = []
    for op in ops:
        kind = op[0]
        if kind == "insert":
            p.on_insert(op[1], op[2])
        elif kind == "remove":
            p.on_remove(op[1], op[2])
        elif kind == "access":
            p.on_access(op[1], op[2])
        elif kind == "hit":
            p.on_hit(op[1])
        elif kind == "resave":
            p.on_resave(op[1])
        elif kind == "key":
            p.on_key(op[1])
        elif kind == "done":
            p.on_done(op[1])
        elif kind == "victim":
            out.append(p.victim(op[1], op[2]))
        elif kind == "set_key":
            key[op[1]] = op[2]
        elif kind == "set_running":
            running[op[1]] = op[2]
        elif kind == "set_next":
            next_time[op[1]] = op[2]
        elif kind == "set_lo":
            st.lo, st.L_ew = op[1], op[2]
        else:
            raise ValueError(kind)
    return out
