"""An instance's block cache: the serving core's tiered block cache (kvviz/serving/tiered_cache.py:
its lookup, placement, demotion and eviction rules, written once) driven through the serving
core's seam (kv_source.py), with the tier links timed (kvviz/serving/links.py, `fifo`).

Tiers: HBM (`instance.hbm_cache_tokens`) and, unless the pool is shared, a local DRAM tier
(`instance.dram_cache_tokens`, 0 = none); promote = copy, write = back, admission = always, a
running request's blocks pinned in HBM (the prefix cache's defaults).

Timing, the prefix cache's timed engine without prefetch (the rules of its timed_store.py; ours
written again here over the shared cache, as a mechanism never imports another): a request looks
up and places its blocks when the scheduler admits it; the write-downs its placement causes are
booked on the link of the tier they enter; with `instance.load_if_faster` (the default) the
serving core's load-or-recompute choice (tiered_cache.best_cut) picks how many leading hit blocks
to use, the rest recomputed (still counted as hits, as the prefix cache counts them); the used
hit blocks below HBM load as one transfer per link; the prefill iteration's layer i computes once
every transfer booked for the iteration has delivered its i-th of L equal pieces.

What the cluster adds (beyond the seam): `resident_prefix` and `holds` (the router's match and
the pool's chain, counting nothing); blocks fetched for a request from a peer or the pool
(`run.fetched_ids`) continue its hit chain at admission after its own resident blocks (they land
in its running KV in HBM, then are placed like any block it reached), and `admit` makes its
prefill iteration wait for their transfer, layer by layer (booked with its loads).
The shared HBM pool (`instance.hbm_pool = shared`, vLLM's one pool of KV blocks): the batcher's
pool (its `tok_run` against `cap_tok`) is `instance.hbm_cache_tokens`, and the HBM tier holds the
blocks the running requests hold (pinned) plus as many cached blocks as the pool has free
(`fit`: its capacity set to pinned + free before each admission's placement and each routing
look, the LRU victims leaving, written down to DRAM if there is a DRAM tier). A running
request's leading blocks that another running request on the instance already holds are shared,
not counted twice (vLLM's reference-counted blocks): the batcher admits a request on the blocks
it lacks (batchers.py, `held_tokens`), and the shared tokens go back on the count when the
other holder ends first (`share`, `unshare`). ASSUMPTIONS,
ours: the cache gives way only at those moments (a run of decodes counted as far as it has got); a preempted request keeps its
pins until it ends (the cluster cache's rule), so its shared blocks stay counted once.
Bytes of a block: its tokens × KV bytes per token (RAGPulse chunks differ in length); a write
down counts the nominal block (ASSUMPTION: the cache counts blocks written, not their tokens).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ...serving.batching import DECODE
from ...serving.kv_source import FIRST, HIT_HBM, LayerSchedule
from ...serving.layerwise_prefill import booked_end
from ...serving.links import Link
from ...serving.tiered_cache import best_cut, make_cache

if TYPE_CHECKING:
    from ...serving.batching import Batcher
    from ...serving.event_loop import Loop
    from ...serving.roofline import Roofline
    from ...trace import TraceBuilder
    from .model import ClusterScenario
    from .workload import Work


class Instance(Protocol):
    """What the cache reads of its instance (instance.py's Instance)."""
    index: int
    tb: TraceBuilder | None
    l_dram: int
    gpu: Roofline
    keep: list[int]
    inn: list[int]
    batcher: Batcher
    fetched_ids: dict[int, set[int]]
    fetches: dict[int, list[tuple[int, int, int]]]

    def admitted(self, j: int) -> None: ...
    def transfer(self, lane: int, t0: int, t1: int, kind: str, label: str, j: int, nbytes: int, src: str,
                 dst: str) -> None: ...


class Stream(Protocol):
    """What the cache reads of the cluster run when it is made (run.py's ClusterRun)."""
    sc: ClusterScenario
    loop: Loop
    work: Work
    ids: list[int]
    off: list[int]
    tok: list[int]
    cum_tokens: list[int]
    distinct_blocks: int
    parent: dict[int, int | None] | None
    cache_arrays: dict[str, Any]
    kv: int
    layers: int

COMPILED_BUDGET = 1e9  # bytes all instances' compiled caches may take (ASSUMPTION: a laptop's share)


def compiled_bytes(positions: int, blocks: int, tiers: int) -> int:
    """One compiled cache's arrays (kvviz/serving/native/_block_cache.pyx's __cinit__): a copy of
    the stream's ids and tokens per position, and per distinct block its residency, each tier's
    links and state, pins, next use and flags."""
    return positions * 12 + blocks * (tiers * 9 + 19)


class InstanceCache:
    stores = False  # the batcher saves nothing: writes down are this cache's link transfers

    def __init__(self, inst: Instance, cluster: Stream) -> None:
        sc = cluster.sc
        ins = sc.instance
        self.run, self.loop = inst, cluster.loop
        self.ids, self.off, self.tok = cluster.ids, cluster.off, cluster.tok
        bt = cluster.work.block_tokens
        caps = [max(1, ins.hbm_cache_tokens // bt)]
        self.names = ["hbm"]
        if ins.dram_cache_tokens and not sc.pool.shared:
            caps.append(max(1, ins.dram_cache_tokens // bt))
            self.names.append("dram")
        # the compiled cache where it can run (the serving core's twin) and its arrays, sized by the
        # whole stream per instance, fit the budget; else the Python one (memory ∝ what it holds), noted
        need = compiled_bytes(len(self.ids), cluster.distinct_blocks, len(caps)) * sc.cluster.instances
        self.cache, self.note = make_cache(self.ids, self.tok, caps, [ins.eviction] * len(caps),
                                           compiled=need <= COMPILED_BUDGET, parent=cluster.parent,
                                           where_name="the cluster", arrays=cluster.cache_arrays)
        if need > COMPILED_BUDGET:
            self.note = (f"the compiled block cache's arrays for {sc.cluster.instances} instances over this stream "
                         f"({need / 1e9:.1f} GB) exceed {COMPILED_BUDGET / 1e9:.0f} GB: the Python block cache runs "
                         f"(its memory grows with the blocks it holds)")
        self.cids = self.cache.ids  # the cache's own ids per position (the compiled one's are dense)
        self.load_if_faster = ins.load_if_faster
        self.tok_np = cluster.work.tokens
        self.cum = cluster.cum_tokens  # tokens before each position: a range's tokens in O(1)
        self.iter_at, self.iter_comp = -1, 0.0  # the iteration starting at iter_at: its compute so far
        self.recomputed_blocks = self.recomputed_tokens = 0
        self.kv, self.bb, self.L = cluster.kv, bt * cluster.kv, cluster.layers
        self.links: list[Link | None] = [None] + [Link(f"{nm}↔hbm · instance {inst.index}", ins.dram_read_gbps, ins.dram_write_gbps, 0, 0)
                               for nm in self.names[1:]]
        self.hits: dict[int, int] = {}      # hit blocks per request routed here (its own and fetched)
        self.own_hits: dict[int, int] = {}  # of those, resident in the instance's own tiers
        self.fetched_hit_blocks = self.fetched_hit_tokens = 0
        self.booked: list[tuple[int, int]] = []  # the iteration's transfers: (start after latency, end)
        self.shared = ins.hbm_pool == "shared"
        self.pool_tok, self.bt = caps[0] * bt, bt
        self.refs: dict[int, int] = {}  # shared pool: block -> running requests holding it
        self.credited: dict[int, int] = {}  # shared pool: job -> tokens the batcher did not count at admission

    # --- the seam (kv_source.py) --------------------------------------------------------------
    def arrived(self, j: int) -> None:
        pass

    def admit(self, j: int, hbm_hit: bool) -> tuple[int, int, int, int]:
        inst = self.run
        inst.admitted(j)  # the instance's queue estimate drops (and the pool takes the blocks) first
        s, e = self.off[j], self.off[j + 1]
        cache, tok, now = self.cache, self.tok, self.loop.now
        src = cache.lookup(s, e)
        own = len(src)
        got = self.run.fetched_ids.pop(j, None)
        if got:  # the chain goes on through blocks fetched for this request (their KV is in HBM)
            p, ids = s + own, self.ids
            while p < e and ids[p] in got:
                src.append(0)
                self.fetched_hit_blocks += 1
                self.fetched_hit_tokens += tok[p]
                p += 1
        h = len(src)
        self.hits[j], self.own_hits[j] = h, own
        K = cache.K
        before = cache.written[:] if K > 1 else None
        if self.shared:
            self.share(j, s, e)
            self.fit()
        cache.place_request(j, s, e, h, src)
        if before is not None:
            after = cache.written
            for k in range(1, K):  # writes down, booked on the link of the tier they enter
                n = after[k] - before[k]
                lk = self.links[k]
                if n and lk is not None:  # every tier below HBM has its link
                    t0, t1 = lk.book(n * self.bb, now, True)
                    if inst.tb is not None:
                        inst.transfer(inst.l_dram, t0, t1, "save", f"write {n} blocks HBM→DRAM", j, n * self.bb,
                                      "HBM", "DRAM")
        run = inst
        total = run.keep[j] + run.inn[j]
        if self.iter_at != now:  # the first admission of an iteration
            self.iter_at, self.iter_comp = now, 0.0
        cut = h
        deep = h > 0 and any(src)  # some hit block sits below HBM
        if self.load_if_faster and deep:  # load or recompute: the serving core's choice
            comp, prefill = self.iter_comp, run.gpu.prefill_ns
            cut = best_cut(src, self.tok_np[s:s + h], self.booked, self.links, now, self.L, self.bb,
                           lambda kept: comp + prefill(total - kept, kept))
        load = 0
        if deep:
            nbytes = [0] * K
            for i in range(cut):  # the hit blocks used: those below HBM load over their tier's link, one transfer each
                if src[i]:
                    nbytes[src[i]] += tok[s + i] * self.kv
            for k in range(1, K):
                lk = self.links[k]
                if nbytes[k] and lk is not None:  # every tier below HBM has its link
                    load += nbytes[k]
                    t0, t1 = lk.book(nbytes[k], now, False)
                    self.booked.append((t0 + lk.read_lat, t1))
                    if inst.tb is not None:
                        inst.transfer(inst.l_dram, t0, t1, "load", "load DRAM→HBM", j, nbytes[k], "DRAM", "HBM")
        cum = self.cum
        if cut < h:  # recomputed, still counted as hits (the cache's figures), as the prefix cache counts them
            self.recomputed_blocks += h - cut
            self.recomputed_tokens += cum[s + h] - cum[s + cut]
        kept = cum[s + cut] - cum[s]
        run.keep[j], run.inn[j] = kept, total - kept
        self.iter_comp += run.gpu.prefill_ns(total - kept, kept)
        fetches = inst.fetches.pop(j, None)
        if fetches:  # from a peer or the pool: the prefill iteration waits for them, layer by layer
            for t0, t1, fetched_bytes in fetches:
                if t1 > now:
                    self.booked.append((t0, t1))
                    load += fetched_bytes
        return (HIT_HBM if cut else FIRST), load, 0, 0

    def resume(self, j: int, context: int) -> tuple[int, int]:
        """A request preempted here comes back (`instance.resume_from_cache`) to prefill its
        `context` tokens again, as the prefix cache's timed store rules: its prompt's leading
        blocks resident in some tier are used (HBM's in place, those below loaded over their
        link, booked now for this iteration; with load_if_faster the tail recomputed where that
        ends the iteration sooner), the rest of its context recomputed; nothing placed or counted
        as a hit again (its blocks were placed at its admission). (tokens kept, bytes loaded)."""
        mask, cids, tok = self.cache.mask, self.cids, self.tok
        s, e = self.off[j], self.off[j + 1]
        src: list[int] = []
        for p in range(s, e):
            m = mask(cids[p])
            if not m:
                break
            src.append((m & -m).bit_length() - 1)  # the top tier holding it
        h = len(src)
        now = self.loop.now
        if self.iter_at != now:  # the first admission of an iteration
            self.iter_at, self.iter_comp = now, 0.0
        gpu = self.run.gpu
        cut = h
        if self.load_if_faster and any(src):
            comp, prefill = self.iter_comp, gpu.prefill_ns
            cut = best_cut(src, self.tok_np[s:s + h], self.booked, self.links, now, self.L, self.bb,
                           lambda kept: comp + prefill(context - kept, kept))
        inst, load = self.run, 0
        for k in range(1, self.cache.K):  # a block's bytes are its tokens' (as admit's loads)
            nbytes = sum(tok[s + i] for i in range(cut) if src[i] == k) * self.kv
            lk = self.links[k]
            if nbytes and lk is not None:  # every tier below HBM has its link
                t0, t1 = lk.book(nbytes, now, False)
                self.booked.append((t0 + lk.read_lat, t1))
                load += nbytes
                if inst.tb is not None:
                    inst.transfer(inst.l_dram, t0, t1, "load", "load DRAM→HBM (resumed after preemption)", j, nbytes,
                                  "DRAM", "HBM")
        kept = self.cum[s + cut] - self.cum[s]
        self.iter_comp += gpu.prefill_ns(context - kept, kept)
        return kept, load

    def load(self, jobs: list[int], a: int, b: int, ready: int, S: int, comp_ns: float) \
            -> tuple[int, int, LayerSchedule | None]:
        """As the prefix cache's timed store: the loads booked at admission, 1/L per layer."""
        pe, waited = booked_end(self.booked, S, comp_ns, self.L)
        self.booked.clear()
        return pe, waited, None

    def finished(self, j: int) -> None:
        self.cache.finish(j)
        if self.shared:
            self.unshare(j)

    # --- the shared HBM pool --------------------------------------------------------------------
    def share(self, j: int, s: int, e: int) -> None:
        """j's blocks join the running set; those already held by a running request are counted once."""
        refs, ids, tok = self.refs, self.ids, self.tok
        dup = 0
        for p in range(s, e):
            b = ids[p]
            c = refs.get(b, 0)
            if c:
                dup += tok[p]
            refs[b] = c + 1
        # the batcher admitted j counting all but what was held then; a request admitted with
        # it in the same iteration may have placed more of j's blocks since
        self.run.batcher.tok_run -= dup - self.credited.pop(j, 0)

    def held_tokens(self, j: int) -> int:
        """Tokens of j's blocks a running request on the instance holds now (the batcher's credit)."""
        refs, ids, tok = self.refs, self.ids, self.tok
        if not refs:
            return 0
        return sum(tok[p] for p in range(self.off[j], self.off[j + 1]) if ids[p] in refs)

    def unshare(self, j: int) -> None:
        """j ended (the batcher took its whole context off): the blocks it shared with a request
        still running are that one's alone now, counted again."""
        refs, ids, tok = self.refs, self.ids, self.tok
        back = 0
        for p in range(self.off[j], self.off[j + 1]):
            b = ids[p]
            c = refs[b] - 1
            if c:
                refs[b] = c
                back += tok[p]
            else:
                del refs[b]
        self.run.batcher.tok_run += back

    def fit(self) -> None:
        """The HBM tier's capacity: the running requests' blocks plus the pool's free blocks."""
        b = self.run.batcher
        used = b.tok_run
        if b.state == DECODE and b.seg is not None:  # the batcher counts a run of decodes at its end
            T_s, n, ctx, k, _ = b.seg
            used += n * min(k, b.gpu.decode_steps_to(n, ctx, self.loop.now - T_s))
        free = max(0, self.pool_tok - used) // self.bt
        self.cache.set_cap(0, len(self.refs) + free)


def make_store(inst: Instance, cluster: Stream) -> InstanceCache:
    return InstanceCache(inst, cluster)


def holds(store: InstanceCache, pos: int) -> bool:
    """Whether the block at stream position `pos` is resident in some tier of the instance."""
    return any(store.cache.matched((store.cids[pos],)))


def resident_prefix(store: InstanceCache, j: int) -> int:
    """Leading blocks of request j resident in some tier of the instance (counts nothing)."""
    s, e = store.off[j], store.off[j + 1]
    return sum(store.cache.matched(store.cids[s:e]))


def counts(store: InstanceCache) -> tuple[list[int], list[int]]:
    """(hit blocks, hit tokens) per tier, top first."""
    return store.cache.hit_blocks, store.cache.hit_tokens
