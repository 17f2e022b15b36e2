# The placement policies of placement/ (recompute, lru, fifo, scheduler_aware, belady) over C data
# (lru, fifo and belady: the compiled twins of kvviz/serving/eviction's, as placement/ runs them):
# an intrusive doubly linked list per tier for each OrderedDict, binary heaps of int64 triples for
# the heapq lists (lazily invalidated as there), and parked entries as pooled per-session lists.
# Included by _engine.pyx; the store they read is StoreState (below), Store's base.

import numpy as np

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


cdef class StHeap:
    """A min-heap of (a, b, c) int64 triples ordered as tuples (heapq's order)."""
    cdef long long[::1] a, b, c
    cdef Py_ssize_t n

    def __cinit__(self):
        self.a, self.b, self.c = st_i64(64, 0), st_i64(64, 0), st_i64(64, 0)
        self.n = 0

    cdef inline bint _lt(self, Py_ssize_t i, Py_ssize_t j):
        if self.a[i] != self.a[j]:
            return self.a[i] < self.a[j]
        if self.b[i] != self.b[j]:
            return self.b[i] < self.b[j]
        return self.c[i] < self.c[j]

    cdef inline void _swap(self, Py_ssize_t i, Py_ssize_t j):
        self.a[i], self.a[j] = self.a[j], self.a[i]
        self.b[i], self.b[j] = self.b[j], self.b[i]
        self.c[i], self.c[j] = self.c[j], self.c[i]

    cdef void push(self, long long a, long long b, long long c):
        cdef Py_ssize_t i = self.n, p
        if i == self.a.shape[0]:
            self.a = np.concatenate([self.a, np.zeros(i, dtype=np.int64)])
            self.b = np.concatenate([self.b, np.zeros(i, dtype=np.int64)])
            self.c = np.concatenate([self.c, np.zeros(i, dtype=np.int64)])
        self.a[i], self.b[i], self.c[i] = a, b, c
        self.n += 1
        while i > 0:
            p = (i - 1) >> 1
            if not self._lt(i, p):
                break
            self._swap(i, p)
            i = p

    cdef void pop(self):
        """Drop the top entry."""
        cdef Py_ssize_t i = 0, l, r, m
        self.n -= 1
        if self.n == 0:
            return
        self.a[0], self.b[0], self.c[0] = self.a[self.n], self.b[self.n], self.c[self.n]
        while True:
            l = 2 * i + 1
            if l >= self.n:
                break
            r, m = l + 1, l
            if r < self.n and self._lt(r, l):
                m = r
            if not self._lt(m, i):
                break
            self._swap(i, m)
            i = m


cdef class StParked:
    """Heap entries parked per running session (base.furthest/unpark): pooled singly linked lists."""
    cdef long long[::1] first, pa, pb, pnext
    cdef long long free, used

    def __cinit__(self, Py_ssize_t n_conv):
        self.first = st_i64(n_conv, -1)
        self.pa, self.pb, self.pnext = st_i64(64, 0), st_i64(64, 0), st_i64(64, -1)
        self.free, self.used = -1, 0

    cdef void park(self, long long c, long long a, long long b):
        cdef long long x
        if self.free >= 0:
            x = self.free
            self.free = self.pnext[x]
        else:
            x = self.used
            if x == self.pa.shape[0]:
                self.pa = np.concatenate([self.pa, np.zeros(x, dtype=np.int64)])
                self.pb = np.concatenate([self.pb, np.zeros(x, dtype=np.int64)])
                self.pnext = np.concatenate([self.pnext, np.zeros(x, dtype=np.int64)])
            self.used += 1
        self.pa[x], self.pb[x] = a, b
        self.pnext[x] = self.first[c]
        self.first[c] = x

    cdef void unpark(self, StHeap h, long long c):
        """Session c's job ended: its parked entries go back on the heap (the order they go back
        in changes no pop: entries are totally ordered)."""
        cdef long long x = self.first[c], nx
        while x >= 0:
            h.push(self.pa[x], self.pb[x], c)
            nx = self.pnext[x]
            self.pnext[x] = self.free
            self.free = x
            x = nx
        self.first[c] = -1


cdef class StList:
    """An OrderedDict of sessions as an intrusive doubly linked list (oldest at head)."""
    cdef long long[::1] prv, nxt, inl
    cdef long long head, tail

    def __cinit__(self, Py_ssize_t n_conv):
        self.prv, self.nxt, self.inl = st_i64(n_conv, -1), st_i64(n_conv, -1), st_i64(n_conv, 0)
        self.head = self.tail = -1

    cdef inline bint has(self, long long c):
        return self.inl[c] != 0

    cdef void append(self, long long c):
        """d[c] = None: at the end if absent, unmoved if present."""
        if self.inl[c]:
            return
        self.inl[c] = 1
        self.prv[c], self.nxt[c] = self.tail, -1
        if self.tail >= 0:
            self.nxt[self.tail] = c
        else:
            self.head = c
        self.tail = c

    cdef void remove(self, long long c):
        """d.pop(c, None)."""
        if not self.inl[c]:
            return
        self.inl[c] = 0
        cdef long long p = self.prv[c], n = self.nxt[c]
        if p >= 0:
            self.nxt[p] = n
        else:
            self.head = n
        if n >= 0:
            self.prv[n] = p
        else:
            self.tail = p

    cdef void to_end(self, long long c):
        """d.move_to_end(c) (c present)."""
        if self.tail != c:
            self.remove(c)
            self.append(c)

    cdef long long first_free(self, long long[::1] running):
        """The oldest session not running, or -1."""
        cdef long long c = self.head
        while c >= 0:
            if not running[c]:
                return c
            c = self.nxt[c]
        return -1


cdef class Placement:
    """placement/base.Placement: no-op hooks; `victim` answers -1."""
    cdef StoreState st
    cdef public bint stores, prefetches
    cdef public str name

    def __init__(self, StoreState st, str name):
        self.st, self.name = st, name
        self.stores, self.prefetches = True, False

    cdef void on_insert(self, int tier, long long c): pass
    cdef void on_remove(self, int tier, long long c): pass
    cdef void on_hit(self, long long c): pass
    cdef void on_resave(self, long long c): pass
    cdef void on_access(self, int tier, long long c): pass
    cdef void on_key(self, long long c): pass
    cdef void on_done(self, long long c): pass

    cdef long long victim(self, int tier, long long before):
        return -1

    cdef bint _stale(self, int tier, long long a, long long b, long long c):
        return False

    cdef long long _furthest(self, int tier, StHeap h, StParked parked, long long floor):
        """base.furthest: the top valid entry's session if its key is above `floor` and it is not
        running (running ones are parked), else -1."""
        cdef long long c
        cdef long long[::1] running = self.st.m_running
        while h.n:
            if self._stale(tier, h.a[0], h.b[0], h.c[0]):
                h.pop()
                continue
            if -h.a[0] <= floor:
                return -1
            c = h.c[0]
            if running[c]:
                parked.park(c, h.a[0], h.b[0])
                h.pop()
                continue
            return c
        return -1


cdef class PolicyRecompute(Placement):
    def __init__(self, StoreState st, str name):
        Placement.__init__(self, st, name)
        self.stores = False


cdef class PolicyOrdered(Placement):
    """lru (recency) and fifo (insertion order), per tier: kvviz/serving/eviction/{lru,fifo}.py
    with running sessions as pins (placement/base.EvictionPlacement)."""
    cdef bint recency
    cdef StList dram, ssd

    def __init__(self, StoreState st, str name, bint recency):
        Placement.__init__(self, st, name)
        self.recency = recency
        n = st.m_key.shape[0]
        self.dram, self.ssd = StList(n), StList(n)

    cdef inline StList _order(self, int tier):
        return self.dram if tier == ST_DRAM else self.ssd

    cdef void on_insert(self, int tier, long long c):
        self._order(tier).append(c)

    cdef void on_remove(self, int tier, long long c):
        self._order(tier).remove(c)

    cdef void on_hit(self, long long c):
        if self.recency and self.dram.has(c):
            self.dram.to_end(c)

    cdef void on_resave(self, long long c):
        self.on_hit(c)

    cdef void on_access(self, int tier, long long c):
        cdef StList o = self._order(tier)
        if self.recency and o.has(c):
            o.to_end(c)

    cdef long long victim(self, int tier, long long before):
        return self._order(tier).first_free(self.st.m_running)


cdef class PolicyBelady(Placement):
    """kvviz/serving/eviction/belady.py with ties="calls", as placement/belady.py runs it: per tier
    a max-heap of (-next arrival, version, session), the version counting the calls about the
    session (its "calls"), running sessions parked as pins, `before`: victim_after."""
    cdef StHeap h1, h2
    cdef StParked p1, p2
    cdef long long[::1] ver1, ver2, mem1, mem2

    def __init__(self, StoreState st, str name):
        Placement.__init__(self, st, name)
        self.prefetches = True
        n = st.m_key.shape[0]
        self.h1, self.h2 = StHeap(), StHeap()
        self.p1, self.p2 = StParked(n), StParked(n)
        self.ver1, self.ver2, self.mem1, self.mem2 = st_i64(n, 0), st_i64(n, 0), st_i64(n, 0), st_i64(n, 0)

    cdef void on_done(self, long long c):
        self.p1.unpark(self.h1, c)
        self.p2.unpark(self.h2, c)

    cdef void on_insert(self, int tier, long long c):
        if tier == ST_DRAM:
            self.mem1[c] = 1
            self.ver1[c] += 1
            self.h1.push(-self.st.m_next_time[c], self.ver1[c], c)
        else:
            self.mem2[c] = 1
            self.ver2[c] += 1
            self.h2.push(-self.st.m_next_time[c], self.ver2[c], c)

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

    cdef bint _stale(self, int tier, long long a, long long b, long long c):
        return b != (self.ver1[c] if tier == ST_DRAM else self.ver2[c])

    cdef long long victim(self, int tier, long long before):
        cdef long long limit = self.st.m_next_time[before] if before >= 0 else -1
        if tier == ST_DRAM:
            return self._furthest(tier, self.h1, self.p1, limit)
        return self._furthest(tier, self.h2, self.p2, limit)


cdef class PolicySchedulerAware(Placement):
    """placement/scheduler_aware.py: per tier the unprotected sessions in LRU order, the protected
    in a max-heap by list position (-key, c), and a min-heap (key, c) of unprotected ones with a
    listed next job, moved over as the window's end passes them."""
    cdef long long[::1] mem1, mem2
    cdef StList un1, un2
    cdef StHeap prot1, prot2, pend1, pend2
    cdef StParked p1, p2

    def __init__(self, StoreState st, str name):
        Placement.__init__(self, st, name)
        self.prefetches = True
        n = st.m_key.shape[0]
        self.mem1, self.mem2 = st_i64(n, 0), st_i64(n, 0)
        self.un1, self.un2 = StList(n), StList(n)
        self.prot1, self.prot2, self.pend1, self.pend2 = StHeap(), StHeap(), StHeap(), StHeap()
        self.p1, self.p2 = StParked(n), StParked(n)

    cdef void _place(self, int tier, long long c):
        cdef long long k = self.st.m_key[c]
        cdef StList un = self.un1 if tier == ST_DRAM else self.un2
        if k < self.st.lo + self.st.L_ew:
            un.remove(c)
            (self.prot1 if tier == ST_DRAM else self.prot2).push(-k, 0, c)
        else:
            un.append(c)
            if k < ST_INF:
                (self.pend1 if tier == ST_DRAM else self.pend2).push(k, 0, c)

    cdef void on_insert(self, int tier, long long c):
        cdef StList un = self.un1 if tier == ST_DRAM else self.un2
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
        self.p1.unpark(self.prot1, c)
        self.p2.unpark(self.prot2, c)

    cdef void on_access(self, int tier, long long c):
        cdef StList un = self.un1 if tier == ST_DRAM else self.un2
        if un.has(c):
            un.to_end(c)

    cdef void on_hit(self, long long c):
        self.on_access(ST_DRAM, c)

    cdef void on_resave(self, long long c):
        self.on_access(ST_DRAM, c)

    cdef bint _stale(self, int tier, long long a, long long b, long long c):
        cdef long long[::1] mem = self.mem1 if tier == ST_DRAM else self.mem2
        cdef StList un = self.un1 if tier == ST_DRAM else self.un2
        return not mem[c] or self.st.m_key[c] != -a or un.has(c)

    cdef long long victim(self, int tier, long long before):
        cdef StoreState st = self.st
        cdef long long[::1] key = st.m_key
        cdef long long limit = st.lo + st.L_ew, k, c
        cdef StList un = self.un1 if tier == ST_DRAM else self.un2
        cdef StHeap pend = self.pend1 if tier == ST_DRAM else self.pend2
        cdef StHeap prot = self.prot1 if tier == ST_DRAM else self.prot2
        while pend.n and pend.a[0] < limit:  # the window's end moved past them
            k, c = pend.a[0], pend.c[0]
            pend.pop()
            if un.has(c) and key[c] == k:
                un.remove(c)
                prot.push(-k, 0, c)
        c = un.first_free(st.m_running)  # unprotected, least recently used first
        if c >= 0:
            return c
        # All protected: the furthest-future one, and for a prefetch only one listed behind it.
        return self._furthest(tier, prot, self.p1 if tier == ST_DRAM else self.p2,
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
