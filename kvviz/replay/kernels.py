"""kvviz's own replay kernels: LRU, FIFO and Belady as plain Python loops over lists (ids mapped
to small ints first). They need nothing beyond numpy, so `kvviz replay` works without
libCacheSim, and the tests use them as an independent cross-check of it.

An OrderedDict's move_to_end and popitem are C calls, which is as tight as a per-request loop
gets without compiled code. Semantics: see kvviz.replay.
"""
from __future__ import annotations

import heapq
from collections import OrderedDict, deque

import numpy as np

DESCRIPTIONS = {
    "lru": "Least Recently Used: evicts the object requested longest ago",
    "fifo": "First In First Out: evicts the object inserted earliest",
    "belady": "Belady's optimal: evicts the object whose next request is furthest away (needs the future)",
}


def _lru(ids, sizes, cap):
    cache: OrderedDict = OrderedDict()
    used = misses = missed = 0
    move, pop = cache.move_to_end, cache.popitem
    for k, s in zip(ids, sizes):
        old = cache.get(k)
        if old is not None:
            move(k)
            if old == s:
                continue
            used += s - old  # size changed: update in place, then evict as on insert
            cache[k] = s
        else:
            misses += 1
            missed += s
            if s > cap:
                continue
            cache[k] = s
            used += s
        while used > cap:
            used -= pop(last=False)[1]  # the newest (k) is last: it goes only if alone and too big
    return misses, missed


def _fifo(ids, sizes, cap):
    cache: dict = {}
    order: deque = deque()
    used = misses = missed = 0
    for k, s in zip(ids, sizes):
        old = cache.get(k)
        if old is not None:
            if old == s:
                continue
            used += s - old
            cache[k] = s
        else:
            misses += 1
            missed += s
            if s > cap:
                continue
            cache[k] = s
            order.append(k)
            used += s
        while used > cap:
            v = order.popleft()
            used -= cache.pop(v)
    return misses, missed


def _by_object(ids: np.ndarray) -> np.ndarray:
    """The request indices ordered by object, then time: a stable argsort of the ids, done as
    16-bit radix passes (numpy sorts uint16 stably by radix), about 3x a general stable sort."""
    if len(ids) and ids.min() < 0:  # digits of negative ids would mix objects up
        return np.argsort(ids, kind="stable")
    order = np.arange(len(ids))
    top = int(ids.max()).bit_length() if len(ids) else 0
    for shift in range(0, max(top, 1), 16):  # least significant digit first: each pass keeps the last
        digit = ((ids[order] >> shift) & 0xFFFF).astype(np.uint16)
        order = order[np.argsort(digit, kind="stable")]
    return order


def _same_object_steps(ids) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ids as int64, earlier, later): each pair of consecutive requests for one object, as
    request indices."""
    a = np.asarray(ids, dtype=np.int64)
    order = _by_object(a)
    grouped = a[order]
    same = grouped[1:] == grouped[:-1]
    return a, order[:-1][same], order[1:][same]


def next_use_array(ids) -> np.ndarray:
    """For each request, the index of the next request for the same object (len(ids) if none)."""
    a, earlier, later = _same_object_steps(ids)
    nxt = np.full(len(a), len(a), dtype=np.int64)
    nxt[earlier] = later
    return nxt


def previous_use_array(ids) -> np.ndarray:
    """For each request, the index of the previous request for the same object (-1 if none)."""
    a, earlier, later = _same_object_steps(ids)
    prev = np.full(len(a), -1, dtype=np.int64)
    prev[later] = earlier
    return prev


def _belady(ids, sizes, cap):
    nxt = next_use_array(ids).tolist()
    cache: dict = {}       # id -> size
    when: dict = {}        # id -> its next request index (the key of its live heap entry)
    heap: list = []        # (-next request, id); stale entries skipped on pop
    used = misses = missed = 0
    for i, (k, s) in enumerate(zip(ids, sizes)):
        nu = nxt[i]
        old = cache.get(k)
        if old is not None:
            when[k] = nu
            heapq.heappush(heap, (-nu, k))
            if old == s:
                continue
            used += s - old
            cache[k] = s
            if s > cap:
                used -= cache.pop(k)
                continue
        else:
            misses += 1
            missed += s
            if s > cap:
                continue
            cache[k] = s
            when[k] = nu
            used += s
            heapq.heappush(heap, (-nu, k))
        held = None  # the object just requested is never its own victim
        while used > cap:
            neg, v = heapq.heappop(heap)
            if cache.get(v) is None or when[v] != -neg:
                continue  # stale entry
            if v == k:
                held = (neg, v)
                continue
            used -= cache.pop(v)
        if held:
            heapq.heappush(heap, held)
    return misses, missed


RUN = {"lru": _lru, "fifo": _fifo, "belady": _belady}


def run(policy: str, ids: list[int], sizes: list[int], capacity: int) -> tuple[int, int]:
    """(misses, bytes missed) of one replay."""
    return RUN[policy](ids, sizes, capacity)
