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

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from ...serving.tiered_cache import NO_PINS, BlockCache, make_cache  # noqa: F401 (NO_PINS: the name callers import)
from . import evictors
from .workload import Blocks

NEVER = 1 << 62  # next use of a block the trace never asks for again


@dataclass
class Prepared:
    """What every run over one workload shares: ids as Python ints, tokens per block, and the
    offline facts Belady and min_reuse read (each block occurrence's next position and how many
    later occurrences it has)."""
    blocks: Blocks
    ids: list[int]
    offsets: list[int]
    tokens: list[int]
    next_pos: list[int] | None = None
    later: list[int] | None = None
    parent: dict[int, int | None] | None = None
    arrays: dict[str, Any] = field(default_factory=dict)  # the compiled block cache's arrays, made once


def next_positions(ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """For every position, the next position with the same id (NEVER if none)."""
    order = np.argsort(ids, kind="stable")
    nxt = np.full(len(ids), NEVER, dtype=np.int64)
    same = ids[order[1:]] == ids[order[:-1]]
    nxt[order[:-1][same]] = order[1:][same]
    return nxt


def later_counts(ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """For every position, how many later positions hold the same id."""
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    start = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    size = np.diff(np.r_[start, len(ids)])
    rank = np.arange(len(ids)) - np.repeat(start, size)
    out = np.empty(len(ids), dtype=np.int64)
    out[order] = np.repeat(size, size) - rank - 1
    return out


def parents(blocks: Blocks) -> dict[int, int | None]:
    """Each block's parent: the block before it in the first request that asks for it (None first)."""
    ids = blocks.ids
    prev = np.r_[-1, ids[:-1]]
    first_in_request = np.zeros(len(ids), dtype=bool)
    first_in_request[blocks.offsets[:-1][blocks.counts > 0]] = True
    _, first = np.unique(ids, return_index=True)
    out: dict[int, int | None] = {}
    for b, pa, root in zip(ids[first].tolist(), prev[first].tolist(), first_in_request[first].tolist()):
        out[b] = None if root else pa
    return out


def prepare(blocks: Blocks, policies: Collection[str], admission: str) -> Prepared:
    return Prepared(blocks, blocks.ids.tolist(), blocks.offsets.tolist(), blocks.block_token_counts().tolist(),
                    next_positions(blocks.ids).tolist() if any(map(evictors.clairvoyant, policies)) else None,
                    later_counts(blocks.ids).tolist() if admission == "min_reuse" else None,
                    parents(blocks) if any("parent" in evictors.needs(p) for p in policies) else None)


@dataclass
class Outcome:
    """One run's counts: per tier (lists, top first) and per request."""
    hit_blocks: list[int]
    hit_tokens: list[int]
    hit_requests: list[int]
    written: list[int]      # blocks written into the tier (computed, promoted, written through, demoted)
    demoted: list[int]      # of those, blocks an eviction above sent down
    evicted: list[int]
    peak: list[int]
    hits: npt.NDArray[np.int64]   # hit blocks per request
    occupancy: npt.NDArray[np.int64] | None  # blocks per tier after each request (requests × tiers)
    hit_tier: npt.NDArray[np.int8] | None = None  # the tier of each request's last hit block, -1 for none (record)
    note: str = ""     # why the Python cache ran where the compiled one was asked for ("" otherwise)


def cache_for(prep: Prepared, caps: list[int], evictions: list[str], move: bool, through: bool, admission: str,
              min_reuse: int = 1, pin: bool = True, protect: bool = False,
              compiled: bool = False) -> tuple[BlockCache, str]:
    """(the tiered block cache over this workload's prepared stream, note): kvviz.serving.
    tiered_cache, the rules above written once; `compiled`: its compiled twin where it can run
    (the note says why not)."""
    return make_cache(prep.ids, prep.tokens, caps, evictions, compiled=compiled, move=move, through=through,
                      admission=admission, min_reuse=min_reuse, pin=pin, protect=protect, next_pos=prep.next_pos,
                      later=prep.later, parent=prep.parent, arrays=prep.arrays)


def replay(prep: Prepared, caps: list[int], evictions: list[str], move: bool, through: bool, admission: str,
           min_reuse: int = 1, record: bool = False, log: list[tuple[int, int, int, int]] | None = None, pin: bool = True,
           compiled: bool = False) -> Outcome:
    """One run. `caps`: blocks per tier; `evictions`: each tier's policy; `pin`: whether a
    request holds the blocks it has reached in HBM (step 2). `log`, if given, gets (request,
    position, tier, block) for every eviction. `compiled`: the compiled block cache where it can
    run (the same counts; the Outcome's note says why not)."""
    K, off = len(caps), prep.offsets
    cache, note = cache_for(prep, caps, evictions, move, through, admission, min_reuse, pin, compiled=compiled)
    R = len(off) - 1
    hits = np.zeros(R, dtype=np.int64)
    occupancy = np.zeros((R, K), dtype=np.int64) if record else None
    hit_tier = np.full(R, -1, dtype=np.int8) if record else None
    # the loop fills them only when `record` made them (typed as made: no check per request)
    occ = cast("npt.NDArray[np.int64]", occupancy)
    last_tier = cast("npt.NDArray[np.int8]", hit_tier)
    if log is not None:
        at = [0]  # the request being placed (the cache keeps the position: `pos`)
        orig = cache.original
        cache.on_evict = lambda k, v: log.append((at[0], cache.pos, k, orig(v)))
    lookup, place_request, finish = cache.lookup, cache.place_request, cache.finish
    for r in range(R):
        s, e = off[r], off[r + 1]
        src = lookup(s, e)
        h = len(src)
        hits[r] = h
        if log is not None:
            at[0] = r
        place_request(r, s, e, h, src)
        finish(r)  # the request ends before the next begins: its pins go
        if record:
            occ[r] = cache.size
            if src:
                last_tier[r] = src[-1]
    c = cache
    return Outcome(c.hit_blocks, c.hit_tokens, c.hit_req, c.written, c.demoted, c.evicted, c.peak, hits, occupancy,
                   hit_tier, note)


def ceiling(prep: Prepared) -> tuple[int, int, int]:
    """Infinite capacity, every block admitted: (hit blocks, hit tokens, requests with a hit)."""
    ids, off, tok = prep.ids, prep.offsets, prep.tokens
    seen: set[int] = set()
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
