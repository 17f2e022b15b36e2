# cython: language_level=3
"""The compiled twin of kvviz/serving/tiered_cache.py's TieredCache for the policies that have one
(lru, fifo, belady: each tier's `kind`): the same rules, step for step, over C arrays of dense
block ids. The Python class stays the definition; tests hold the two equal on random streams
(tests/test_block_cache_twin.py). Which runs: tiered_cache.make_cache, and the loader in
__init__.py (a missing or stale build runs the Python cache, and the run's notes say so).

Per tier, lru and fifo keep an intrusive doubly linked list (the order, oldest first) and a
second one of the pinned blocks a victim search set aside (lru.py's `held`: all of them precede
the order, so `unpin` splices it back in front); belady keeps base.py's lazy heap of
(−next use, block) entries, stale ones dropped when they reach the top."""

from cpython.mem cimport PyMem_Calloc, PyMem_Free, PyMem_Realloc
from libc.string cimport memset

# setup.py's hash of this folder's sources (sources.py), which the loader compares with the files
# beside it; "" where built some other way (the loader then refuses it)
cdef extern from *:
    """
    #ifndef KVVIZ_SOURCE_HASH
    #define KVVIZ_SOURCE_HASH ""
    #endif
    """
    const char *KVVIZ_SOURCE_HASH
SOURCE_HASH = KVVIZ_SOURCE_HASH.decode("ascii")

KINDS = {"lru": LRU, "fifo": FIFO, "belady": BELADY}


cdef void* _alloc(size_t n) except NULL:
    # zeroed by calloc: a large array comes as fresh zero pages, each faulted in when first
    # touched (a tier or state the run never uses costs nothing; 16 instances' caches were ~40 ms)
    cdef void* p = PyMem_Calloc(n if n else 1, 1)
    if p == NULL:
        raise MemoryError()
    return p


cdef inline bint _lt(Entry* x, Entry* y) noexcept:
    return x.key < y.key or (x.key == y.key and x.b < y.b)


cdef int _hpush(Heap* h, int64_t key, int32_t b) except -1:
    cdef Entry* a
    cdef int64_t i, p
    cdef Entry e
    if h.n == h.cap:
        h.cap = h.cap * 2 if h.cap else 64
        a = <Entry*> PyMem_Realloc(h.a, h.cap * sizeof(Entry))
        if a == NULL:
            raise MemoryError()
        h.a = a
    e.key, e.b = key, b
    i = h.n
    h.n += 1
    while i > 0:
        p = (i - 1) >> 1
        if not _lt(&e, &h.a[p]):
            break
        h.a[i] = h.a[p]
        i = p
    h.a[i] = e
    return 0


cdef Entry _hpop(Heap* h) noexcept:
    cdef Entry top = h.a[0]
    cdef Entry last
    cdef int64_t i = 0, c, n
    h.n -= 1
    n = h.n
    if n:
        last = h.a[n]
        while True:
            c = 2 * i + 1
            if c >= n:
                break
            if c + 1 < n and _lt(&h.a[c + 1], &h.a[c]):
                c += 1
            if not _lt(&h.a[c], &last):
                break
            h.a[i] = h.a[c]
            i = c
        h.a[i] = last
    return top


cdef class BlockCache:
    def __cinit__(self, const int32_t[::1] pid, const int64_t[::1] ptok, caps, kinds, *, bint move=False,
                  bint through=False, admission="always", min_reuse=1, bint pin_top=True, bint protect=False,
                  const int64_t[::1] pnext=None, const int64_t[::1] plater=None, int n_blocks=0):
        cdef int64_t i
        cdef int k
        self.K = len(caps)
        if not 0 < self.K <= MAXK:
            raise ValueError(f"between 1 and {MAXK} tiers")
        self.N = pid.shape[0]
        self.U = n_blocks
        if ptok.shape[0] != self.N:
            raise ValueError("pid and ptok differ in length")
        # the stream's arrays read in place, never written (the cluster's instances share them):
        # their buffers are held for the cache's life
        self.streams = (pid, ptok)
        self.pid = <int32_t*> &pid[0] if self.N else NULL
        self.ptok = <int64_t*> &ptok[0] if self.N else NULL
        for i in range(self.N):
            if not 0 <= self.pid[i] < self.U:
                raise ValueError("a block id outside 0..n_blocks-1")
        self.any_clairvoyant = False
        for k in range(self.K):
            self.kind[k] = kinds[k]
            self.caps[k] = caps[k]
            self.any_clairvoyant |= self.kind[k] == BELADY
            self.head[2 * k] = self.head[2 * k + 1] = self.tail[2 * k] = self.tail[2 * k + 1] = -1
        if self.any_clairvoyant:
            if pnext is None:
                raise ValueError("belady needs each position's next position")
            self.pnext = <int64_t*> _alloc(self.N * sizeof(int64_t))
            for i in range(self.N):
                self.pnext[i] = pnext[i]
        self.min_reuse_on = plater is not None  # as the Python cache: given later counts, min_reuse applies
        self.min_reuse = min_reuse
        if self.min_reuse_on:
            self.plater = <int64_t*> _alloc(self.N * sizeof(int64_t))
            for i in range(self.N):
                self.plater[i] = plater[i]
        self.second_hit = admission == "second_hit"
        self.move, self.through, self.pin_top, self.protect_on = move, through, pin_top, protect
        n = <size_t> self.U
        self.where = <uint8_t*> _alloc(n)
        self.prv = <int32_t*> _alloc(self.K * n * sizeof(int32_t))
        self.nxt = <int32_t*> _alloc(self.K * n * sizeof(int32_t))
        self.state = <uint8_t*> _alloc(self.K * n)
        self.nu = <int64_t*> _alloc(n * sizeof(int64_t))
        self.pins = <int32_t*> _alloc(n * sizeof(int32_t))
        self.prot = <uint8_t*> _alloc(n)
        self.seen = <uint8_t*> _alloc(n)
        self.plist = <int32_t*> _alloc(n * sizeof(int32_t))
        self.held = {}
        self.on_evict = None

    def __dealloc__(self):
        PyMem_Free(self.pnext)
        PyMem_Free(self.plater)
        PyMem_Free(self.where)
        PyMem_Free(self.prv)
        PyMem_Free(self.nxt)
        PyMem_Free(self.state)
        PyMem_Free(self.nu)
        PyMem_Free(self.pins)
        PyMem_Free(self.prot)
        PyMem_Free(self.seen)
        PyMem_Free(self.plist)
        for k in range(self.K):
            PyMem_Free(self.heap[k].a)
            PyMem_Free(self.aside[k].a)

    # --- one tier's policy (lru.py, fifo.py, belady.py's rules) -------------------------------------
    cdef inline bint _pinned(self, int k, int32_t b) noexcept:
        return (k == 0 and self.pin_top and self.pins[b] > 0) or (self.protect_on and self.prot[b] != 0)

    cdef inline void _push(self, int k, int L, int32_t b) noexcept:
        """b to the end of tier k's list L (0: the order, 1: set aside)."""
        cdef int64_t base = <int64_t> k * self.U
        cdef int32_t t = self.tail[2 * k + L]
        self.prv[base + b] = t
        self.nxt[base + b] = -1
        if t != -1:
            self.nxt[base + t] = b
        else:
            self.head[2 * k + L] = b
        self.tail[2 * k + L] = b
        self.state[base + b] = L + 1

    cdef inline void _unlink(self, int k, int32_t b) noexcept:
        cdef int64_t base = <int64_t> k * self.U
        cdef int L = self.state[base + b] - 1
        cdef int32_t p = self.prv[base + b], q = self.nxt[base + b]
        if p != -1:
            self.nxt[base + p] = q
        else:
            self.head[2 * k + L] = q
        if q != -1:
            self.prv[base + q] = p
        else:
            self.tail[2 * k + L] = p
        self.state[base + b] = 0

    cdef int _heap_push(self, Heap* h, int64_t key, int32_t b) except -1:
        return _hpush(h, key, b)

    cdef int _insert(self, int k, int32_t b) except -1:
        if self.kind[k] == BELADY:
            self.state[<int64_t> k * self.U + b] = 1
            return _hpush(&self.heap[k], -self.nu[b], b)
        self._push(k, 0, b)
        return 0

    cdef int _touch(self, int k, int32_t b) except -1:
        """A use (lru: to the end of the order, from the set-aside list too; fifo: nothing); for
        belady, its next use changed."""
        if self.kind[k] == BELADY:
            return _hpush(&self.heap[k], -self.nu[b], b)
        if self.kind[k] == LRU:
            self._unlink(k, b)
            self._push(k, 0, b)
        return 0

    cdef void _remove(self, int k, int32_t b) noexcept:
        if self.kind[k] == BELADY:
            self.state[<int64_t> k * self.U + b] = 0  # its entries are stale from now
        else:
            self._unlink(k, b)

    cdef int32_t _victim(self, int k) except -2:
        """A resident block not pinned, or −1 (every one pinned): the policy's first; pinned ones
        met on the way are set aside until `_unpin` (pins only grow until then)."""
        cdef int32_t b
        cdef Heap* h
        cdef Entry top
        cdef int64_t base = <int64_t> k * self.U
        if self.kind[k] == BELADY:
            h = &self.heap[k]
            while h.n:
                top = h.a[0]
                if self.state[base + top.b] == 0 or -top.key != self.nu[top.b]:
                    _hpop(h)
                elif self._pinned(k, top.b):
                    _hpush(&self.aside[k], top.key, top.b)
                    _hpop(h)
                else:
                    return top.b
            return -1
        b = self.head[2 * k]
        while b != -1:
            if not self._pinned(k, b):
                return b
            self._unlink(k, b)
            self._push(k, 1, b)
            b = self.head[2 * k]
        return -1

    cdef int _unpin(self, int k) except -1:
        """Pins went: the set-aside blocks go back in front of the order, in their order (belady:
        their entries back on the heap)."""
        cdef int32_t hh = self.head[2 * k + 1], ht = self.tail[2 * k + 1], oh = self.head[2 * k], b
        cdef int64_t base = <int64_t> k * self.U
        cdef Heap* a
        if self.kind[k] == BELADY:
            a = &self.aside[k]
            while a.n:
                a.n -= 1
                _hpush(&self.heap[k], a.a[a.n].key, a.a[a.n].b)
            return 0
        if hh == -1:
            return 0
        b = hh
        while b != -1:
            self.state[base + b] = 1
            b = self.nxt[base + b]
        self.nxt[base + ht] = oh
        if oh != -1:
            self.prv[base + oh] = ht
        else:
            self.tail[2 * k] = ht
        self.head[2 * k] = hh
        self.head[2 * k + 1] = self.tail[2 * k + 1] = -1
        return 0

    # --- the cache's moves (tiered_cache.py's) ------------------------------------------------------
    cdef inline int _use(self, int k, int32_t b) except -1:
        if self.kind[k] != BELADY:  # a clairvoyant tier was told of the use as the step began
            self._touch(k, b)
        return 0

    cdef int _drop(self, int k, int32_t b) except -1:
        self._remove(k, b)
        self._size[k] -= 1
        self.where[b] &= ~(1 << k)
        return self.where[b]

    cdef int _place(self, int k, int32_t b) except -1:
        cdef int32_t v
        cdef int m
        cdef bint cascade
        while True:
            cascade = False
            if self._size[k] >= self.caps[k]:
                v = self._victim(k)
                if v != -1 and self.kind[k] == BELADY and self.nu[b] >= self.nu[v]:
                    v = -1  # b's own next use is the farthest: b is left out
                if v == -1:  # every block here is pinned (or b is the victim): not kept here
                    if not self.through and k + 1 < self.K and not (self.where[b] >> (k + 1)):
                        self._demoted[k + 1] += 1
                        k += 1
                        continue
                    return 0
                self._evicted[k] += 1
                if self.on_evict is not None:
                    self.on_evict(k, v)
                self._remove(k, v)
                self._size[k] -= 1
                m = self.where[v] & ~(1 << k)
                self.where[v] = m
                cascade = not self.through and k + 1 < self.K and not (m >> (k + 1))
            self._insert(k, b)
            self.where[b] |= 1 << k
            self._size[k] += 1
            self._written[k] += 1
            if self._size[k] > self._peak[k]:
                self._peak[k] = self._size[k]
            if not cascade:
                return 0
            self._demoted[k + 1] += 1
            b, k = v, k + 1

    cdef int _place_request(self, int64_t s, int64_t e, int64_t h, int* src) except -1:
        cdef int64_t j
        cdef int32_t b
        cdef int k, m
        for j in range(s, e):
            self.pos = j
            b = self.pid[j]
            self.pins[b] += 1
            m = self.where[b]
            if self.any_clairvoyant:
                self.nu[b] = self.pnext[j]
                for k in range(self.K):
                    if self.kind[k] == BELADY and m >> k & 1:
                        self._touch(k, b)
            if m & 1:
                if self.kind[0] != BELADY:
                    self._touch(0, b)
                continue
            if j - s < h:  # a hit below HBM: promoted
                k = src[j - s]
                if m >> k & 1:  # still there (a step of this request may have pushed it out)
                    if self.move:
                        self._drop(k, b)
                    elif self.kind[k] != BELADY:
                        self._touch(k, b)
            elif (self.second_hit and not self.seen[b]) or (self.min_reuse_on and self.plater[j] < self.min_reuse):
                continue  # a miss not admitted: computed, not cached
            self._place(0, b)
            if self.through:
                for k in range(1, self.K):
                    if self.where[b] >> k & 1:
                        self._use(k, b)
                    else:
                        self._place(k, b)
        if self.second_hit:
            for j in range(s, e):
                self.seen[self.pid[j]] = 1
        return 0

    # --- the interface (tiered_cache.py's) -----------------------------------------------------------
    def lookup(self, int64_t s, int64_t e, queued=None, take=None):
        cdef list src = []
        cdef int64_t p = s
        cdef int32_t b
        cdef int m, k
        cdef bint q = bool(queued)
        cdef uint8_t seen_k[MAXK]
        memset(seen_k, 0, sizeof(seen_k))
        while p < e:
            b = self.pid[p]
            m = self.where[b]
            if not m:
                break
            k = 0
            while not (m >> k & 1):
                k += 1
            if q and b in queued:
                k = take(b)
            src.append(k)
            seen_k[k] = 1
            self._hit_blocks[k] += 1
            self._hit_tokens[k] += self.ptok[p]
            p += 1
        for k in range(self.K):
            if seen_k[k]:
                self._hit_req[k] += 1
        return src

    def matched(self, blocks):
        out = [0] * self.K
        cdef int m, k
        for b in blocks:
            m = self.where[<int32_t> b]
            if not m:
                break
            k = 0
            while not (m >> k & 1):
                k += 1
            out[k] += 1
        return out

    def place_request(self, r, int64_t s, int64_t e, int64_t h, src):
        cdef int buf[256]
        cdef int* a = buf
        cdef int64_t i
        if h > 256:
            a = <int*> _alloc(h * sizeof(int))
        try:
            for i in range(h):
                a[i] = src[i]
            self.held.setdefault(r, []).append((s, e))  # pinned one by one below, as reached
            self._place_request(s, e, h, a)
        finally:
            if a != buf:
                PyMem_Free(a)

    def finish(self, r):
        cdef int64_t j, s, e
        for s, e in self.held.pop(r, ()):
            for j in range(s, e):
                self.pins[self.pid[j]] -= 1
        self.unpin()

    def unpin(self):
        for k in range(self.K):
            self._unpin(k)

    def set_protect(self, blocks):
        cdef int64_t old = self.n_prot
        cdef int32_t b
        self._clear_protect()
        for b in blocks:
            self._protect(b)
        if old:
            self.unpin()

    def protect_ranges(self, ranges):
        """set_protect over the blocks at positions s..e-1 of each (s, e)."""
        cdef int64_t old = self.n_prot, s, e, p
        self._clear_protect()
        for s, e in ranges:
            for p in range(s, e):
                self._protect(self.pid[p])
        if old:
            self.unpin()

    cdef inline void _protect(self, int32_t b) noexcept:
        if not self.prot[b]:
            self.prot[b] = 1
            self.plist[self.n_prot] = b
            self.n_prot += 1

    cdef void _clear_protect(self) noexcept:
        cdef int64_t i
        for i in range(self.n_prot):
            self.prot[self.plist[i]] = 0
        self.n_prot = 0

    def use(self, int k, int32_t b):
        self._use(k, b)

    def drop(self, int k, int32_t b):
        return self._drop(k, b)

    def place(self, int k, int32_t b):
        self._place(k, b)

    def set_cap(self, int k, int64_t n):
        """tiered_cache.TieredCache.set_cap."""
        cdef int32_t v
        cdef int m
        self.caps[k] = n
        while self._size[k] > n:
            v = self._victim(k)
            if v == -1:
                return 0
            self._evicted[k] += 1
            if self.on_evict is not None:
                self.on_evict(k, v)
            self._remove(k, v)
            self._size[k] -= 1
            m = self.where[v] & ~(1 << k)
            self.where[v] = m
            if not self.through and k + 1 < self.K and not (m >> (k + 1)):
                self._demoted[k + 1] += 1
                self._place(k + 1, v)
        return 0

    def original(self, int32_t b):
        """The stream's own id of block b."""
        return self.block_ids[b]

    def mask(self, int32_t b):
        return self.where[b]

    def copy_up(self, int64_t s, int64_t e, int t):
        """tiered_cache.TieredCache.copy_up."""
        fetch = {}
        cdef int64_t p
        cdef int32_t b
        cdef int m, k
        for p in range(s, e):
            b = self.pid[p]
            m = self.where[b]
            if not m:
                break
            k = 0
            while not (m >> k & 1):
                k += 1
            if k <= t:
                continue
            if self.move:
                self._drop(k, b)
            else:
                self._use(k, b)
            self._place(t, b)
            blocks = fetch.get(k)
            if blocks is None:
                fetch[k] = blocks = []
            blocks.append(b)
        return fetch

    def occupancy(self):
        return [self._size[k] for k in range(self.K)]

    @property
    def size(self):
        return [self._size[k] for k in range(self.K)]

    @property
    def peak(self):
        return [self._peak[k] for k in range(self.K)]

    @property
    def hit_blocks(self):
        return [self._hit_blocks[k] for k in range(self.K)]

    @property
    def hit_tokens(self):
        return [self._hit_tokens[k] for k in range(self.K)]

    @property
    def hit_req(self):
        return [self._hit_req[k] for k in range(self.K)]

    @property
    def written(self):
        return [self._written[k] for k in range(self.K)]

    @property
    def demoted(self):
        return [self._demoted[k] for k in range(self.K)]

    @property
    def evicted(self):
        return [self._evicted[k] for k in range(self.K)]


def resident_prefixes(list caches, int64_t s, int64_t e):
    """For each cache (all over the same stream): how many leading positions of s..e-1 have their
    block resident in some tier, sum(cache.matched(ids[s:e])), for all of them in one call (a
    cluster's router asks it of every instance for each request)."""
    cdef BlockCache c
    cdef int64_t p
    out = []
    for c in caches:
        if not 0 <= s <= e <= c.N:
            raise IndexError("positions outside the stream")
        p = s
        while p < e and c.where[c.pid[p]]:
            p += 1
        out.append(p - s)
    return out
