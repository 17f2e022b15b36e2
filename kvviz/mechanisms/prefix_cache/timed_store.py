"""The timed engine's block store: the untimed replay's tiers and rules (engine.py's steps 1-4,
written once in the serving core's tiered block cache, kvviz/serving/tiered_cache.py, which both
run), driven by the serving engine through the serving core's seam (kvviz/serving/kv_source.py)
instead of one request after another.

What time changes (each an ASSUMPTION, ours unless named):
- A request looks up and places its blocks when the scheduler admits it, not when it arrives;
  a block it computes is resident (reusable by a request admitted later) from then on, as vLLM
  allocates a block when it schedules it.
- Its blocks stay pinned in HBM until its last token is out (engine.py pins them only while
  the next request is placed): running requests' blocks are never evicted (with
  `cache.pin_running`, the default; belady ignores pins, as in engine.py).
- Hit blocks below HBM load over their tier's link (kvviz/serving/links.py, `links.rule`): one
  transfer per request and link, booked at its admission after its own write-downs (so the
  write-downs of requests admitted later into the same iteration queue behind it, as the rule
  below assumes), streamed layer by layer (1/layers of each transfer per layer); a layer of the
  prefill iteration computes once every transfer has delivered it. Blocks still landing from a
  prefetch load no earlier.
- Writes down (write-through copies, write-back demotions) are booked on the link of the tier
  they enter when the block is placed.
- Scheduler-aware prefetch (`store.prefetch`): whenever the queue changes, the prefix blocks of
  the first `store.prefetch_lookahead` waiting requests that sit only below `prefetch_tier` are
  copied up into it (moved, with promote = move) over their tier's link, one batched transfer
  per request and link; and every block of those requests is protected from eviction in every
  tier (pinned blocks in HBM likewise). Under `links.rule = demand_first` the transfer waits in
  its link's background queue and moves a block at a time in the link's idle time; a block some
  admitted request hits while it still waits there is taken out and fetched at once as a
  foreground transfer (so the request never waits behind the background queue).
- A block is counted as a hit in the tier it is placed in: a prefetched block counts in
  prefetch_tier from the moment it is queued, landed or not; the load waits for it to land
  (`prefetch_late_blocks` counts the hit blocks that had not landed at admission).

Load or recompute (`store.load_if_faster`, on by default). A request's hit is its leading run
of h resident blocks; it uses the first `cut` of them (those below HBM loaded, as above) and
recomputes blocks cut..h-1 with its misses, the cut (0 ≤ cut ≤ h) chosen at its admission to make
its prefill iteration end soonest, ties to the larger cut (loading). The iteration's end for a
cut is load()'s closed form, evaluated now, without booking: the loads booked for this
iteration so far and the cut's transfers, queued behind what each link has booked (this
request's own write-downs and the prefetches its admission started included), layer by layer
against the compute of the requests this store admitted into the iteration so far plus this one's,
prefill(prompt − kept, after kept) under the roofline. Cuts between hit blocks in HBM are never
better than the next cut (they load nothing more and compute more), so only the cuts before a
block below HBM, and h, are tried.
ASSUMPTIONS, ours:
- The computed tokens are one contiguous suffix of the prompt, so the roofline's prefill(n after
  h) prices them exactly: an HBM hit block after the cut is recomputed too (counted). Using it
  instead would be valid (a block's KV depends only on the tokens up to it), but its compute
  would not be one prefill(n after h).
- Greedy per request: what later requests will load or write is not foreseen (their loads
  join this iteration's end, which their own rule then weighs; a load now can delay a later
  request's, which may then recompute); a request resumed after preemption recomputes its context outside this
  store's sight, so its compute is left out of the iteration's (the rule then errs towards
  recomputing).
- A recomputed hit block is placed exactly as a loaded one (promoted into HBM by
  cache.promote): the rule changes where its KV comes from, never what the tiers hold.
  It counts as a hit of its tier (hit_blocks, token_hit_rate: the cache's figures) and again as
  that tier's recomputed_hit_blocks / recomputed_hit_tokens; prefill_tokens_saved leaves them out.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from functools import partial
from itertools import islice
from typing import Protocol, cast

import numpy as np

from ...serving.batching import Batcher
from ...serving.event_loop import Loop
from ...serving.kv_source import FIRST, HIT_HBM
from ...serving.layerwise_prefill import booked_end
from ...serving.links import Link, Prefetch
from ...serving.roofline import Roofline
from ...serving.tiered_cache import TieredCache, best_cut
from ...trace import TraceBuilder
from .engine import Outcome, Prepared, cache_for
from .model import PrefixCacheScenario

TRACE_TIER = {"hbm": "HBM", "cxl": "CXL", "dram": "DRAM", "ssd": "SSD", "remote": "RDMA"}
# a log's entry: ("admit", j), ("finish", j) or ("evict", tier, block)
LogEntry = tuple[str, int] | tuple[str, int, int]


class StoreRun(Protocol):
    """What the store reads of its run (timed.Run; a protocol: importing it would close an import
    loop): the loop and trace, the per-request token columns it sets at admission, the roofline,
    the batcher's queue (prefetch) and the links' trace lanes."""
    @property
    def loop(self) -> Loop: ...
    @property
    def tb(self) -> TraceBuilder | None: ...
    @property
    def keep(self) -> list[int]: ...
    @property
    def inn(self) -> list[int]: ...
    @property
    def gpu(self) -> Roofline: ...
    @property
    def batcher(self) -> Batcher: ...
    @property
    def link_lanes(self) -> list[int]: ...


class BlockStore:
    stores = False  # the batcher saves nothing: writes down are this store's link transfers

    def __init__(self, run: StoreRun, sc: PrefixCacheScenario, prep: Prepared, caps: list[int], evictions: list[str],
                 prefetch: bool, block_bytes: int, compiled: bool = True) -> None:
        c = sc.cache
        self.run, self.loop = run, run.loop
        self.ids: Sequence[int] = prep.ids
        self.off, self.tok = prep.offsets, prep.tokens
        self.K = K = len(caps)
        self.caps = caps
        self.names = [t.name for t in sc.tiers]
        self.move = c.promote == "move"
        self.prefetch = prefetch
        # the compiled cache where it can run (the note says why not); its ids are its own
        self.cache, self.engine_note = cache_for(prep, caps, evictions, self.move, c.write_policy == "through",
                                                 c.admission, c.min_reuse_count, c.pin_running, protect=prefetch,
                                                 compiled=compiled)
        self.ids = self.cache.ids
        R = len(self.off) - 1
        self.hits = [0] * R
        self._log: list[LogEntry] | None = None  # ("admit", j) / ("finish", j) / ("evict", tier, block), if asked
        self.bb = block_bytes
        L = sc.model.layers
        self.L = L
        self.bg = sc.links.rule == "demand_first"   # prefetches in the links' background queues
        # links[k]: tier k's link to HBM; HBM (k = 0) has none: its slot holds None, never read, so
        # the list is typed as the links it holds (no check per access on the hot path)
        # the links hand back the blocks they were given: this store's (int) block ids
        landed = cast("Callable[[Prefetch, Hashable, int], object]", self._landed)
        self.links = cast("list[Link]", [None]) + [Link(f"{t.name}↔hbm", t.read_gbps, t.write_gbps,
                                                        int(t.read_latency_us * 1e3), int(t.write_latency_us * 1e3),
                                                        sc.links.rule, block_bytes, landed, partial(self._pf_span, k))
                                                   for k, t in enumerate(sc.tiers[1:], 1)]
        self.queued: dict[int, tuple[int, Prefetch]] = {}  # demand_first: block -> (its link, its waiting Prefetch)
        self.late_blocks = 0
        self.cancelled = 0
        self.pf_tier = self.names.index(sc.store.prefetch_tier) if prefetch else 0
        self.lookahead = sc.store.prefetch_lookahead
        self.landing: dict[int, int] = {}  # block -> when its prefetch lands
        self.pf_done: set[int] = set()    # requests prefetched for
        self.prefetched_blocks = 0
        self.booked: list[tuple[int, int]] = []  # the iteration's loads: (start after latency, end)
        # the trace's flows: the iteration's loads share one id with the part of its prefill that
        # runs once they are all in (timed.py draws it); loads_in = (S, when they are in, that id)
        self.flow = 0
        self.loads_in: tuple[int, int, int] | None = None
        self.tb = run.tb
        self.load_if_faster = sc.store.load_if_faster
        self.tok_np = np.asarray(prep.tokens, dtype=np.int64)
        self.iter_at, self.iter_comp = -1, 0.0  # the iteration starting at iter_at: its compute so far
        self.recomputed_blocks, self.recomputed_tokens = [0] * K, [0] * K

    # --- the seam (kv_source.py) --------------------------------------------------------------
    def arrived(self, j: int) -> None:
        if self.prefetch:
            self._look_ahead()

    def admit(self, j: int, hbm_hit: bool) -> tuple[int, int, int, int]:
        ids, tok, K = self.ids, self.tok, self.K
        s, e = self.off[j], self.off[j + 1]
        bg, queued = self.bg, self.queued
        if bg:
            for lk in self.links[1:]:
                lk.advance(self.loop.now)  # pieces that ran in the idle time so far have landed
        src = self.cache.lookup(s, e, queued if bg else None, self._cancel)
        h = len(src)
        self.hits[j] = h
        now = self.loop.now
        cache = self.cache
        before = cache.written[:]  # a copy (the Python cache gives its own list)
        if self.log is not None:
            self.log.append(("admit", j))
        cache.place_request(j, s, e, h, src)
        after = cache.written
        for k in range(1, K):  # writes down, booked on the link of the tier they enter
            n = after[k] - before[k]
            if n:
                self._transfer(k, n * self.bb, now, True, j, "save", f"write {n} blocks into {self.names[k]}")
        if self.prefetch:
            self._look_ahead()
        run = self.run
        total = run.keep[j] + run.inn[j]
        if self.iter_at != now:  # the first admission of an iteration
            self.iter_at, self.iter_comp = now, 0.0
        cut = self._cut(s, h, src, total, now) if self.load_if_faster and any(src) else h
        load = 0
        landing = self.landing
        nbytes, ready = [0] * K, [now] * K
        if landing:
            for i in range(cut):  # the hit blocks used: those below HBM load over their tier's link
                k = src[i]
                if k:
                    nbytes[k] += self.bb
                    t = landing.get(ids[s + i], 0)
                    if t > now:
                        self.late_blocks += 1
                    if t > ready[k]:
                        ready[k] = t
        elif cut:  # nothing prefetched: counted per tier (C speed; the loop above, less its landing)
            for k, n in Counter(src[:cut] if cut < h else src).items():
                if k:
                    nbytes[k] = n * self.bb
        for k in range(1, K):  # one transfer per link, booked now
            if nbytes[k]:
                load += nbytes[k]
                t0, t1 = self._transfer(k, nbytes[k], ready[k], False, j, "load",
                                        f"load {nbytes[k] // self.bb} blocks {self.names[k]}→hbm", flow=self.flow)
                self.booked.append((t0 + self.links[k].read_lat, t1))
        for i in range(cut, h):  # recomputed
            self.recomputed_blocks[src[i]] += 1
            self.recomputed_tokens[src[i]] += tok[s + i]
        kept = sum(tok[s:s + cut])
        run.keep[j], run.inn[j] = kept, total - kept
        self.iter_comp += run.gpu.prefill_ns(total - kept, kept)
        return (HIT_HBM if cut else FIRST), load, 0, 0

    def _cut(self, s: int, h: int, src: list[int], total: int, now: int) -> int:
        """How many leading hit blocks to use (the rest of the hit is recomputed): the tiered
        cache's load-or-recompute choice (tiered_cache.best_cut) for this iteration's bookings."""
        landing, ids = self.landing, self.ids
        comp, prefill = self.iter_comp, self.run.gpu.prefill_ns
        return best_cut(src, self.tok_np[s:s + h], self.booked, self.links, now, self.L, self.bb,
                        lambda kept: comp + prefill(total - kept, kept),
                        (lambda i: landing.get(ids[s + i], 0)) if landing else None)

    def load(self, jobs: list[int], a: int, b: int, ready: int, S: int, comp_ns: float) -> tuple[int, int, None]:
        """The iteration's loads were booked at their requests' admissions (one transfer per
        request and link), 1/L of each per layer; layer i computes once every transfer has
        delivered its piece i: the iteration ends at max(S + L·c, over transfers, the closed
        form of layerwise_prefill.prefill_end with no buffer) (`booked_end`)."""
        pe, waited = booked_end(self.booked, S, comp_ns, self.L)
        if self.tb is not None and self.booked:
            self.loads_in = (S, max(t1 for _, t1 in self.booked), self.flow)
            self.flow += 1
        self.booked.clear()
        return pe, waited, None

    def resume(self, j: int, context: int) -> tuple[int, int]:
        """A preempted request comes back (`serving.resume_from_cache`) to prefill its `context`
        tokens again: as at admission, its prompt's leading resident blocks are its hit (HBM's
        used in place, those below loaded over their links, booked now for this iteration, the
        tail recomputed where that ends the iteration sooner, with store.load_if_faster); the
        rest of its context is recomputed. Nothing is placed or counted as a hit again (its
        blocks were placed at its admission). Returns (tokens kept, bytes loaded)."""
        c, ids, tok = self.cache, self.ids, self.tok
        tiered = cast(TieredCache, c)  # read where c has no mask: the Python cache
        mask: Callable[[int], int] = c.mask if hasattr(c, "mask") else (lambda b: tiered.where.get(b, 0))
        s, e = self.off[j], self.off[j + 1]
        src: list[int] = []
        for p in range(s, e):
            m = mask(ids[p])
            if not m:
                break
            src.append((m & -m).bit_length() - 1)
        h = len(src)
        now = self.loop.now
        if self.iter_at != now:
            self.iter_at, self.iter_comp = now, 0.0
        cut = self._cut(s, h, src, context, now) if self.load_if_faster and any(src) else h
        load = 0
        for k, n in Counter(src[:cut]).items():
            if k:
                t0, t1 = self._transfer(k, n * self.bb, now, False, j, "load",
                                        f"load {n} blocks {self.names[k]}→hbm (resumed after preemption)",
                                        flow=self.flow)
                self.booked.append((t0 + self.links[k].read_lat, t1))
                load += n * self.bb
        kept = sum(tok[s:s + cut])
        self.iter_comp += self.run.gpu.prefill_ns(context - kept, kept)
        return kept, load

    def finished(self, j: int) -> None:
        if self.log is not None:
            self.log.append(("finish", j))
        self.cache.finish(j)
        if self.prefetch:
            self._look_ahead()

    # the cache's counters, per tier
    @property
    def size(self) -> list[int]:
        return self.cache.size

    @property
    def peak(self) -> list[int]:
        return self.cache.peak

    @property
    def hit_blocks(self) -> list[int]:
        return self.cache.hit_blocks

    @property
    def hit_tokens(self) -> list[int]:
        return self.cache.hit_tokens

    @property
    def hit_req(self) -> list[int]:
        return self.cache.hit_req

    @property
    def written(self) -> list[int]:
        return self.cache.written

    @property
    def demoted(self) -> list[int]:
        return self.cache.demoted

    @property
    def evicted(self) -> list[int]:
        return self.cache.evicted

    @property
    def log(self) -> list[LogEntry] | None:
        return self._log

    @log.setter
    def log(self, log: list[LogEntry] | None) -> None:
        """A list to log admissions, completions and evictions into (None: no log)."""
        self._log = log
        orig = self.cache.original
        self.cache.on_evict = None if log is None else (lambda k, v: log.append(("evict", k, orig(v))))

    def _cancel(self, b: int) -> int:
        """b's prefetch has not started: cancelled, b is loaded from its source tier."""
        k, pf = self.queued.pop(b)
        self.links[k].take(pf, b)
        self.cancelled += 1
        return k

    # --- scheduler-aware prefetch --------------------------------------------------------------
    def _look_ahead(self) -> None:
        t, off = self.pf_tier, self.off
        window = list(islice(self.run.batcher.waiting, self.lookahead))
        self.cache.protect_ranges([(off[r], off[r + 1]) for r in window])
        now = self.loop.now
        before = self.cache.written[:]
        for r in window:
            if r in self.pf_done:
                continue
            self.pf_done.add(r)
            fetch = self.cache.copy_up(off[r], off[r + 1], t)  # source tier -> the blocks fetched from it
            for k, blocks in fetch.items():
                self.prefetched_blocks += len(blocks)
                if self.bg:
                    pf = Prefetch(r, blocks, now)
                    self.links[k].enqueue(pf, now)
                    for b in blocks:
                        self.queued[b] = (k, pf)
                    continue
                _, t1 = self._transfer(k, len(blocks) * self.bb, now, False, r, "prefetch",
                                       f"prefetch {len(blocks)} blocks {self.names[k]}→{self.names[t]}",
                                       dst=self.names[t])
                for b in blocks:
                    self.landing[b] = t1
        after = self.cache.written
        for k in range(t + 1, self.K):  # the demotions the prefetches caused, into the tiers below
            n = after[k] - before[k]
            if not n:
                continue
            if self.bg:  # part of the prefetch: background too
                self.links[k].enqueue(Prefetch(-1, range(n), now, write=True), now)
            else:
                self._transfer(k, n * self.bb, now, True, -1, "save", f"write {n} blocks into {self.names[k]} "
                                                                      f"(pushed down by prefetch)", dst=self.names[k - 1])

    def _landed(self, pf: Prefetch, b: int, t: int) -> None:
        if not pf.write:
            self.landing[b] = t
            self.queued.pop(b, None)

    def _pf_span(self, k: int, pf: Prefetch, t0: int, t1: int, n: int) -> None:
        if self.tb is not None:
            t = self.names[self.pf_tier]
            nm = self.names
            if pf.write:
                self.tb.span(self.run.link_lanes[k], t0, t1, "save", f"write {n} blocks into {nm[k]} (pushed down "
                             f"by prefetch; idle time)", bytes=n * self.bb, src=TRACE_TIER[nm[k - 1]],
                             dst=TRACE_TIER[nm[k]], items=n)
            else:
                self.tb.span(self.run.link_lanes[k], t0, t1, "prefetch", f"prefetch {n} blocks {nm[k]}→{t} (idle "
                             f"time)", ref=pf.job, bytes=n * self.bb, src=TRACE_TIER[nm[k]], dst=TRACE_TIER[t],
                             job=pf.job, items=n)

    def close(self) -> None:
        """The run is over: whatever prefetch still waits is reported (none: every request was
        admitted, taking its blocks)."""
        for lk in self.links[1:]:
            lk.drain()

    # --- links -------------------------------------------------------------------------------
    def _transfer(self, k: int, nbytes: int, earliest: int, write: bool, job: int, kind: str, label: str,
                  dst: str = "hbm", flow: int = -1) -> tuple[int, int]:
        lk = self.links[k]
        if self.bg:
            lk.advance(self.loop.now)
        t0, t1 = lk.book(nbytes, earliest, write)
        if self.tb is not None:
            src, to = (dst if write else self.names[k]), (self.names[k] if write else dst)
            self.tb.span(self.run.link_lanes[k], t0, t1, kind, label, ref=job, bytes=int(nbytes), src=TRACE_TIER[src],
                         dst=TRACE_TIER[to], job=job, items=int(nbytes) // self.bb, flow=flow)  # the blocks moved
        return t0, t1

    def outcome(self) -> Outcome:
        return Outcome(self.hit_blocks, self.hit_tokens, self.hit_req, self.written, self.demoted, self.evicted,
                       self.peak, np.array(self.hits, dtype=np.int64), None)
