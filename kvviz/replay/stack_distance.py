"""LRU's whole miss-ratio curve in one pass (Mattson et al., 1970), for byte capacities; exact,
or estimated from a spatially hashed sample (SHARDS, Waldspurger et al., FAST 2015).

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
wavelet matrix, with O(n) numpy work per bit (about a dozen array passes, no sort). Zipf
requests, all 12 capacities at once (benchmarks/bench_replay.py, lru_curve_sampling): 0.35 s for
1M against 0.64–0.71 s for 12 separate libCacheSim LRU runs; 6.6 s for 10M against 18.2 s. Memory:
about 120 bytes per request at the peak (1.6 GB for the whole 10M benchmark process).

SHARDS (`sample_rate` R): keep the requests whose object's hash is below R × 2^64 (the hash is
splitmix64's finaliser of the dense object id, the trace's objects numbered in order of first
request: the same sample on every run), compute their byte stack distances as above, and count a
sampled request as a hit at C when its distance / R is at most C. With the SHARDS-adj correction
(the difference between the expected sample, R × requests, and the one drawn is added to the
hits at every capacity) the miss ratio becomes sampled misses / (R × requests): that is what is
computed, and likewise by bytes. Sampled objects larger than C are left out at C, as above;
objects that change size are taken at the stack's word (no per-capacity replay): an estimate
anyway. (Not scaling a request's own size, which is known, was tried: no more accurate.)
Its error is largest at capacities of a few / R objects, the sample's resolution: on a Zipf(0.9)
trace of 1M requests and 100K objects, R = 0.01 is off by up to 0.15 at 0.1% of the footprint
(mean 0.036 over 12 capacities); at 10M requests and 1M objects by at most 0.020 (mean 0.013).
kvviz samples only when asked (`miss_ratio_curve(..., sample_rate=R)`, `kvviz replay
--sample-rate R`); every sampled result's engine says "SHARDS R=… stack distances". At ~120
bytes per request the exact pass fits a 24 GB machine up to ~150M requests, where just reading
the trace is the larger cost; sampling is for the user who wants the curve sooner (R = 0.01 took
0.05 s at 10M requests, against 6.6 s exact).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from .kernels import previous_use_array


def _later_heavier(keys: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """out[i] = sum of weights[t] over t < i with keys[t] > keys[i] (keys distinct, >= 0;
    weights >= 0).

    Bit by bit from the top, as a wavelet matrix does: after the bits above b, a stable
    partition per bit has put elements with equal higher bits next to each other, still in time
    order. Within such a run, an element whose bit b is 0 gains the weights of the earlier
    elements whose bit b is 1: their keys are larger, and this is the highest bit where they
    differ, so each pair is counted once."""
    m = len(keys)
    out = np.zeros(m, dtype=np.int64)
    if m < 2:
        return out
    keys = np.asarray(keys, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.int64)
    top = int(keys.max()).bit_length()
    wbits = 63 - top
    if int(weights.max()) >> wbits:  # too heavy to share a word with the key: the sum is linear
        low = _later_heavier(keys, weights & ((1 << wbits) - 1))
        total: np.ndarray = low + (_later_heavier(keys, weights >> wbits) << wbits)
        return total
    # Key and weight share one int64 (key above wbits): one gather per bit moves both.
    packed = (keys << wbits) | weights
    packed_next = np.empty(m, np.int64)
    acc, acc_next = np.zeros(m, np.int64), np.empty(m, np.int64)
    bit = np.empty(m, np.int64)
    run = np.empty(m, np.int64)                 # running bit-1 weight within the element's run
    above = np.zeros(m, np.int64)               # bits above b that differ from the previous element
    new_run = np.empty(m, bool)
    sides = np.empty((2, m), bool)              # [bit is 0; bit is 1]: one flatnonzero orders both
    # Buffers reused (out=) across bits: fresh 8 MB arrays per step cost page faults, not just copies.
    for b in range(top - 1, -1, -1):
        shift = wbits + b
        np.right_shift(packed, shift, out=bit)
        np.bitwise_and(bit, 1, out=bit)
        np.bitwise_and(packed, (1 << wbits) - 1, out=run)
        np.multiply(run, bit, out=run)          # the weights of bit-1 elements
        np.bitwise_xor(packed[1:], packed[:-1], out=above[1:])
        np.right_shift(above, shift + 1, out=above)
        np.not_equal(above, 0, out=new_run)
        starts = np.flatnonzero(new_run)
        if len(starts):
            # A cumulative sum that restarts per run: each run's first element carries minus the
            # previous run's total. Few runs: add them up directly; many: from one cumsum.
            if len(starts) > m // 8:
                totals = np.diff(np.cumsum(run)[starts - 1], prepend=0)
            else:
                totals = np.add.reduceat(run, np.concatenate(([0], starts)))[:-1]
            run[starts] -= totals
        np.cumsum(run, out=run)
        np.not_equal(bit, 0, out=sides[1])
        np.bitwise_xor(bit, 1, out=bit)
        np.multiply(run, bit, out=run)          # only bit-0 elements gain
        np.add(acc, run, out=acc)
        if b:  # stable partition, zeros first; after the last bit the order no longer matters
            np.logical_not(sides[1], out=sides[0])
            order = np.flatnonzero(sides)
            order[m - int(np.count_nonzero(sides[1])):] -= m
            np.take(packed, order, out=packed_next)
            np.take(acc, order, out=acc_next)
            packed, packed_next, acc, acc_next = packed_next, packed, acc_next, acc
    position_of_key = np.empty(int(keys.max()) + 1, np.int64)
    position_of_key[keys] = np.arange(m)
    out[position_of_key[packed >> wbits]] = acc
    return out


def byte_stack_distances(ids: np.ndarray, sizes: np.ndarray, prev: np.ndarray | None = None) -> np.ndarray:
    """Per request, LRU's byte stack distance (-1 for a first request: a miss at any size).
    `prev`: previous_use_array(ids), where the caller has it already."""
    n = len(ids)
    if prev is None:
        prev = previous_use_array(ids)
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
    caps = np.array(sorted(set(capacities)), dtype=np.int64)
    # Each request's smallest capacity that holds it (len(caps): none, as for a cold miss).
    first_hit = np.searchsorted(caps, dist)
    first_hit[dist < 0] = len(caps)
    hits = np.cumsum(np.bincount(first_hit, minlength=len(caps) + 1))
    hit_bytes = np.zeros(len(caps) + 1, np.int64)
    np.add.at(hit_bytes, first_hit, sizes)      # int64: exact at any total
    hit_bytes = np.cumsum(hit_bytes)
    at = {int(c): k for k, c in enumerate(caps)}
    total = int(sizes.sum())
    return [(len(dist) - int(hits[at[c]]), total - int(hit_bytes[at[c]])) for c in capacities]


def shards_hash(ids: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser of each id, as uint64: the fixed hash SHARDS samples by."""
    z = np.asarray(ids).astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def sampled_objects(n_objects: int, rate: float) -> np.ndarray:
    """Which of the objects 0..n_objects-1 SHARDS keeps at `rate`: those whose hash is below
    rate × 2^64."""
    if rate >= 1:
        return np.ones(n_objects, dtype=bool)
    return shards_hash(np.arange(n_objects)) < np.uint64(int(rate * 2.0**64))


def shards_sample(ids: np.ndarray, rate: float) -> np.ndarray:
    """Which requests SHARDS keeps at `rate`: those of the objects it keeps."""
    if rate >= 1:
        return np.ones(len(ids), dtype=bool)
    kept: np.ndarray = sampled_objects(int(ids.max()) + 1 if len(ids) else 0, rate)[ids]
    return kept


def lru_curve(ids: ArrayLike, sizes: ArrayLike, capacities: list[int],
              replay_one: Callable[[int], tuple[int, int]] | None = None, sample_rate: float | None = None) -> list[tuple[int, int]]:
    """(misses, bytes missed) of LRU at every capacity, exactly as per-capacity replays give.
    `replay_one(capacity)` replays a capacity where an object's size crosses it.
    `sample_rate` R in (0, 1]: SHARDS estimates instead, from the requests it samples."""
    ids_a, sizes_a = np.asarray(ids, dtype=np.int64), np.asarray(sizes, dtype=np.int64)
    if not len(ids_a):
        return [(0, 0) for _ in capacities]
    if sample_rate is not None:
        return _shards_curve(ids_a, sizes_a, capacities, sample_rate)
    return _exact_curve(ids_a, sizes_a, capacities, replay_one)


def _exact_curve(ids: np.ndarray, sizes: np.ndarray, capacities: list[int],
                 replay_one: Callable[[int], tuple[int, int]] | None) -> list[tuple[int, int]]:
    out: dict[int, tuple[int, int]] = {}
    prev = previous_use_array(ids)
    reuse = prev >= 0
    resized = bool(np.any(sizes[reuse] != sizes[prev[reuse]]))
    if resized:  # the rare case: some object's size changes between requests
        shrinks = bool(np.any(sizes[reuse] < sizes[prev[reuse]]))
        n_obj = int(ids.max()) + 1
        smallest = np.full(n_obj, np.iinfo(np.int64).max)
        largest = np.zeros(n_obj, dtype=np.int64)
        np.minimum.at(smallest, ids, sizes)
        np.maximum.at(largest, ids, sizes)
    biggest = int(sizes.max())
    groups: dict[int, list[int]] = {}  # requests left out -> capacities with that same trace
    for c in sorted(set(capacities)):
        if resized and (shrinks or np.any((smallest <= c) & (largest > c))):
            out[c] = replay_one(c) if replay_one else _replay_lru(ids, sizes, c)
        else:
            groups.setdefault(0 if c >= biggest else int(np.count_nonzero(sizes > c)), []).append(c)
    for dropped, caps in groups.items():
        if dropped:
            keep = sizes <= caps[0]
            k_ids, k_sizes, k_prev = ids[keep], sizes[keep], None
        else:
            k_ids, k_sizes, k_prev = ids, sizes, prev
        dist = byte_stack_distances(k_ids, k_sizes, k_prev)
        big_bytes = int(sizes.sum()) - int(k_sizes.sum())
        for c, (m, b) in zip(caps, _counts(dist, k_sizes, caps)):
            out[c] = (m + dropped, b + big_bytes)
    return [out[c] for c in capacities]


def _shards_curve(ids: np.ndarray, sizes: np.ndarray, capacities: list[int], rate: float) -> list[tuple[int, int]]:
    """SHARDS-adj: a sampled request hits at C when its distance / R <= C; the sample's misses
    (and bytes missed) over R, so the miss ratio is sampled misses / (R × requests)."""
    keep = shards_sample(ids, rate)
    s_ids, s_sizes = ids[keep], sizes[keep]
    groups: dict[int, list[int]] = {}  # sampled requests too big to be admitted -> capacities
    for c in sorted(set(capacities)):
        groups.setdefault(int(np.count_nonzero(s_sizes > c)), []).append(c)
    out: dict[int, tuple[int, int]] = {}
    total, sampled_bytes = int(sizes.sum()), int(s_sizes.sum())
    for dropped, caps in groups.items():
        fits = s_sizes <= caps[0]
        f_sizes = s_sizes[fits]
        dist = byte_stack_distances(s_ids[fits], f_sizes)
        big_bytes = sampled_bytes - int(f_sizes.sum())
        scaled = [int(c * rate) for c in caps]   # D / R <= C, as D <= C × R for whole bytes D
        for c, (m, b) in zip(caps, _counts(dist, f_sizes, scaled)):
            # a sample larger than expected could scale past the whole trace: a ratio stays <= 1
            out[c] = (min(round((m + dropped) / rate), len(ids)), min(round((b + big_bytes) / rate), total))
    return [out[c] for c in capacities]


def _replay_lru(ids: np.ndarray, sizes: np.ndarray, c: int) -> tuple[int, int]:
    from .kernels import run
    return run("lru", ids.tolist(), sizes.tolist(), c)
