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

cimport cython
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
    const Link* link             # block -> its state in this tier (nonzero: resident)
    const int64_t* nu            # block -> its next use


cdef bint _stale(const void* ctx, const Entry* e) noexcept nogil:
    cdef const Clairvoyant* c = <const Clairvoyant*> ctx
    return c.link[e.b].state == 0 or -e.key != c.nu[e.b]


cdef void* _alloc(size_t n) except NULL:
    # zeroed by calloc: a large array comes as fresh zero pages, each faulted in when first
    # touched (a tier or state the run never uses costs nothing; 16 instances' caches were ~40 ms)
    cdef void* p = PyMem_Calloc(n if n else 1, 1)
    if p == NULL:
        raise MemoryError()
    return p


@cython.final  # no subclass: its cdef methods are plain C calls the compiler can inline
cdef class BlockCache:
    cdef readonly int K
    cdef readonly int U
    cdef int64_t N
    cdef int32_t* pid          # position -> block (the stream's array, read in place)
    cdef int64_t* ptok         # position -> tokens (likewise; NULL: not counted)
    cdef object streams        # the buffers pid and ptok point into, held
    cdef int64_t* pnext        # position -> next position with its block (clairvoyant tiers)
    cdef int64_t* plater       # position -> later positions with its block (min_reuse)
    cdef Link* links           # per (tier, block): its place in the tier's Order (belady: state only);
                               # tier 0's (the first U) keep each block's pins, tiers (`where`) and seen
    cdef Order order[MAXK]     # lru and fifo tiers
    cdef Furthest clair[MAXK]  # belady tiers
    cdef Clairvoyant cctx[MAXK]
    cdef Pins pinning[MAXK]    # what pins a block in each tier
    cdef int64_t* nu           # block -> next use (clairvoyant tiers)
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
        if ptok is not None and ptok.shape[0] != self.N:
            raise ValueError("pid and ptok differ in length")
        # the stream's arrays read in place, never written (the cluster's instances share them):
        # their buffers are held for the cache's life
        self.streams = (pid, ptok)
        self.pid = <int32_t*> &pid[0] if self.N else NULL
        self.ptok = <int64_t*> &ptok[0] if self.N and ptok is not None else NULL
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
        self.links = <Link*> _alloc(self.K * n * sizeof(Link))
        self.nu = <int64_t*> _alloc(n * sizeof(int64_t))
        self.plist = <int32_t*> _alloc(n * sizeof(int32_t))
        for k in range(self.K):
            base = <int64_t> k * self.U
            order_init(&self.order[k], self.links + base, self.kind[k] == LRU)
            self.cctx[k].link = self.links + base
            self.cctx[k].nu = self.nu
            # a running request pins its blocks in HBM only (pin_top); protection holds in every tier
            self.pinning[k].keys = self.links  # tier 0's Links keep every block's pins
            self.pinning[k].holders = k == 0 and pin_top
            self.pinning[k].protect = protect
            self.pinning[k].running = NULL
        self.held = {}
        self.on_evict = None

    def __dealloc__(self):
        PyMem_Free(self.pnext)
        PyMem_Free(self.plater)
        PyMem_Free(self.links)
        PyMem_Free(self.nu)
        PyMem_Free(self.plist)
        for k in range(self.K):
            furthest_free(&self.clair[k])

    # --- one tier's policy (policies.pxi) ---------------------------------------------------------
    cdef inline int _insert(self, int k, int32_t b) except -1:
        if self.kind[k] == BELADY:
            self.links[<int64_t> k * self.U + b].state = 1
            return heap_push(&self.clair[k].heap, -self.nu[b], 0, b)
        order_insert(&self.order[k], b)
        return 0

    cdef inline int _touch(self, int k, int32_t b) except -1:
        """A use (lru: to the end of the order; fifo: nothing); for belady, its next use changed."""
        if self.kind[k] == BELADY:
            return heap_push(&self.clair[k].heap, -self.nu[b], 0, b)
        order_touch(&self.order[k], b)
        return 0

    cdef inline void _remove(self, int k, int32_t b) noexcept:
        if self.kind[k] == BELADY:
            self.links[<int64_t> k * self.U + b].state = 0  # its entries are stale from now
        else:
            order_remove(&self.order[k], b)

    cdef inline int32_t _victim(self, int k) except -2:
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
        self.links[b].where &= ~(1 << k)
        return self.links[b].where

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
                    if not self.through and k + 1 < self.K and not (self.links[b].where >> (k + 1)):
                        self._demoted[k + 1] += 1
                        k += 1
                        continue
                    return 0
                self._evicted[k] += 1
                if self.on_evict is not None:
                    self.on_evict(k, v)
                self._remove(k, v)
                self._size[k] -= 1
                m = self.links[v].where & ~(1 << k)
                self.links[v].where = m
                cascade = not self.through and k + 1 < self.K and not (m >> (k + 1))
            self._insert(k, b)
            self.links[b].where |= 1 << k
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
            self.links[b].holders += 1
            m = self.links[b].where
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
            elif (self.second_hit and not self.links[b].seen) or (self.min_reuse_on and self.plater[j] < self.min_reuse):
                continue  # a miss not admitted: computed, not cached
            self._place(0, b)
            if self.through:
                for k in range(1, self.K):
                    if self.links[b].where >> k & 1:
                        self._use(k, b)
                    else:
                        self._place(k, b)
        if self.second_hit:
            for j in range(s, e):
                self.links[self.pid[j]].seen = 1
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
            m = self.links[b].where
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
            if self.ptok != NULL:
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
            m = self.links[<int32_t> b].where
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
                self.links[self.pid[j]].holders -= 1
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
        if not self.links[b].protect:
            self.links[b].protect = 1
            self.plist[self.n_prot] = b
            self.n_prot += 1

    cdef void _clear_protect(self) noexcept:
        cdef int64_t i
        for i in range(self.n_prot):
            self.links[self.plist[i]].protect = 0
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
            m = self.links[v].where & ~(1 << k)
            self.links[v].where = m
            if not self.through and k + 1 < self.K and not (m >> (k + 1)):
                self._demoted[k + 1] += 1
                self._place(k + 1, v)
        return 0

    def original(self, int32_t b):
        """The stream's own id of block b."""
        return self.block_ids[b]

    def mask(self, int32_t b):
        return self.links[b].where

    def copy_up(self, int64_t s, int64_t e, int t):
        """tiered_cache.TieredCache.copy_up."""
        fetch = {}
        cdef int64_t p
        cdef int32_t b
        cdef int m, k
        for p in range(s, e):
            b = self.pid[p]
            m = self.links[b].where
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
        while p < e and c.links[c.pid[p]].where:
            p += 1
        out.append(p - s)
    return out


# --- `kvviz replay --prefix`'s pass: one tier, whole requests in turn, no Python per block ----------
# Links are int32: ids and requests stay below this (the caller checks ids with id_range; a trace
# beyond it takes the Python path)
MAX_INDEX = 2**31 - 2


@cython.boundscheck(False)  # as _prefix_pass
@cython.wraparound(False)
def id_range(const int64_t[:] ids):
    """(smallest, largest) id, or (0, -1) for none."""
    cdef Py_ssize_t i, n = ids.shape[0]
    cdef int64_t lo, hi, v
    if n == 0:
        return 0, -1
    lo = hi = ids[0]
    for i in range(1, n):
        v = ids[i]
        if v < lo:
            lo = v
        elif v > hi:
            hi = v
    return lo, hi


@cython.boundscheck(False)  # as _prefix_pass
@cython.wraparound(False)
def distinct(const int64_t[:] ids, int64_t k):
    """How many different ids there are; every id in [0, k)."""
    cdef Py_ssize_t i, n = ids.shape[0]
    cdef int64_t found = 0, v
    cdef uint8_t* seen = <uint8_t*> _alloc(k + 1)
    try:
        for i in range(n):
            v = ids[i]
            if v < 0 or v >= k:
                raise ValueError(f"block id {v} outside [0, {k})")
            if not seen[v]:
                seen[v] = 1
                found += 1
    finally:
        PyMem_Free(seen)
    return found


@cython.boundscheck(False)  # every index below runs over the arrays' own lengths
@cython.wraparound(False)
cdef (int64_t, int64_t) _one_tier(const int64_t[:] ids, const int64_t[:] counts, int64_t cap, bint pin,
                                  bint recency, Link* links) noexcept nogil:
    """(hit blocks, requests with a hit) of one tier under lru (recency) or fifo, requests in turn:
    the block cache's rules with one tier and no admission rule (BlockCache's lookup, then
    place_request's touch-or-place with _place's evict-then-insert, then finish), straight over
    the trace's int64 ids with one Link per block and no BlockCache around them: the replay's
    whole pass without a copy of its ids (tests hold it equal to BlockCache and to the Python
    cache on random streams). A request's leading resident blocks are its hits; each block it
    reaches is pinned (`pin`) until the request is done; a miss evicts the policy's victim once
    the tier holds `cap`, and is not kept when every resident block is pinned. `links` cleared."""
    cdef Order o
    cdef Pins pins
    cdef Py_ssize_t r, j = 0, s, e, p
    cdef int64_t size = 0, h, hit_blocks = 0, hit_requests = 0
    cdef int32_t b, v
    cdef Link* x
    cdef bint hitting
    order_init(&o, links, recency)
    pins.keys, pins.holders, pins.protect, pins.running = links, pin, False, NULL
    for r in range(counts.shape[0]):
        s = j
        e = j + counts[r]
        h = 0
        hitting = True
        while j < e:
            b = <int32_t> ids[j]
            j += 1
            x = &links[b]
            x.holders += 1
            if x.where:
                h += hitting
                order_touch(&o, b)
                continue
            hitting = False
            if size >= cap:
                v = order_victim(&o, &pins)
                if v == -1:
                    continue  # every resident block is pinned: b is computed, not kept
                order_remove(&o, v)
                links[v].where = 0
                size -= 1
            order_insert(&o, b)
            x.where = 1
            size += 1
        for p in range(s, e):
            links[ids[p]].holders -= 1
        order_unpin(&o)
        hit_blocks += h
        hit_requests += h > 0
    return hit_blocks, hit_requests


@cython.boundscheck(False)  # as _prefix_pass
@cython.wraparound(False)
def prefix_counts(const int64_t[:] ids, const int64_t[:] counts, capacities, bint pin, int64_t k, str policy="lru"):
    """[(hit blocks, requests with a hit)] of the single-tier prefix cache under `policy` (lru or
    fifo) at each capacity (blocks >= 1; None: infinite): `_one_tier`. `ids`: every request's
    block ids one after another, each in [0, k); `counts`: the ids per request; `pin`: a request
    holds the blocks it has reached. Takes any buffer of int64 (array.array('q') too: it imports
    nothing, so the lean `kvviz replay --prefix` runs without numpy)."""
    cdef Py_ssize_t i, n = ids.shape[0], R = counts.shape[0]
    cdef int64_t total = 0, v, c
    cdef Link* links
    cdef (int64_t, int64_t) got
    cdef bint recency = policy == "lru"
    if policy not in ("lru", "fifo"):
        raise ValueError(f"prefix_counts runs lru or fifo, not {policy!r}")
    if k > MAX_INDEX or R > MAX_INDEX or n > MAX_INDEX:
        raise ValueError(f"more than {MAX_INDEX:,} block ids, positions or requests")
    for i in range(R):
        if counts[i] < 0:
            raise ValueError("a negative count")
        total += counts[i]
    if total != n:
        raise ValueError(f"the counts add to {total:,}, not the {n:,} ids")
    for i in range(n):
        v = ids[i]
        if v < 0 or v >= k:
            raise ValueError(f"block id {v} outside [0, {k})")
    caps = []
    for cap in capacities:
        if cap is not None and cap < 1:
            raise ValueError(f"capacity {cap} < 1 block")
        caps.append(k + 1 if cap is None else cap)  # infinite: more room than there are blocks
    links = <Link*> _alloc((k + 1) * sizeof(Link))
    out = []
    try:
        for i, cap in enumerate(caps):
            if i:  # calloc's memory is already clear
                memset(links, 0, (k + 1) * sizeof(Link))
            c = cap
            with nogil:
                got = _one_tier(ids, counts, c, pin, recency, links)
            out.append((got[0], got[1]))
    finally:
        PyMem_Free(links)
    return out
