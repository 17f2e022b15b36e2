# The compiled twins of the eviction policies lru, fifo and belady (kvviz/serving/eviction/lru.py,
# fifo.py, belady.py), written once and included by every compiled engine that evicts: the serving
# core's block cache (_block_cache.pyx: the prefix cache, the cluster's instances, `kvviz replay
# --prefix`) and AttentionStore's session placement (its _engine.pyx; the loaders' source hash
# follows the include). Keys are dense ids 0..n-1 (blocks, sessions); the caller owns the arrays.
#
# Pinned keys (a running request's blocks, a running session, a protected block) are never
# victims: a victim search sets the ones it meets aside (lru.py's `held`, base.py's parked heap
# entries) until the caller's `unpin`, since pins only grow until then; the tests hold each twin
# equal to its Python policy on random streams (tests/test_block_cache_twin.py,
# tests/test_placement_twins.py).

from cpython.mem cimport PyMem_Free, PyMem_Realloc
from libc.stdint cimport int32_t, int64_t, uint8_t

cdef int64_t NO_FLOOR = -9223372036854775807  # furthest_victim without a floor


# --- lru and fifo: an intrusive doubly linked list, oldest first, and a second of the set-aside --------
# A key's place in one tier's Order. The Links of the tier that keeps the pins (the block cache's
# first) hold the key's pins and the block cache's bits too, so that a move or a victim's check
# reads one 16-byte cell per key, as a plain list's node would.
cdef struct Link:
    int32_t prv                  # its neighbours in its list (−1: none)
    int32_t nxt
    uint8_t state                # 0 absent, 1 in the order, 2 set aside
    uint8_t protect              # nonzero while protected (prefetch's look-ahead)
    uint8_t where                # the block cache's: bit mask of the tiers holding the block
    uint8_t seen                 # the block cache's: asked for before (second_hit)
    int32_t holders              # running requests holding the key (the block cache's HBM pins)


cdef struct Pins:                # what pins a key in one tier: any of these that is set
    const Link* keys             # key -> its Link in the tier the pins are kept in (NULL: none kept)
    bint holders                 # running requests holding a key pin it (the block cache's HBM)
    bint protect                 # protection pins it
    const long long* running     # key -> nonzero while its job runs (AttentionStore's sessions; or NULL)


cdef inline bint is_pinned(const Pins* p, int32_t b) noexcept nogil:
    if p.keys != NULL and ((p.holders and p.keys[b].holders > 0) or (p.protect and p.keys[b].protect != 0)):
        return True
    return p.running != NULL and p.running[b] != 0


cdef struct Order:
    Link* link                   # key -> its Link
    int32_t head[2]              # [0]: the order, [1]: the set-aside keys (all of them precede the order)
    int32_t tail[2]
    bint recency                 # lru: a use moves a key to the end; fifo: it changes nothing


cdef inline void order_init(Order* o, Link* link, bint recency) noexcept nogil:
    o.link, o.recency = link, recency
    o.head[0] = o.head[1] = o.tail[0] = o.tail[1] = -1


cdef inline void _order_push(Order* o, int L, int32_t b) noexcept nogil:
    """b to the end of list L (0: the order, 1: set aside)."""
    cdef int32_t t = o.tail[L]
    cdef Link* x = &o.link[b]
    x.prv, x.nxt, x.state = t, -1, L + 1
    if t != -1:
        o.link[t].nxt = b
    else:
        o.head[L] = b
    o.tail[L] = b


cdef inline void _order_unlink(Order* o, int32_t b) noexcept nogil:
    cdef Link* x = &o.link[b]
    cdef int L = x.state - 1
    cdef int32_t p = x.prv, q = x.nxt
    if p != -1:
        o.link[p].nxt = q
    else:
        o.head[L] = q
    if q != -1:
        o.link[q].prv = p
    else:
        o.tail[L] = p
    x.state = 0


cdef inline bint order_has(const Order* o, int32_t b) noexcept nogil:
    return o.link[b].state != 0


cdef inline void order_insert(Order* o, int32_t b) noexcept nogil:
    """b (absent) enters at the end."""
    _order_push(o, 0, b)


cdef inline void order_touch(Order* o, int32_t b) noexcept nogil:
    """A use of b (present): lru moves it to the end of the order, from the set-aside list too."""
    if o.recency:
        _order_unlink(o, b)
        _order_push(o, 0, b)


cdef inline void order_remove(Order* o, int32_t b) noexcept nogil:
    if o.link[b].state:
        _order_unlink(o, b)


cdef inline int32_t order_victim(Order* o, const Pins* pins) noexcept nogil:
    """The first key of the order not pinned, or −1; pinned ones met first are set aside."""
    cdef int32_t b = o.head[0]
    while b != -1:
        if not is_pinned(pins, b):
            return b
        _order_unlink(o, b)
        _order_push(o, 1, b)
        b = o.head[0]
    return -1


cdef inline void order_unpin(Order* o) noexcept nogil:
    """Pins went: the set-aside keys go back in front of the order, in their order."""
    cdef int32_t hh = o.head[1], ht = o.tail[1], oh = o.head[0], b
    if hh == -1:
        return
    b = hh
    while b != -1:
        o.link[b].state = 1
        b = o.link[b].nxt
    o.link[ht].nxt = oh
    if oh != -1:
        o.link[oh].prv = ht
    else:
        o.tail[0] = ht
    o.head[0] = hh
    o.head[1] = o.tail[1] = -1


# --- belady: a lazy min-heap of (−next use, tie, key), stale entries dropped when they reach the top ---
cdef struct Entry:
    int64_t key                  # −next use: the furthest first
    int64_t tie                  # the order among equal next uses before the key's (AttentionStore: calls)
    int32_t b


cdef struct Heap:
    Entry* a
    int64_t n, cap


cdef struct Furthest:            # one tier's belady
    Heap heap
    Heap aside                   # pinned entries set aside (unordered) until furthest_unpin


# Whether a heap entry no longer says the key's next use (it left, was re-keyed): the caller's rule
ctypedef bint (*stale_fn)(const void* ctx, const Entry* e) noexcept nogil


cdef inline bint _entry_lt(const Entry* x, const Entry* y) noexcept nogil:
    if x.key != y.key:
        return x.key < y.key
    if x.tie != y.tie:
        return x.tie < y.tie
    return x.b < y.b


cdef inline int _heap_room(Heap* h) except -1:
    cdef Entry* a
    if h.n == h.cap:
        h.cap = h.cap * 2 if h.cap else 64
        a = <Entry*> PyMem_Realloc(h.a, h.cap * sizeof(Entry))
        if a == NULL:
            raise MemoryError()
        h.a = a
    return 0


cdef inline int heap_push(Heap* h, int64_t key, int64_t tie, int32_t b) except -1:
    cdef int64_t i, p
    cdef Entry e
    _heap_room(h)
    e.key, e.tie, e.b = key, tie, b
    i = h.n
    h.n += 1
    while i > 0:
        p = (i - 1) >> 1
        if not _entry_lt(&e, &h.a[p]):
            break
        h.a[i] = h.a[p]
        i = p
    h.a[i] = e
    return 0


cdef inline void heap_pop(Heap* h) noexcept nogil:
    """Drop the top entry."""
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
            if c + 1 < n and _entry_lt(&h.a[c + 1], &h.a[c]):
                c += 1
            if not _entry_lt(&h.a[c], &last):
                break
            h.a[i] = h.a[c]
            i = c
        h.a[i] = last


cdef inline void heap_free(Heap* h) noexcept:
    PyMem_Free(h.a)
    h.a, h.n, h.cap = NULL, 0, 0


cdef inline int32_t furthest_victim(Furthest* f, const Pins* pins, stale_fn stale, const void* ctx,
                                    int64_t floor) except -2:
    """The key whose valid entry is on top, if its next use lies beyond `floor` (base.py's
    victim_after) and it is not pinned, else −1; pinned ones met first are set aside."""
    cdef Heap* h = &f.heap
    cdef Entry* top
    while h.n:
        top = &h.a[0]
        if stale(ctx, top):
            heap_pop(h)
            continue
        if -top.key <= floor:
            return -1
        if is_pinned(pins, top.b):
            _heap_room(&f.aside)
            f.aside.a[f.aside.n] = top[0]
            f.aside.n += 1
            heap_pop(h)
            continue
        return top.b
    return -1


cdef inline int furthest_unpin(Furthest* f) except -1:
    """Pins went: the set-aside entries back on the heap (in any order: entries are totally ordered)."""
    cdef Heap* a = &f.aside
    while a.n:
        a.n -= 1
        heap_push(&f.heap, a.a[a.n].key, a.a[a.n].tie, a.a[a.n].b)
    return 0


cdef inline void furthest_free(Furthest* f) noexcept:
    heap_free(&f.heap)
    heap_free(&f.aside)
