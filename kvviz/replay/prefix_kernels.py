"""FIFO and Belady under the prefix semantics of kvviz.replay.prefix, one capacity per replay:
Python loops over the stream of blocks (LRU has its one-pass curve there instead). A request's
hit prefix is counted against the cache as the request finds it, before any of its blocks is
inserted (an insertion could evict a later block of the same request)."""
from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass, field

from .kernels import next_use_array


@dataclass
class Stream:
    """The blocks as small ints, every request's one after another, cut by offsets."""
    ids: list[int]
    offsets: list[int]
    _next: list[int] | None = field(default=None, repr=False)

    @property
    def next_use(self) -> list[int]:
        """Per position, the next position of the same block (len(ids): never again)."""
        if self._next is None:
            self._next = next_use_array(self.ids).tolist()
        return self._next


def _prefix(ids: list[int], a: int, b: int, cache) -> int:
    """How many of ids[a:b], from the first, are in `cache`."""
    h = a
    while h < b and ids[h] in cache:
        h += 1
    return h - a


def fifo(stream: Stream, cap: int) -> tuple[int, int]:
    ids, off = stream.ids, stream.offsets
    cache: set = set()
    order: deque = deque()
    hit_blocks = hit_requests = 0
    for r in range(len(off) - 1):
        a, b = off[r], off[r + 1]
        h = _prefix(ids, a, b, cache)
        hit_blocks += h
        hit_requests += h > 0
        # ids[a:a+h] were resident and a FIFO touch changes nothing: insertion starts at a+h.
        for k in ids[a + h:b]:
            if k not in cache:
                cache.add(k)
                order.append(k)
                if len(order) > cap:
                    cache.discard(order.popleft())
    return hit_blocks, hit_requests


def belady(stream: Stream, cap: int) -> tuple[int, int]:
    """Keys are next-use positions. The current request's blocks keep the key they had when it
    arrived (their first position in it, below every other block's) until it ends, and blocks it
    inserts get theirs then: so the farthest key popped is never one of its blocks unless only
    its blocks are left, which is when the pin stops eviction. The same victims as re-keying
    at each touch and skipping pinned blocks (the oracle), at a pop per eviction."""
    ids, off, nxt = stream.ids, stream.offsets, stream.next_use
    when: dict = {}      # resident block -> its next use (the key of its live heap entry); -1 pending
    heap: list = []      # (-next use, block); entries whose key is no longer `when`'s are stale
    push, pop = heapq.heappush, heapq.heappop
    hit_blocks = hit_requests = 0
    for r in range(len(off) - 1):
        a, b = off[r], off[r + 1]
        h = _prefix(ids, a, b, when)
        hit_blocks += h
        hit_requests += h > 0
        own_only = False  # the cache holds only this request's blocks: the rest are not inserted
        for j in range(a, b):
            k = ids[j]
            if k in when or own_only:
                continue
            if len(when) >= cap:
                entry = None
                while heap:
                    entry = pop(heap)
                    if when.get(entry[1]) == -entry[0]:
                        break    # live (a stale entry is dropped)
                    entry = None
                # None: every resident block was inserted by this request (pending, no entry);
                # a key inside this request: one of its blocks is the farthest left.
                if entry is None or -entry[0] < b:
                    if entry is not None:
                        push(heap, entry)
                    own_only = True
                    continue
                del when[entry[1]]
            when[k] = -1
        for j in range(a, b):    # the request's blocks re-keyed to their next use after it
            k = ids[j]
            if k in when:
                when[k] = nxt[j]
                push(heap, (-nxt[j], k))
    return hit_blocks, hit_requests


RUN = {"fifo": fifo, "belady": belady}


def run(policy: str, stream: Stream, cap: int | None) -> tuple[int, int]:
    """(hit blocks, hit requests) of one replay; cap None: infinite (nothing is ever evicted)."""
    if cap is None:
        cap = len(stream.ids) + 1
    return RUN[policy](stream, cap)
