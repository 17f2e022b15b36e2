"""The tiered block cache: ordered tiers (HBM first) of fixed-size KV blocks, the one statement
of which tier a block goes to, when it moves up or down, which misses are kept, and which block
leaves a full tier (each tier's eviction policy, from the registry in eviction/). The prefix
cache's untimed replay and its timed block store both run this class; a cluster of serving
instances can hold one per instance.

The rules (the prefix cache's engine.py docstring gives their reasons and assumptions):
1. Lookup: a request's hit is the longest prefix of its blocks each resident in some tier; each
   hit block is served by the topmost tier holding it.
2. Blocks in order: block j is pinned in HBM from when the request reaches it until the request
   is `finish`ed (a running request holds its blocks; with `pin` off nothing is protected, and a
   policy that `ignores_pins` ignores them either way). A block in HBM is used there. A hit
   from a lower tier is promoted into HBM (`copy`: the lower copy stays and is used; `move`: it
   leaves); a miss enters HBM if admitted (`always`, `second_hit`: its block was asked for by an
   earlier request, `min_reuse`: it is asked for at least `min_reuse` more times).
3. Entering a full tier evicts its policy's victim. `back`: the victim goes down one tier unless
   a lower tier holds it already, cascading; `through`: a block entering HBM is also written to
   every lower tier (a tier holding it counts a use), and victims are dropped. A clairvoyant
   policy's candidates include the entering block (left out when its next use is the farthest).
4. A tier whose blocks are all pinned or protected cannot take the block: it is not kept there
   (`back` hands it down a tier).

The stream: blocks are positions in one prepared list of block ids (`ids`, tokens per block
`tokens`, optionally `next_pos` (each position's next position with the same id, for
clairvoyant policies), `later` (later occurrences, for min_reuse) and `parent` (for policies
that read it)). A request is a range [s, e) of positions.

Interface:
- `lookup(s, e)` -> the tier of each leading hit block (its length is the hit), counted in the
  hit counters; `matched(blocks)` the same for any block ids, counting nothing (a router's peek);
- `place_request(r, s, e, h, src)`: admit/insert request r's blocks (rules 2-4), pinning them;
- `finish(r)`: request r's pins go;
- `protect`: a set of blocks no tier evicts (prefetch's look-ahead; `set_protect` replaces it,
  `protect_ranges` with the blocks of position ranges);
- `place(k, b)`, `drop(k, b)`, `use(k, b)`: single moves (prefetch copies a block up);
- `set_cap(k, n)`: tier k's capacity becomes n blocks, evicting down to it (a shared HBM pool);
- counters, per tier (lists, top first): `size` (occupancy), `peak`, `hit_blocks`,
  `hit_tokens`, `hit_req`, `written`, `demoted`, `evicted`; `occupancy()` a copy of `size`.
- `on_evict(k, v)`, if set: told of every eviction (a log); `original(b)` a block's own id.

`best_cut` is the load-or-recompute choice: how much of a hit to load, given the links' queues
(kvviz/serving/links.py), the rest recomputed.

`make_cache` gives the compiled twin (kvviz/serving/native/_block_cache.pyx: lru, fifo, belady)
where it can, else this class, with a note saying why.
"""
from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Sequence
from types import ModuleType
from typing import Any, Protocol

import numpy as np

from . import native
from .eviction import Policy, policy_class
from .eviction import make as make_policy
from .links import Link

NO_PINS: frozenset[int] = frozenset()


class BlockCache(Protocol):
    """What a caller may use of a tiered block cache: TieredCache, or its compiled twin
    (_block_cache.BlockCache, which the checker sees as Any: the module docstring's interface)."""
    K: int              # tiers
    ids: Sequence[int]  # position -> block, as this cache names blocks (the compiled one: its dense ids)
    pos: int            # the position being placed (for a log)
    size: list[int]
    peak: list[int]
    hit_blocks: list[int]
    hit_tokens: list[int]
    hit_req: list[int]
    written: list[int]
    demoted: list[int]
    evicted: list[int]
    on_evict: Callable[[int, int], object] | None

    def lookup(self, s: int, e: int, queued: Container[int] | None = None,
               take: Callable[[int], int] | None = None) -> list[int]: ...
    def matched(self, blocks: Iterable[int]) -> list[int]: ...
    def mask(self, b: int) -> int: ...
    def occupancy(self) -> list[int]: ...
    def set_cap(self, k: int, n: int) -> None: ...
    def original(self, b: int) -> int: ...
    def place_request(self, r: int, s: int, e: int, h: int, src: Sequence[int]) -> None: ...
    def finish(self, r: int) -> None: ...
    def unpin(self) -> None: ...
    def set_protect(self, blocks: Iterable[int]) -> None: ...
    def protect_ranges(self, ranges: Iterable[tuple[int, int]]) -> None: ...
    def copy_up(self, s: int, e: int, t: int) -> dict[int, list[int]]: ...
    def use(self, k: int, b: int) -> None: ...
    def drop(self, k: int, v: int) -> int: ...
    def place(self, k: int, b: int) -> None: ...


class Either:
    """`b in` either of two containers (pins and protections)."""
    __slots__ = ("a", "b")

    def __init__(self, a: Container[int], b: Container[int]) -> None:
        self.a, self.b = a, b

    def __contains__(self, x: object) -> bool:
        return x in self.a or x in self.b


def make_cache(ids: Sequence[int], tokens: Sequence[int], caps: Sequence[int], evictions: Sequence[str], *,
               compiled: bool = True, arrays: dict[str, Any] | None = None, **kw: Any) -> tuple[BlockCache, str]:
    """(a tiered block cache, note): the compiled one (kvviz/serving/native/_block_cache.pyx) where
    every tier's policy has a compiled twin and the build can run, else this module's TieredCache
    with a note saying why ("" when the Python one was asked for, `compiled` false). The compiled
    cache's blocks are dense ids in the order of the stream's own (its `ids`; `original(b)` maps
    back), so ties break alike; the two give equal counts (tests/test_block_cache_twin.py)."""
    if not compiled:
        return TieredCache(ids, tokens, caps, evictions, **kw), ""
    if note := fallback_note(evictions):
        return TieredCache(ids, tokens, caps, evictions, **kw), note
    mod = native.block_cache()[0]
    assert mod is not None  # fallback_note says why where it is None
    return compiled_cache(mod, ids, tokens, caps, evictions, arrays=arrays, **kw), ""


def fallback_note(evictions: Iterable[str]) -> str:
    """Why a cache with these policies would be the Python one where the compiled one is asked
    for (a policy without a compiled twin, a missing or stale build, KVVIZ_ENGINE=python), or ""."""
    untwinned = sorted({e for e in evictions if e not in native.TWINS})
    if untwinned:
        return (f"eviction polic{'ies' if len(untwinned) > 1 else 'y'} {', '.join(untwinned)} "
                f"ha{'ve' if len(untwinned) > 1 else 's'} no compiled twin: the Python block cache runs")
    why = native.block_cache()[1]
    return f"{why}: the Python block cache runs, several times slower" if why else ""


def compiled_cache(mod: ModuleType, ids: Sequence[int], tokens: Sequence[int], caps: Sequence[int],
                   evictions: Sequence[str], *, move: bool = False, through: bool = False, admission: str = "always",
                   min_reuse: int = 1, pin: bool = True, protect: bool = False, next_pos: Sequence[int] | None = None,
                   later: Sequence[int] | None = None, parent: dict[int, int | None] | None = None,
                   where_name: str = "the prefix cache", arrays: dict[str, Any] | None = None) -> BlockCache:
    """The compiled twin of TieredCache(ids, tokens, caps, evictions, ...) (module `mod`).
    `arrays`, if given, keeps the stream's C-ready arrays for the next cache over the same
    stream (a workload's runs share them)."""
    for e in evictions:
        make_policy(e, where_name, parent=parent, next_use={})  # refused as the Python cache refuses it
    a: dict[str, Any] = {} if arrays is None else arrays  # numpy arrays and lists, by name
    if "dense" not in a:
        uniq, dense = np.unique(np.asarray(ids, dtype=np.int64), return_inverse=True)
        a["dense"] = np.ascontiguousarray(dense.reshape(-1), dtype=np.int32)
        a["ids"], a["block_ids"] = a["dense"].tolist(), uniq.tolist()
        a["tokens"] = np.array(tokens, dtype=np.int64)  # its own copy
        for name in ("dense", "tokens"):  # the compiled caches read these in place: never written
            a[name].flags.writeable = False
    for name, given in (("next_pos", next_pos), ("later", later)):
        if given is not None and name not in a:
            a[name] = np.asarray(given, dtype=np.int64)
    c = mod.BlockCache(a["dense"], a["tokens"], list(caps), [mod.KINDS[e] for e in evictions],
                       move=move, through=through, admission=admission, min_reuse=min_reuse,
                       pin_top=pin and not policy_class(evictions[0]).ignores_pins, protect=protect,
                       pnext=None if next_pos is None else a["next_pos"], plater=None if later is None else a["later"],
                       n_blocks=len(a["block_ids"]))
    c.ids, c.block_ids = a["ids"], a["block_ids"]
    cache: BlockCache = c  # the compiled class is Any to the checker; it has TieredCache's interface
    return cache


# The cut's compute: kept tokens (an int, or an int64 array of them, one per cut) -> the
# iteration's compute ns (a float, or a float array), as Roofline.prefill_ns takes either.
Compute = Callable[[Any], Any]

# Fewer cuts than this: best_cut walks them in plain Python (numpy's fixed cost per call, tens
# of µs, dwarfs a few cuts' arithmetic); more: as arrays (≈1 µs per cut in Python, far less in
# numpy). benchmarks/bench_best_cut.py measures both sides of it.
FEW_CUTS = 32


def best_cut(src: Sequence[int], hit_tokens: Sequence[int] | np.ndarray, booked: Iterable[tuple[int, int]],
             links: Sequence[Link | None], now: int, L: int, block_bytes: int,
             compute: Compute, landing: Callable[[int], int] | None = None) -> int:
    """Load or recompute: of a request's hit (its leading run of h blocks, `src` their tiers,
    `hit_tokens` their tokens), how many leading blocks to use, the rest recomputed with its
    misses: the cut (0 ≤ cut ≤ h) whose prefill iteration ends soonest, ties to the larger
    (loading). The prefix cache's timed store states the rule and its assumptions.

    The iteration's end for a cut is the layer-wise closed form over the transfers booked for it
    so far (`booked`: (start after latency, end) each) and the cut's own loads, one per link
    (`links[k]`: the Link of tier k, its `free`, `read_lat`, `read_gbps`), queued behind what
    each link has booked, blocks still landing from a prefetch (`landing(i)`: when hit block i
    lands, if any do) no earlier: max(max(S, A) + L·c, B + c), with A = max_x int(start_x +
    (t1_x − start_x)/L), B = max_x t1_x and c = int(compute(kept tokens) / L) ns per layer, in
    the same float and integer steps as the iteration's own end (layerwise_prefill.booked_end,
    so the same ns). Cuts between hit blocks in HBM are never better than the next cut (they
    load nothing more and compute more): only the cuts before a block below HBM, and h.

    Two walks of the one rule, equal cut for cut (tests/test_best_cut.py holds them to each
    other and to booked_end): `_few_cuts` in plain Python, `_many_cuts` as arrays."""
    A = B = now
    for start, t1 in booked:
        A, B = max(A, int(start + (t1 - start) / L)), max(B, t1)
    if len(src) < FEW_CUTS or len(src) - src.count(0) < FEW_CUTS:
        tok = hit_tokens.tolist() if isinstance(hit_tokens, np.ndarray) else hit_tokens
        return _few_cuts(src, tok, A, B, links, now, L, block_bytes, compute, landing)
    return _many_cuts(src, hit_tokens, A, B, links, now, L, block_bytes, compute, landing)


def _few_cuts(src: Sequence[int], tok: Sequence[int], A: int, B: int, links: Sequence[Link | None], now: int,
              L: int, block_bytes: int, compute: Compute, landing: Callable[[int], int] | None) -> int:
    """best_cut, one cut after another: each candidate's end from the per-tier loads so far.
    Python's ints and floats take numpy's int64 and float64 steps here (an int meeting a float
    becomes a float first, as numpy's do; int / int rounds the exact quotient, numpy's the
    quotient of the two as floats: the same while both stay below 2**53), so the same ns."""
    K = len(links)
    n = [0] * K           # per tier, its blocks before the cut
    ready = [now] * K     # per tier, when its blocks before the cut have all landed
    at = [A] * K          # per tier, int(t0 + (t1 − t0)/L) of its load (A while it loads nothing)
    a, b, kept = A, B, 0  # max(S, A) and B over the booked transfers and the cut's loads
    cut, least = len(src), -1
    for i, q in enumerate(src):
        if q:  # the cut before block i
            c = int(compute(kept) / L)
            end = max(a + L * c, b + c)
            if least < 0 or end <= least:  # ties to the larger cut
                cut, least = i, end
            lk = links[q]
            assert lk is not None  # every tier below HBM (q > 0) has its link
            n[q] += 1
            if landing is not None:
                ready[q] = max(ready[q], landing(i))
            t0 = max(ready[q], lk.free) + lk.read_lat
            t1 = t0 + int(n[q] * block_bytes / lk.read_gbps)
            at[q] = int(t0 + (t1 - t0) / L)
            a = max(at)
            if t1 > b:
                b = t1
        kept += tok[i]
    c = int(compute(kept) / L)
    return len(src) if least < 0 or max(a + L * c, b + c) <= least else cut


def _many_cuts(src: Sequence[int], hit_tokens: Sequence[int] | np.ndarray, A: int, B: int,
               links: Sequence[Link | None], now: int, L: int, block_bytes: int, compute: Compute,
               landing: Callable[[int], int] | None) -> int:
    """best_cut, every cut at once as arrays (index k: the cut before the k-th block below HBM,
    and h last)."""
    h = len(src)
    sv = np.array(src, dtype=np.int64)
    below = sv.nonzero()[0]  # the hit blocks below HBM
    m = len(below)
    cuts = np.empty(m + 1, dtype=np.int64)
    cuts[:m], cuts[m] = below, h
    cum = np.zeros(h + 1, dtype=np.int64)
    np.cumsum(hit_tokens, dtype=np.int64, out=cum[1:])
    c = (compute(cum[cuts]) / L).astype(np.int64)
    a = np.full(m + 1, A, dtype=np.int64)
    b = np.full(m + 1, B, dtype=np.int64)
    tiers = sv[below]
    lands = None if landing is None else np.array([landing(i) for i in below.tolist()], dtype=np.int64)
    for q in set(src) - {0}:
        lk = links[q]
        assert lk is not None  # every tier below HBM (q > 0) has its link
        on = tiers == q
        f = int(on.argmax())     # its first block: the cuts after it (f+1..m) load from it
        n = np.cumsum(on[f:])    # its blocks before each of those cuts
        ready: int | np.ndarray = now
        if lands is not None:
            ready = np.maximum(np.maximum.accumulate(np.where(on[f:], lands[f:], 0)), now)
        t0 = np.maximum(ready, lk.free) + lk.read_lat
        t1 = t0 + (n * block_bytes / lk.read_gbps).astype(np.int64)
        np.maximum(a[f + 1:], (t0 + (t1 - t0) / L).astype(np.int64), out=a[f + 1:])
        np.maximum(b[f + 1:], t1, out=b[f + 1:])
    end = np.maximum(a + L * c, b + c)
    return int(cuts[m - int(np.argmin(end[::-1]))])


def prefix_counter(caches: Sequence[BlockCache]) -> Callable[[list[Any], int, int], list[int]] | None:
    """The compiled `resident_prefixes(caches, s, e)` (each cache's leading positions of s..e-1
    resident in some tier, as sum(matched)) where every cache is the compiled one, else None."""
    mod = native.block_cache()[0]
    if mod is None or not all(isinstance(c, mod.BlockCache) for c in caches):
        return None
    count: Callable[[list[Any], int, int], list[int]] = mod.resident_prefixes
    return count


def clairvoyant(policy: str) -> bool:
    """Reads each block's next use from the trace; the entering block a candidate."""
    return "next_use" in policy_class(policy).needs


class TieredCache:
    def __init__(self, ids: Sequence[int], tokens: Sequence[int], caps: Sequence[int], evictions: Sequence[str], *,
                 move: bool = False, through: bool = False, admission: str = "always", min_reuse: int = 1,
                 pin: bool = True, protect: bool = False, next_pos: Sequence[int] | None = None,
                 later: Sequence[int] | None = None, parent: dict[int, int | None] | None = None,
                 where_name: str = "the prefix cache") -> None:
        self.ids, self.tok = ids, tokens
        self.nxt, self.later, self.min_reuse = next_pos, later, min_reuse
        self.K = K = len(caps)
        self.caps = list(caps)
        self.evictions = list(evictions)
        self.move, self.through = move, through
        self.seen: set[int] | None = set() if admission == "second_hit" else None
        self.next_use: dict[int, int] = {}
        self.ev: list[Policy[int]] = [make_policy(e, where_name, parent=parent, next_use=self.next_use) for e in evictions]
        self.reindex = [k for k in range(K) if self.ev[k].reindex]
        self.clairvoyant = {k for k in range(K) if clairvoyant(evictions[k])}
        self.where: dict[int, int] = {}   # block -> bit mask of the tiers holding it
        self.size, self.peak = [0] * K, [0] * K
        self.hit_blocks, self.hit_tokens, self.hit_req = [0] * K, [0] * K, [0] * K
        self.written, self.demoted, self.evicted = [0] * K, [0] * K, [0] * K
        self.pins: dict[int, int] = {}    # block -> running requests holding it in HBM
        self.held: dict[int, list[int]] = {}  # request -> its pinned blocks
        self.protect: set[int] = set()    # blocks no tier evicts (prefetch's look-ahead)
        held: Container[int] = self.pins if pin and not policy_class(evictions[0]).ignores_pins else NO_PINS
        self.top_hold: Container[int] = Either(held, self.protect) if protect else held
        self.low_hold: Container[int] = self.protect if protect else NO_PINS
        self.on_evict: Callable[[int, int], object] | None = None
        self.pos = 0                      # the position being placed (for a log)

    # --- lookup --------------------------------------------------------------------------------
    def lookup(self, s: int, e: int, queued: Container[int] | None = None,
               take: Callable[[int], int] | None = None) -> list[int]:
        """The tiers serving positions s.. (the leading run resident somewhere), counted as hits.
        `queued`/`take`: blocks whose copy up is still queued (prefetch) are served by the tier
        `take(b)` names."""
        ids, tok = self.ids, self.tok
        wget, hit_blocks, hit_tokens = self.where.get, self.hit_blocks, self.hit_tokens
        src: list[int] = []
        add = src.append
        p = s
        while p < e:
            b = ids[p]
            m = wget(b)
            if not m:
                break
            k = (m & -m).bit_length() - 1
            if queued and b in queued:
                assert take is not None  # given with `queued`
                k = take(b)
            add(k)
            hit_blocks[k] += 1
            hit_tokens[k] += tok[p]
            p += 1
        for k in set(src):
            self.hit_req[k] += 1
        return src

    def matched(self, blocks: Iterable[int]) -> list[int]:
        """Per tier, how many of the leading resident run of `blocks` it would serve; counts
        nothing (a router's look at an instance)."""
        out = [0] * self.K
        wget = self.where.get
        for b in blocks:
            m = wget(b)
            if not m:
                break
            out[(m & -m).bit_length() - 1] += 1
        return out

    def mask(self, b: int) -> int:
        """The tiers holding block b, a bit each (0: none), as the compiled twin's `mask`."""
        return self.where.get(b, 0)

    def occupancy(self) -> list[int]:
        return self.size[:]

    def original(self, b: int) -> int:
        """The stream's own id of block b (the same here; the compiled cache's are dense)."""
        return b

    # --- placement (rules 2-4) -----------------------------------------------------------------
    def place_request(self, r: int, s: int, e: int, h: int, src: Sequence[int]) -> None:
        ids, where, pins = self.ids, self.where, self.pins
        nxt, later, seen = self.nxt, self.later, self.seen
        wget, pget, place = where.get, pins.get, self.place
        reindex, ev, move = self.reindex, self.ev, self.move
        touch0 = None if 0 in reindex else ev[0].touch  # a use in HBM (use(0, b))
        self.held.setdefault(r, []).extend(ids[s:e])  # pinned one by one below, as reached
        for j in range(s, e):
            self.pos = j  # for on_evict's log
            b = ids[j]
            pins[b] = pget(b, 0) + 1
            m = wget(b, 0)
            if nxt is not None:
                self.next_use[b] = nxt[j]
                for k in reindex:
                    if m >> k & 1:
                        ev[k].touch(b)
            if m & 1:
                if touch0 is not None:
                    touch0(b)
                continue
            if j - s < h:  # a hit below HBM: promoted
                k = src[j - s]
                if m >> k & 1:  # still there (a step of this request may have pushed it out)
                    if move:
                        self.drop(k, b)
                    elif k not in reindex:  # use(k, b)
                        ev[k].touch(b)
            elif (seen is not None and b not in seen) or (later is not None and later[j] < self.min_reuse):
                continue  # a miss not admitted: computed, not cached
            place(0, b)
            if self.through:
                for k in range(1, self.K):
                    if wget(b, 0) >> k & 1:
                        self.use(k, b)
                    else:
                        place(k, b)
        if seen is not None:
            seen.update(ids[s:e])

    def finish(self, r: int) -> None:
        """Request r ended: its pins go."""
        pins = self.pins
        for b in self.held.pop(r, ()):
            n = pins[b] - 1
            if n:
                pins[b] = n
            else:
                del pins[b]
        self.unpin()

    def unpin(self) -> None:
        """Pins or protections went: every tier's policy may take set-aside blocks back."""
        for ev in self.ev:
            ev.unpin()

    def set_protect(self, blocks: Iterable[int]) -> None:
        """The protected blocks are `blocks` now (the policies told when some were released)."""
        protect = self.protect
        old = len(protect)
        protect.clear()
        protect.update(blocks)
        if len(protect) < old or old:
            self.unpin()

    def copy_up(self, s: int, e: int, t: int) -> dict[int, list[int]]:
        """Prefetch: the leading resident run of positions s.. that sits only below tier t is
        copied up into it (moved, with promote = move). Returns source tier -> its blocks, in
        the order met."""
        ids, wget = self.ids, self.where.get
        fetch: dict[int, list[int]] = {}
        for p in range(s, e):
            b = ids[p]
            m = wget(b)
            if not m:
                break
            k = (m & -m).bit_length() - 1
            if k <= t:
                continue
            if self.move:
                self.drop(k, b)
            else:
                self.use(k, b)
            self.place(t, b)
            fetch.setdefault(k, []).append(b)
        return fetch

    def protect_ranges(self, ranges: Iterable[tuple[int, int]]) -> None:
        """set_protect over the blocks at positions s..e-1 of each (s, e)."""
        ids = self.ids
        self.set_protect([b for s, e in ranges for b in ids[s:e]])

    def use(self, k: int, b: int) -> None:
        if k not in self.reindex:  # a clairvoyant tier was told of the use as the step began
            self.ev[k].touch(b)

    def drop(self, k: int, v: int) -> int:
        """Block v leaves tier k: the tiers still holding it (a bit mask, 0 for none)."""
        self.ev[k].remove(v)
        self.size[k] -= 1
        m = self.where[v] & ~(1 << k)
        if m:
            self.where[v] = m
        else:
            del self.where[v]
        return m

    def set_cap(self, k: int, n: int) -> None:
        """Tier k holds at most n blocks from now (a pool whose free space shrinks, as vLLM's
        cached blocks give way to running ones): its policy's victims leave until it fits, never
        a pinned or protected block; with `back` each goes down a tier (counted as a write)."""
        self.caps[k] = n
        hold = self.top_hold if k == 0 else self.low_hold
        while self.size[k] > n:
            v = self.ev[k].victim(hold)
            if v is None:
                return
            self.evicted[k] += 1
            if self.on_evict is not None:
                self.on_evict(k, v)
            m = self.drop(k, v)
            if not self.through and k + 1 < self.K and not m >> (k + 1):
                self.demoted[k + 1] += 1
                self.place(k + 1, v)

    def place(self, k: int, b: int) -> None:
        """Put b, not resident in tier k, into it. A loop, not recursion: an eviction's victim
        goes on down (write-back) after b is in; each step changes only its own tier, so the
        order is the same as placing the victim first."""
        where, size, caps, K, through = self.where, self.size, self.caps, self.K, self.through
        ev, written, peak, on_evict = self.ev, self.written, self.peak, self.on_evict
        while True:
            e_k = ev[k]
            down: int | None = None  # the victim, when it goes on down a tier (write-back)
            if size[k] >= caps[k]:
                v = e_k.victim(self.top_hold if k == 0 else self.low_hold)
                if v is not None and k in self.clairvoyant and self.next_use[b] >= self.next_use[v]:
                    v = None  # b's own next use is the farthest: b is left out (rule 3)
                if v is None:  # every block here is pinned (or b is the victim): not kept here
                    if not through and k + 1 < K and not where.get(b, 0) >> (k + 1):
                        self.demoted[k + 1] += 1
                        k += 1
                        continue
                    return
                self.evicted[k] += 1
                if on_evict is not None:
                    on_evict(k, v)
                e_k.remove(v)  # drop(k, v), inlined: this is the run's hot path
                size[k] -= 1
                m = where[v] & ~(1 << k)
                if m:
                    where[v] = m
                else:
                    del where[v]
                if not through and k + 1 < K and not m >> (k + 1):
                    down = v
            e_k.insert(b)
            where[b] = where.get(b, 0) | (1 << k)
            size[k] += 1
            written[k] += 1
            if size[k] > peak[k]:
                peak[k] = size[k]
            if down is None:
                return
            self.demoted[k + 1] += 1
            b, k = down, k + 1
