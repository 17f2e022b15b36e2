"""One cluster run: N instances on one event loop, a router, peer links, and the optional shared
pool. Not a new engine: each instance is the serving core's batcher over its own block cache
(instance.py); the cluster only decides where a request goes and moves KV between instances.

A request arriving at its trace time is routed at once (ASSUMPTION, ours: the router takes no
time). Under SLO admission (`routing.ttft_slo_s` > 0) it is rejected, counted and never served,
when the router's TTFT estimate for its pick exceeds the SLO. Otherwise it joins its
instance's queue; a fetch the router decided (global_cache_aware) is booked on the peer links
now and the fetched blocks enter the instance's cache now; its prefill waits for them layer by
layer. With a P/D split the prefill instance computes the prompt and the first token, then its
KV (prompt + that token) moves over the peer links to the decode instance with the least
running KV (fewest waiting on ties, then the lowest index), which decodes the rest.

Event order is the single-instance timed engine's: arrivals are one stream at priority 2, so
one instance with any router gives exactly the prefix cache's numbers on the same workload.
"""
from __future__ import annotations

from operator import attrgetter
from typing import TYPE_CHECKING

from ...gc_pause import gc_paused
from ...serving.batching import BatchConfig, Batcher
from ...serving.event_loop import Loop
from ...serving.roofline import Roofline
from ...trace import TraceBuilder
from . import cache, jobs, routers
from .instance import Instance
from .peers import PeerLinks
from .pool import SharedPool
from .prepared import Prepared
from .view import View
from .workload import Work

if TYPE_CHECKING:
    from .model import ClusterScenario

TOK_RUN = attrgetter("tok_run")  # a batcher's running KV, tokens (the P/D hand-off's choice)


class ClusterRun:
    def __init__(self, sc: ClusterScenario, work: Work, record: bool = True, prep: Prepared | None = None) -> None:
        """`prep`: the workload's lists (prepared.py), shared by runs over the same workload; made here if not given."""
        self.sc, self.work = sc, work
        if prep is None or prep.work is not work:
            prep = Prepared(work)
        self.tb: TraceBuilder | None = TraceBuilder(item_name="request") if record else None
        n = len(work)
        self.loop = Loop()
        m, ins = sc.model, sc.instance
        self.kv, self.layers = m.kv_bytes_per_token, m.layers
        self.gpu = Roofline(m.params_b * 1e9, ins.gpus, ins.gpu_peak_tflops, ins.mfu, ins.hbm_tbps,
                            ins.hbm_efficiency, m.kv_bytes_per_token, m.layers, m.d_model)
        self.ids, self.off, self.tok = prep.ids, prep.off, prep.tok
        self.cum_tokens = prep.cum_tokens
        self.inn0 = prep.inn0
        self.sparse = jobs.use_dicts(sc.cluster.instances, n)  # per-job state as dicts past the lists' budget (jobs.py)
        if not self.sparse:  # else arrays (jobs.py), made once here for every instance
            self.inn0_column, self.identity = jobs.int_column(self.inn0), jobs.int_column(range(n))
        self.parent = prep.parent() if sc.instance.eviction == "leaf_lru" else None
        self.cache_arrays = prep.cache_arrays  # the stream's arrays for the compiled caches, shared by all instances
        self.distinct_blocks = prep.distinct_blocks
        self.hbm_blocks = max(1, ins.hbm_cache_tokens // work.block_tokens)
        # every arrival as a mark (its job): the lane above the instances', where a view finds each
        # request's arrival and so its TTFT (the job's first mark on its prefill instance's GPU lane)
        self.l_arrive = self.tb.lane("router · arrivals", "router") if self.tb is not None else -1
        c = sc.cluster
        N, P = c.instances, c.prefill_instances
        self.split = P > 0
        self.n_route = P if self.split else N
        cfg = BatchConfig(gpu=self.gpu, kv=self.kv, layers=m.layers, max_batch=ins.max_batch,
                          cap_tok=(ins.hbm_cache_tokens if ins.hbm_pool == "shared"
                                   else int(ins.running_kv_gb * 1e9) // self.kv), save_gbps=1.0, write_buffer=0.0,
                          sync_save=False, hbm_cache=False)
        out = prep.out
        one = [1] * n
        self.inst = [Instance(self, k, ("prefill" if k < P else "decode") if self.split else "both", cfg,
                              one if (self.split and k < P) else out) for k in range(N)]
        self.dec_batchers: list[Batcher] = [i.batcher for i in self.inst[self.n_route:]] if self.split else []
        self.dec_arrive = [i.arrive for i in self.inst[self.n_route:]] if self.split else []  # bound once
        self.peers = PeerLinks(N, c.peer_gbps, int(c.peer_latency_us * 1e3))
        self.pool = SharedPool(self) if sc.pool.shared else None
        self.view = View(self)
        self.router = routers.make(sc.routing.policy, self.view, sc.routing)
        self.slo_ns = sc.routing.ttft_slo_s * 1e9
        self.out = out
        # per request
        self.where = [-1] * n           # prefill instance
        self.decoder = [-1] * n         # decode instance (P/D split)
        self.rejected = [False] * n
        self.fetched = [0] * n          # blocks fetched from a peer
        self.fetch_src = [-1] * n
        self.pooled = [0] * n           # blocks fetched from the shared pool
        self.times = prep.times

    # --- arrivals and routing -----------------------------------------------------------------
    def arrive(self, j: int) -> None:
        d = self.router.route(j)
        rejected = bool(self.slo_ns) and self.router.estimate_ns(j, d) > self.slo_ns
        if self.tb is not None:  # a routed arrival starts its request's flow (to its prefill's mark)
            self.tb.instant(self.l_arrive, self.loop.now, "arrive", j, job=j, flow=-1 if rejected else j)
        if rejected:
            self.rejected[j] = True
            return
        self.router.routed(j, d)
        k = d.instance
        inst = self.inst[k]
        self.where[j] = k
        if d.fetch_from >= 0 and d.fetch_blocks > d.local_blocks:
            have, best = d.local_blocks, d.fetch_blocks
            nbytes = (self.view.held_tokens(j, best) - self.view.held_tokens(j, have)) * self.kv
            t0, t1 = self.peers.book(d.fetch_from, k, nbytes, self.loop.now)
            if self.tb is not None:
                inst.transfer(inst.l_rdma, t0, t1, "fetch", f"fetch {best - have} blocks from instance {d.fetch_from}",
                              j, nbytes, "RDMA", "HBM")
            inst.fetched_ids.setdefault(j, set()).update(self.ids[self.off[j] + have:self.off[j] + best])
            inst.fetches.setdefault(j, []).append((t0 + self.peers.lat, t1, nbytes))
            self.fetched[j], self.fetch_src[j] = best - have, d.fetch_from
        if self.pool is not None:
            self._from_pool(inst, j)
        inst.arrive(j, self.view.prefill_ns(j, max(d.local_blocks, d.fetch_blocks)))

    def _from_pool(self, inst: Instance, j: int) -> None:
        """The blocks of j's chain through the pool that the instance does not hold: fetched now."""
        store, pool = inst.cache, self.pool
        assert store is not None and pool is not None  # a prefill instance, with the pool on
        have = cache.resident_prefix(store, j)
        peer: set[int] | tuple[()] = inst.fetched_ids.get(j, ())
        ids = self.ids

        def own(i: int) -> bool:
            return ids[i] in peer or cache.holds(store, i)
        reach = pool.chain(j, own)
        if reach <= have:
            return
        s = self.off[j]
        pos = [i for i in range(s + have, s + reach) if not own(i)]
        if not pos:
            return
        take = [self.ids[i] for i in pos]
        nbytes = sum(self.tok[i] for i in pos) * self.kv
        link = pool.links[inst.index]
        t0, t1 = link.book(nbytes, self.loop.now, False)
        if self.tb is not None:
            inst.transfer(inst.l_rdma, t0, t1, "fetch", f"fetch {len(take)} blocks from the pool", j, nbytes,
                          "RDMA", "HBM")
        inst.fetched_ids.setdefault(j, set()).update(take)
        inst.fetches.setdefault(j, []).append((t0 + link.read_lat, t1, nbytes))
        self.pooled[j] = len(take)

    def admitted(self, inst: Instance, j: int) -> None:
        if self.pool is not None:
            self.pool.write(inst.index, j, lambda i: self.tok[i] * self.kv, self.loop.now)

    def job_done(self, inst: Instance, j: int) -> None:
        if self.pool is not None and inst.role != "decode":
            self.pool.release(j)
        if inst.role != "prefill" or self.out[j] <= 1:
            return
        # P/D: the prompt's KV and the first token move to a decode instance
        decs = self.dec_batchers  # the least running KV, then the fewest waiting, then the lowest index
        run_kv = list(map(TOK_RUN, decs))
        least = min(run_kv)
        at = run_kv.index(least)
        if run_kv.count(least) > 1:  # a tie on running KV (idle decoders): the fewest waiting of those
            at = min((len(b.waiting), i) for i, b in enumerate(decs) if b.tok_run == least)[1]
        d = self.inst[self.n_route + at]
        ctx = self.inn0[j] + 1
        t0, t1 = self.peers.book(inst.index, d.index, ctx * self.kv, self.loop.now)
        if self.tb is not None:
            d.transfer(d.l_rdma, t0, t1, "load", f"KV of {ctx:,} tokens from instance {inst.index}", j,
                       ctx * self.kv, "RDMA", "HBM")
        d.keep[j], d.inn[j] = ctx, 0
        self.decoder[j] = d.index
        self.loop.push(t1, 2, self.dec_arrive[at], (j,))

    def run(self) -> ClusterRun:
        # the run makes no cycles, only many short-lived objects: a full collection they set off
        # mid-run walked every object of the process (0.1-0.25 s, 10-20% of the Routing scenario's run)
        with gc_paused():
            self.loop.stream(self.times, self.arrive, [(j,) for j in range(len(self.work))], priority=2)
            self.loop.run()
        return self
