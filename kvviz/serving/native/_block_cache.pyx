# cython: language_level=3
"""The compiled twin of kvviz/serving/tiered_cache.py's TieredCache for the policies that have one
(lru, fifo, belady: each tier's `kind`): the same rules, step for step, over C arrays of dense
block ids. The Python class stays the definition; tests hold the two equal on random streams
(tests/test_block_cache_twin.py). Which runs: tiered_cache.make_cache, and the loader in
__init__.py (a missing or stale build runs the Python cache, and the run's notes say so).

Each tier's policy is policies.pxi's (the compiled lru, fifo and belady, written once: AttentionStore's
engine includes the same file): lru and fifo an Order, belady a Furthest. Blocks are dense ids
0..U-1 (tiered_cache.compiled_cache maps a stream's ids onto them, in order, so every tie breaks as
the Python cache breaks it); a request is a range of positions."""

from cpython.mem cimport PyMem_Calloc, PyMem_Free
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.string cimport memset

include "policies.pxi"

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

cdef enum:
    MAXK = 16          # tiers
    LRU = 0            # the policies with a compiled twin (a tier's `kind`)
    FIFO = 1
    BELADY = 2

KINDS = {"lru": LRU, "fifo": FIFO, "belady": BELADY}


cdef struct Clairvoyant:         # what a belady tier's stale rule reads (belady.py's `stale`)
    const uint8_t* state         # block -> resident in this tier
    const int64_t* nu            # block -> its next use


cdef bint _stale(const void* ctx, const Entry* e) noexcept nogil:
    cdef const Clairvoyant* c = <const Clairvoyant*> ctx
    return c.state[e.b] == 0 or -e.key != c.nu[e.b]


cdef void* _alloc(size_t n) except NULL:
    # zeroed by calloc: a large array comes as fresh zero pages, each faulted in when first
    # touched (a tier or state the run never uses costs nothing; 16 instances' caches were ~40 ms)
    cdef void* p = PyMem_Calloc(n if n else 1, 1)
    if p == NULL:
        raise MemoryError()
    return p


cdef class BlockCache:
    cdef readonly int K
    cdef readonly int U
    cdef int64_t N
    cdef int32_t* pid          # position -> block (the stream's array, read in place)
    cdef int64_t* ptok         # position -> tokens (likewise)
    cdef object streams        # the buffers pid and ptok point into, held
    cdef int64_t* pnext        # position -> next position with its block (clairvoyant tiers)
    cdef int64_t* plater       # position -> later positions with its block (min_reuse)
    cdef uint8_t* where        # block -> bit mask of the tiers holding it
    cdef int32_t* prv          # per (tier, block): the tier's Order's links and states
    cdef int32_t* nxt
    cdef uint8_t* state        # per (tier, block): 0 not resident, 1 resident, 2 set aside (pinned)
    cdef Order order[MAXK]     # lru and fifo tiers
    cdef Furthest clair[MAXK]  # belady tiers
    cdef Clairvoyant cctx[MAXK]
    cdef Pins pinning[MAXK]    # what pins a block in each tier
    cdef int64_t* nu           # block -> next use (clairvoyant tiers)
    cdef int32_t* pins         # block -> running requests holding it in HBM
    cdef uint8_t* prot         # block -> protected (prefetch's look-ahead)
    cdef uint8_t* seen         # block -> asked for before (second_hit)
    cdef int32_t* plist        # the protected blocks (n_prot of them), to clear
    cdef int kind[MAXK]
    cdef int64_t caps[MAXK]
    cdef int64_t _size[MAXK]
    cdef int64_t _peak[MAXK]
    cdef int64_t _hit_blocks[MAXK]
    cdef int64_t _hit_tokens[MAXK]
    cdef int64_t _hit_req[MAXK]
    cdef int64_t _written[MAXK]
    cdef int64_t _demoted[MAXK]
    cdef int64_t _evicted[MAXK]
    cdef bint move, through, pin_top, protect_on, second_hit, min_reuse_on, any_clairvoyant
    cdef int64_t min_reuse
    cdef int64_t n_prot
    cdef readonly int64_t pos
    cdef public object on_evict
    cdef public object ids         # position -> block, as a list (the caller's view of the stream)
    cdef public object block_ids   # block -> the stream's own id
    cdef object held               # request -> its position ranges (pinned)

    def __cinit__(self, const int32_t[::1] pid, const int64_t[::1] ptok, caps, kinds, *, bint move=False,
                  bint through=False, admission="always", min_reuse=1, bint pin_top=True, bint protect=False,
                  const int64_t[::1] pnext=None, const int64_t[::1] plater=None, int n_blocks=0):
        cdef int64_t i, base
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
        for k in range(self.K):
            base = <int64_t> k * self.U
            order_init(&self.order[k], self.prv + base, self.nxt + base, self.state + base, self.kind[k] == LRU)
            self.cctx[k].state = self.state + base
            self.cctx[k].nu = self.nu
            # a running request pins its blocks in HBM only (pin_top); protection holds in every tier
            self.pinning[k].holders = self.pins if k == 0 and pin_top else NULL
            self.pinning[k].running = NULL
            self.pinning[k].protect = self.prot if protect else NULL
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
            furthest_free(&self.clair[k])

    # --- one tier's policy (policies.pxi) ---------------------------------------------------------
    cdef int _insert(self, int k, int32_t b) except -1:
        if self.kind[k] == BELADY:
            self.state[<int64_t> k * self.U + b] = 1
            return heap_push(&self.clair[k].heap, -self.nu[b], 0, b)
        order_insert(&self.order[k], b)
        return 0

    cdef int _touch(self, int k, int32_t b) except -1:
        """A use (lru: to the end of the order; fifo: nothing); for belady, its next use changed."""
        if self.kind[k] == BELADY:
            return heap_push(&self.clair[k].heap, -self.nu[b], 0, b)
        order_touch(&self.order[k], b)
        return 0

    cdef void _remove(self, int k, int32_t b) noexcept:
        if self.kind[k] == BELADY:
            self.state[<int64_t> k * self.U + b] = 0  # its entries are stale from now
        else:
            order_remove(&self.order[k], b)

    cdef int32_t _victim(self, int k) except -2:
        """A resident block not pinned, or −1 (every one pinned): the policy's first."""
        if self.kind[k] == BELADY:
            return furthest_victim(&self.clair[k], &self.pinning[k], _stale, &self.cctx[k], NO_FLOOR)
        return order_victim(&self.order[k], &self.pinning[k])

    cdef int _unpin(self, int k) except -1:
        if self.kind[k] == BELADY:
            return furthest_unpin(&self.clair[k])
        order_unpin(&self.order[k])
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
