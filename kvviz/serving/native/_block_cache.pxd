# The compiled tiered block cache (kvviz/serving/tiered_cache.py's TieredCache over C arrays),
# declared for other compiled modules to cimport (a cluster's instances, a mechanism's engine).
# Blocks are dense ids 0..U-1 (tiered_cache.compiled_cache maps a stream's ids onto them, in
# order, so every tie breaks as the Python cache breaks it); a request is a range of positions.

from libc.stdint cimport int32_t, int64_t, uint8_t

cdef enum:
    MAXK = 16          # tiers
    LRU = 0            # the policies with a compiled twin (a tier's `kind`)
    FIFO = 1
    BELADY = 2

cdef struct Entry:     # a clairvoyant tier's heap entry: (key = −next use, block), as heapq orders tuples
    int64_t key
    int32_t b

cdef struct Heap:
    Entry* a
    int64_t n, cap

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
    cdef int32_t* prv          # per (tier, block): neighbours in its tier's list (−1: none)
    cdef int32_t* nxt
    cdef uint8_t* state        # per (tier, block): 0 not resident, 1 in the order, 2 set aside (pinned)
    cdef int32_t head[2 * MAXK]
    cdef int32_t tail[2 * MAXK]
    cdef Heap heap[MAXK]
    cdef Heap aside[MAXK]
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

    cdef bint _pinned(self, int k, int32_t b) noexcept
    cdef void _push(self, int k, int L, int32_t b) noexcept
    cdef void _unlink(self, int k, int32_t b) noexcept
    cdef int _heap_push(self, Heap* h, int64_t key, int32_t b) except -1
    cdef int _insert(self, int k, int32_t b) except -1
    cdef int _touch(self, int k, int32_t b) except -1
    cdef void _remove(self, int k, int32_t b) noexcept
    cdef int32_t _victim(self, int k) except -2
    cdef int _unpin(self, int k) except -1
    cdef int _use(self, int k, int32_t b) except -1
    cdef int _drop(self, int k, int32_t b) except -1
    cdef int _place(self, int k, int32_t b) except -1
    cdef int _place_request(self, int64_t s, int64_t e, int64_t h, int* src) except -1
    cdef void _protect(self, int32_t b) noexcept
    cdef void _clear_protect(self) noexcept
