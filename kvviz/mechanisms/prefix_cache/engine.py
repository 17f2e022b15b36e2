"""The untimed replay: requests in time order over an ordered list of tiers, for hits only.

For each request (its cacheable block ids b_0 … b_n-1):
1. Lookup. The hit is the longest prefix of blocks each resident in some tier (the chain stops at
   the first block in no tier); each hit block is served by the topmost tier holding it. The hits
   are read at lookup (ASSUMPTION, ours: the request loads them before it computes, so a copy a
   later step of the same request pushes out does not undo the hit).
2. Blocks in order. With `pin` (`cache.pin_running`, `kvviz replay --prefix --pin-running`, on
   by default) block j is pinned in HBM from now until the request ends: a request holds its
   blocks as it reaches them, as vLLM references a block once allocated (ASSUMPTION, ours: the
   blocks it has not reached, behind a missing one, are not held). Without it nothing is held:
   a request's own insertions may evict its earlier blocks, as a plain cache on the stream of
   blocks does. `belady` ignores pins either way (its `ignores_pins`): it is the reference.
   A block in HBM is used there. Else, a hit from a lower tier is promoted into HBM (`copy`: the
   lower copy stays and is used; `move`: it leaves), and a miss is computed and enters HBM if
   admitted.
3. Entering a full tier evicts its policy's victim. `back`: the victim goes down one tier unless
   a lower tier holds it already, cascading; `through`: a block entering HBM is also written to
   every lower tier (a tier holding it counts a use), and victims are dropped. Belady's candidates
   include the entering block: when its own next use is the farthest (or never) it is the one
   left out, as step 4 (Belady's MIN with bypass; without it a request's own new blocks would
   force out blocks used sooner, and pinned policies, which leave blocks out when every block
   is pinned, could beat the reference).
4. A tier whose blocks are all pinned (a request with more distinct blocks than HBM holds)
   cannot take the block: the request still completes, the block is not kept there (`back`
   hands it down a tier, as an eviction would). Only HBM pins: lower tiers always have a victim.
   Every other policy's insertion is forced.

With one tier, promote = copy, write = back and admission = always this is `kvviz replay
--prefix` (kvviz/replay/prefix.py runs this function for every policy but LRU, whose one-pass
curve gives the same counts where it is exact, and this function elsewhere).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import evictors
from .workload import Blocks

NEVER = 1 << 62  # next use of a block the trace never asks for again
NO_PINS = frozenset()


@dataclass
class Prepared:
    """What every run over one workload shares: ids as Python ints, tokens per block, and the
    offline facts Belady and min_reuse read (each block occurrence's next position and how many
    later occurrences it has)."""
    blocks: Blocks
    ids: list
    offsets: list
    tokens: list
    next_pos: list | None = None
    later: list | None = None
    parent: dict | None = None


def next_positions(ids: np.ndarray) -> np.ndarray:
    """For every position, the next position with the same id (NEVER if none)."""
    order = np.argsort(ids, kind="stable")
    nxt = np.full(len(ids), NEVER, dtype=np.int64)
    same = ids[order[1:]] == ids[order[:-1]]
    nxt[order[:-1][same]] = order[1:][same]
    return nxt


def later_counts(ids: np.ndarray) -> np.ndarray:
    """For every position, how many later positions hold the same id."""
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    start = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    size = np.diff(np.r_[start, len(ids)])
    rank = np.arange(len(ids)) - np.repeat(start, size)
    out = np.empty(len(ids), dtype=np.int64)
    out[order] = np.repeat(size, size) - rank - 1
    return out


def parents(blocks: Blocks) -> dict:
    """Each block's parent: the block before it in the first request that asks for it (None first)."""
    ids = blocks.ids
    prev = np.r_[-1, ids[:-1]]
    first_in_request = np.zeros(len(ids), dtype=bool)
    first_in_request[blocks.offsets[:-1][blocks.counts > 0]] = True
    _, first = np.unique(ids, return_index=True)
    out = {}
    for b, pa, root in zip(ids[first].tolist(), prev[first].tolist(), first_in_request[first].tolist()):
        out[b] = None if root else pa
    return out


def prepare(blocks: Blocks, policies: set, admission: str) -> Prepared:
    return Prepared(blocks, blocks.ids.tolist(), blocks.offsets.tolist(), blocks.block_token_counts().tolist(),
                    next_positions(blocks.ids).tolist() if any(map(evictors.clairvoyant, policies)) else None,
                    later_counts(blocks.ids).tolist() if admission == "min_reuse" else None,
                    parents(blocks) if any("parent" in evictors.needs(p) for p in policies) else None)


@dataclass
class Outcome:
    """One run's counts: per tier (lists, top first) and per request."""
    hit_blocks: list
    hit_tokens: list
    hit_requests: list
    written: list      # blocks written into the tier (computed, promoted, written through, demoted)
    demoted: list      # of those, blocks an eviction above sent down
    evicted: list
    peak: list
    hits: np.ndarray   # hit blocks per request
    occupancy: np.ndarray | None  # blocks per tier after each request (requests × tiers)
    hit_tier: np.ndarray | None = None  # the tier of each request's last hit block, -1 for none (record)


def replay(prep: Prepared, caps: list[int], evictions: list[str], move: bool, through: bool, admission: str,
           min_reuse: int = 1, record: bool = False, log: list | None = None, pin: bool = True) -> Outcome:
    """One run. `caps`: blocks per tier; `evictions`: each tier's policy; `pin`: whether a
    request holds the blocks it has reached in HBM (step 2). `log`, if given, gets (request,
    position, tier, block) for every eviction."""
    K, ids, off, tok = len(caps), prep.ids, prep.offsets, prep.tokens
    next_use: dict = {}
    ev = [evictors.make(e, prep.parent, next_use) for e in evictions]
    reindex = [k for k in range(K) if ev[k].reindex]
    clairvoyant = {k for k in range(K) if evictors.clairvoyant(evictions[k])}
    nxt = prep.next_pos
    where: dict = {}  # block -> bit mask of the tiers holding it
    size, peak = [0] * K, [0] * K
    hit_blocks, hit_tokens, hit_req = [0] * K, [0] * K, [0] * K
    written, demoted, evicted = [0] * K, [0] * K, [0] * K
    R = len(off) - 1
    hits = np.zeros(R, dtype=np.int64)
    occupancy = np.zeros((R, K), dtype=np.int64) if record else None
    hit_tier = np.full(R, -1, dtype=np.int8) if record else None
    pinned: set = set()
    # what HBM's victim search skips: the request's blocks, unless pins are off or HBM's policy
    # ignores them (belady); the set is filled either way (it costs an add per block)
    top_pins = pinned if pin and not evictors.ignores_pins(evictions[0]) else NO_PINS
    seen: set | None = set() if admission == "second_hit" else None
    later = prep.later
    at = [0, 0]  # (request, position) for the log

    # each tier's evictor methods, bound once (the loop below is the whole run's time)
    ins, rem = [e.insert for e in ev], [e.remove for e in ev]
    vic, tch = [e.victim for e in ev], [e.touch for e in ev]
    # a use of a block at its step: where a tier is re-indexed by next use (Belady) that push was
    # made as the step began, and a second, identical entry would change no victim, only grow
    # the heap
    use = [evictors.ignore if k in reindex else tch[k] for k in range(K)]
    touch_top = use[0]

    def place(k, b):
        """Put b, not resident in tier k, into it. A loop, not recursion: an eviction's victim
        goes on down (write-back) after b is in; each step changes only its own tier, so the
        order is the same as placing the victim first."""
        while True:
            cascade = False
            if size[k] >= caps[k]:
                v = vic[k](top_pins if k == 0 else NO_PINS)
                if v is not None and k in clairvoyant and next_use[b] >= next_use[v]:
                    v = None  # b's own next use is the farthest: belady leaves b out (step 3)
                if v is None:  # every block here is pinned (or b is belady's victim): not kept here
                    if not through and k + 1 < K and not where.get(b, 0) >> (k + 1):
                        demoted[k + 1] += 1
                        k += 1
                        continue
                    return
                evicted[k] += 1
                if log is not None:
                    log.append((at[0], at[1], k, v))
                m = drop(k, v)
                cascade = not through and k + 1 < K and not m >> (k + 1)
            ins[k](b)
            where[b] = where.get(b, 0) | (1 << k)
            size[k] += 1
            written[k] += 1
            if size[k] > peak[k]:
                peak[k] = size[k]
            if not cascade:
                return
            demoted[k + 1] += 1
            b, k = v, k + 1

    def drop(k, v) -> int:
        """Block v leaves tier k: the tiers still holding it (a bit mask, 0 for none)."""
        rem[k](v)
        size[k] -= 1
        m = where[v] & ~(1 << k)
        if m:
            where[v] = m
        else:
            del where[v]
        return m

    for r in range(R):
        s, e = off[r], off[r + 1]
        p, src = s, []
        while p < e:  # lookup: the longest prefix resident somewhere
            m = where.get(ids[p])
            if not m:
                break
            k = (m & -m).bit_length() - 1
            src.append(k)
            hit_blocks[k] += 1
            hit_tokens[k] += tok[p]
            p += 1
        h = p - s
        hits[r] = h
        for k in set(src):
            hit_req[k] += 1
        pinned.clear()
        ev[0].unpin()
        at[0] = r
        for j in range(s, e):
            b = ids[j]
            at[1] = j
            pinned.add(b)
            m = where.get(b, 0)
            if nxt is not None:
                next_use[b] = nxt[j]
                for k in reindex:
                    if m >> k & 1:
                        tch[k](b)
            if m & 1:
                touch_top(b)
                continue
            if j - s < h:  # a hit below HBM: promoted
                k = src[j - s]
                if m >> k & 1:  # still there (a step of this request may have pushed it out)
                    if move:
                        drop(k, b)
                    else:
                        use[k](b)
            elif (seen is not None and b not in seen) or (later is not None and later[j] < min_reuse):
                continue  # a miss not admitted: computed, not cached
            place(0, b)
            if through:
                for k in range(1, K):
                    if where.get(b, 0) >> k & 1:
                        use[k](b)
                    else:
                        place(k, b)
        if seen is not None:
            seen.update(ids[s:e])
        if record:
            occupancy[r] = size
            if src:
                hit_tier[r] = src[-1]
    return Outcome(hit_blocks, hit_tokens, hit_req, written, demoted, evicted, peak, hits, occupancy, hit_tier)


def ceiling(prep: Prepared) -> tuple[int, int, int]:
    """Infinite capacity, every block admitted: (hit blocks, hit tokens, requests with a hit)."""
    ids, off, tok = prep.ids, prep.offsets, prep.tokens
    seen: set = set()
    hb = ht = hr = 0
    for r in range(len(off) - 1):
        s, e = off[r], off[r + 1]
        p = s
        while p < e and ids[p] in seen:
            ht += tok[p]
            p += 1
        hb += p - s
        hr += p > s
        seen.update(ids[s:e])
    return hb, ht, hr
