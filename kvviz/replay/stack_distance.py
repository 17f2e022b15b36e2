"""LRU's whole miss-ratio curve in one pass (Mattson et al., 1970), for byte capacities.

LRU with byte capacity C holds the longest run of most-recently-used objects whose sizes add
up to at most C (it evicts from the LRU end only). So a request for x hits at C exactly when
its *byte stack distance* D — x's size plus the sizes of the distinct objects requested since
x's previous request — is at most C, and one pass that computes every D gives every capacity.

Two cases break that and are handled apart, so the curve stays exact (equal to replaying
each capacity with kvviz's LRU kernel):
- an object larger than C is never admitted: its requests are misses that leave the cache as it
  was, so at such capacities the distances are computed on the trace without them;
- an object whose size crosses C between requests (fits, then does not) empties the cache in
  kvviz's LRU; capacities where that happens are replayed one by one;
- an object that shrinks frees room that LRU does not refill with objects evicted before,
  while the stack would: a trace with a shrinking object is replayed capacity by capacity.

Distances without a per-request loop: for a request i whose object was last requested at p,
D = size(p) + bytes requested strictly between p and i − bytes of the requests j in (p, i) whose
object comes back before i (each such object is counted once, at its last request before i).
The last term is, with t = the next request of j, a sum over earlier t < i with prev(t) > p:
a weighted inversion count over the sequence prev(t), done bit by bit from the top as in a
wavelet matrix, with O(n) numpy work per bit: about 0.9 s for a million requests, all
capacities at once (benchmarks/bench_replay.py).
"""
from __future__ import annotations

import numpy as np

from .kernels import next_use_array


def _later_heavier(keys: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """out[i] = sum of weights[t] over t < i with keys[t] > keys[i] (keys distinct, >= 0).

    Bit by bit from the top, as a wavelet matrix does: after the bits above b, a stable
    partition per bit has put elements with equal higher bits next to each other, still in time
    order. Within such a run, an element whose bit b is 0 gains the weights of the earlier
    elements whose bit b is 1: their keys are larger, and this is the highest bit where they
    differ, so each pair is counted once."""
    m = len(keys)
    if m < 2:
        return np.zeros(m, dtype=np.int64)
    small = np.int32 if m < 2**31 and int(keys.max()) < 2**31 else np.int64  # half the memory traffic
    kp = keys.astype(small)
    wp = weights.astype(np.int64)
    idx = np.arange(m, dtype=small)
    acc = np.zeros(m, dtype=np.int64)
    ar = np.arange(m, dtype=small)
    first = np.empty(m, dtype=bool)
    first[0] = True
    for b in range(int(keys.max()).bit_length() - 1, -1, -1):
        higher = kp >> (b + 1)
        np.not_equal(higher[1:], higher[:-1], out=first[1:])
        start = np.maximum.accumulate(np.where(first, ar, 0))   # where each element's run starts
        one = ((kp >> b) & 1).astype(bool)
        w1 = np.where(one, wp, 0)
        before = np.cumsum(w1)
        before -= w1                                             # bit-1 weight before each element
        gain = before - before[start]
        gain[one] = 0
        acc += gain
        order = np.argsort(one, kind="stable")                  # zeros first, time order kept
        kp, wp, idx, acc = kp[order], wp[order], idx[order], acc[order]
    out = np.empty(m, dtype=np.int64)
    out[idx] = acc
    return out


def byte_stack_distances(ids: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Per request, LRU's byte stack distance (-1 for a first request: a miss at any size)."""
    n = len(ids)
    nxt = next_use_array(ids)
    prev = np.full(n, -1, dtype=np.int64)
    has_next = nxt < n
    prev[nxt[has_next]] = np.flatnonzero(has_next)
    reuse = np.flatnonzero(prev >= 0)
    p = prev[reuse]
    cum = np.concatenate(([0], np.cumsum(sizes)))
    between = cum[reuse] - cum[p + 1]
    nested = _later_heavier(p, sizes[p])
    dist = np.full(n, -1, dtype=np.int64)
    dist[reuse] = sizes[p] + between - nested
    return dist


def _counts(dist: np.ndarray, sizes: np.ndarray, capacities: list[int]) -> list[tuple[int, int]]:
    """(misses, bytes missed) at each capacity from the distances: hit iff 0 <= D <= C."""
    order = np.argsort(dist, kind="stable")
    d, s = dist[order], sizes[order]
    cum = np.concatenate(([0], np.cumsum(s)))
    first = np.searchsorted(d, 0)               # the cold misses sort first (-1)
    total = int(cum[-1])
    out = []
    for c in capacities:
        last = np.searchsorted(d, c, side="right")
        hits, hit_bytes = int(last - first), int(cum[last] - cum[first])
        out.append((len(d) - hits, total - hit_bytes))
    return out


def lru_curve(ids, sizes, capacities: list[int], replay_one=None) -> list[tuple[int, int]]:
    """(misses, bytes missed) of LRU at every capacity, exactly as per-capacity replays give.
    `replay_one(capacity)` replays a capacity where an object's size crosses it."""
    ids, sizes = np.asarray(ids, dtype=np.int64), np.asarray(sizes, dtype=np.int64)
    out: dict[int, tuple[int, int]] = {}
    if not len(ids):
        return [(0, 0) for _ in capacities]
    n_obj = int(ids.max()) + 1
    smallest = np.full(n_obj, np.iinfo(np.int64).max)
    largest = np.zeros(n_obj, dtype=np.int64)
    np.minimum.at(smallest, ids, sizes)
    np.maximum.at(largest, ids, sizes)
    nxt = next_use_array(ids)
    later = nxt < len(ids)
    shrinks = bool(np.any(sizes[nxt[later]] < sizes[later]))
    groups: dict[int, list[int]] = {}  # requests left out -> capacities with that same trace
    for c in sorted(set(capacities)):
        if shrinks or np.any((smallest <= c) & (largest > c)):
            out[c] = replay_one(c) if replay_one else _replay_lru(ids, sizes, c)
        else:
            groups.setdefault(int(np.count_nonzero(sizes > c)), []).append(c)
    for dropped, caps in groups.items():
        keep = sizes <= caps[0]
        k_ids, k_sizes = ids[keep], sizes[keep]
        dist = byte_stack_distances(k_ids, k_sizes)
        big_bytes = int(sizes[~keep].sum())
        for c, (m, b) in zip(caps, _counts(dist, k_sizes, caps)):
            out[c] = (m + dropped, b + big_bytes)
    return [out[c] for c in capacities]


def _replay_lru(ids, sizes, c):
    from .kernels import run
    return run("lru", ids.tolist(), sizes.tolist(), c)
