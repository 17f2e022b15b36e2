# cython: boundscheck=False, wraparound=False, language_level=3
"""Prefix LRU over one cache of whole blocks, compiled: the replay's pass for `kvviz replay
--prefix --policy lru` (kvviz.replay.prefix states the semantics; the Python definition is
kvviz/serving/eviction/lru.py run by the prefix_cache engine, and tests/test_prefix_lru_native.py
holds the two equal on random streams).

The cache is a doubly linked list over block ids (arrays indexed by id, links as int32, one
sentinel), least recent at the front. Per request: its blocks in order; while every block so far
was resident each is a hit; a resident block moves to the back; a missing one is inserted at the
back, evicting the front block once the cache holds C. A block's stamp is the last request that
reached it: with pinning, the blocks stamped with the current request are pinned, and they are
exactly the back of the list (each was moved there when reached), so the front one is pinned only
when all are: then the entering block is not inserted (the engine's victim search finds none).

Takes any buffer of int64 (numpy arrays, array.array('q')): it imports nothing, so the lean
`kvviz replay --prefix` (kvviz.replay.prefix_lean) runs without numpy.
"""
from cpython.mem cimport PyMem_Calloc, PyMem_Free
from libc.stdint cimport int32_t, int64_t
from libc.string cimport memset

cdef extern from *:
    """
    #ifndef KVVIZ_SOURCE_HASH
    #define KVVIZ_SOURCE_HASH ""
    #endif
    """
    const char *KVVIZ_SOURCE_HASH

SOURCE_HASH = KVVIZ_SOURCE_HASH.decode()
# Links and stamps are int32: ids and requests must stay below this (the caller checks ids with
# id_range; a trace beyond it takes the Python path)
MAX_INDEX = 2**31 - 2


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


def distinct(const int64_t[:] ids, int64_t k):
    """How many different ids there are; every id in [0, k)."""
    cdef Py_ssize_t i, n = ids.shape[0]
    cdef int64_t found = 0, v
    cdef unsigned char *seen = <unsigned char *> PyMem_Calloc(k + 1, 1)
    if seen == NULL:
        raise MemoryError()
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


cdef struct Node:  # one block's entry: its links, stamp and residency share a cache line
    int32_t nxt
    int32_t prv
    int32_t stamp     # 1 + the last request that reached it (0: none yet)
    int32_t resident


cdef (int64_t, int64_t) _one(const int64_t[:] ids, const int64_t[:] counts, int64_t cap, bint pin, int32_t k,
                             Node *a) noexcept nogil:
    """(hit blocks, requests with a hit) at capacity `cap` (>= 1); `a` cleared by the caller
    (all zero: nothing resident, no stamp), a[k] the sentinel: its nxt the least recent block, its
    prv the most recent."""
    cdef int32_t S = k
    cdef int32_t b, v, p, r
    cdef Py_ssize_t j = 0, end
    cdef int64_t size = 0, h, hit_blocks = 0, hit_requests = 0
    cdef Py_ssize_t R = counts.shape[0]
    cdef bint hitting
    a[S].nxt = S
    a[S].prv = S
    for r in range(R):
        end = j + counts[r]
        h = 0
        hitting = True
        while j < end:
            b = <int32_t> ids[j]
            j += 1
            if a[b].resident:
                if hitting:
                    h += 1
                a[a[b].prv].nxt = a[b].nxt     # out of its place ...
                a[a[b].nxt].prv = a[b].prv
            else:
                hitting = False
                if size >= cap:
                    v = a[S].nxt
                    if pin and a[v].stamp == r + 1:  # every resident block is pinned: b is not kept
                        a[b].stamp = r + 1
                        continue
                    a[S].nxt = a[v].nxt          # the least recent block leaves
                    a[a[v].nxt].prv = S
                    a[v].resident = 0
                    size -= 1
                a[b].resident = 1
                size += 1
            p = a[S].prv                         # ... to the back: the most recent
            a[p].nxt = b
            a[b].prv = p
            a[b].nxt = S
            a[S].prv = b
            a[b].stamp = r + 1
        hit_blocks += h
        hit_requests += h > 0
    return hit_blocks, hit_requests


def lru_counts(const int64_t[:] ids, const int64_t[:] counts, capacities, bint pin, int64_t k):
    """[(hit blocks, requests with a hit)] of prefix LRU at each capacity (blocks >= 1; None:
    infinite). `ids`: every request's block ids one after another, each in [0, k); `counts`: the
    ids per request; `pin`: a request holds the blocks it has reached."""
    cdef Py_ssize_t i, n = ids.shape[0], R = counts.shape[0]
    cdef int64_t total = 0, v, cap
    cdef Node *a
    cdef (int64_t, int64_t) got
    if k > MAX_INDEX or R > MAX_INDEX:
        raise ValueError(f"more than {MAX_INDEX:,} block ids or requests")
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
    for c in capacities:
        cap = k + 1 if c is None else c  # infinite: more room than there are blocks
        if cap < 1:
            raise ValueError(f"capacity {c} < 1 block")
        caps.append(cap)
    out = []
    a = <Node *> PyMem_Calloc(k + 1, sizeof(Node))
    if a == NULL:
        raise MemoryError()
    try:
        for i, cap in enumerate(caps):
            if i:  # calloc's memory is already clear
                memset(a, 0, (k + 1) * sizeof(Node))
            with nogil:
                got = _one(ids, counts, cap, pin, <int32_t> k, a)
            out.append((got[0], got[1]))
    finally:
        PyMem_Free(a)
    return out
