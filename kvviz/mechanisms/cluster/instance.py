"""One serving instance of the cluster: the serving core's continuous batcher (kvviz/serving/
batching.py) over its own block cache (cache.py), as the batcher's `run` (the attributes and
calls batching.py reads). Every instance shares the cluster's event loop and roofline; job
indices are the cluster's; an instance's per-job state is lists of the workload's length, or,
past jobs.LIST_BUDGET, dicts of the jobs routed to it (jobs.py), so memory grows with the
requests, not with instances × requests.

Roles: `both` (prefills and decodes), `prefill` (P/D split: every request is prefill only, one
token; its KV then moves to a decode instance), `decode` (receives a prefilled request's KV
over the peer link and decodes the rest of its reply: its "prefill" computes nothing, as the
KV is there, and emits no token of the reply's count).

The router's load signals are kept here: `queue_ns` is the sum of the router's prefill
estimates of the requests sent here and not yet admitted, plus what is left of the prefill
iteration running (its estimate from its start).
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from ...serving.batching import BatchConfig, Batcher
from ...serving.kv_source import HIT_HBM, KVSource, LayerSchedule
from . import cache
from .batchers import ClusterBatcher, DecodeBatcher, PrefillBatcher, SharedPoolBatcher
from .jobs import Identity, Overlay, as_column, dense, filled, per_job, sparse

if TYPE_CHECKING:
    from ...serving.event_loop import Loop
    from ...serving.roofline import Roofline
    from ...trace import TraceBuilder
    from .cache import InstanceCache
    from .pool import SharedPool


class Cluster(cache.Stream, Protocol):
    """What an instance reads of the cluster run (run.py's ClusterRun), beyond what its cache does."""
    gpu: Roofline
    loop: Loop
    tb: TraceBuilder | None
    inn0: list[int]
    inn0_column: list[int]  # inn0 as an int64 array (jobs.py), copied by each instance
    identity: list[int]     # conv[j] = j as an int64 array, read only: one for every instance
    sparse: bool
    pool: SharedPool | None

    def admitted(self, inst: Instance, j: int) -> None: ...
    def job_done(self, inst: Instance, j: int) -> None: ...

HELD = (HIT_HBM, 0, 0, 0)  # a decode instance's admission: the KV is in HBM, nothing loads


class HeldKV:
    """A decode instance's store: the request's KV arrived with it (HBM, nothing to load)."""
    stores = False

    def __init__(self, inst: Instance) -> None:
        self.inst = inst

    def arrived(self, j: int) -> None:
        pass

    def admit(self, j: int, hbm_hit: bool) -> tuple[int, int, int, int]:
        return HELD

    def load(self, jobs: list[int], a: int, b: int, ready: int, S: int, comp_ns: float) \
            -> tuple[int, int, LayerSchedule | None]:  # never called: admit loads nothing
        return S + round(comp_ns), 0, None

    def finished(self, j: int) -> None:
        pass


class Instance:
    def __init__(self, cluster: Cluster, index: int, role: str, cfg: BatchConfig, out: list[int]) -> None:
        n = len(cluster.work)
        self.cluster, self.index, self.role = cluster, index, role
        self.loop, self.gpu = cluster.loop, cluster.gpu
        self.tb = tb = cluster.tb  # the batcher draws its iterations when the run records
        # per-job state holds only the jobs routed here (jobs.py): memory ∝ requests, not instances × requests
        self.jobs: list[int] = []   # the jobs that arrived here, in order
        self.out = out
        self.coupled = False
        self.conv: list[int]
        self.inn: list[int]
        self.keep: list[int]
        self.over: list[bool]
        self.after: list[int]
        self.arrival: list[int]
        ints, flags = [0], [False]
        if cluster.sparse:
            self.conv, self.inn = as_column(Identity(), ints), as_column(Overlay(cluster.inn0), ints)
            self.keep, self.over = as_column(per_job(0), ints), as_column(per_job(False), flags)
            self.after, self.arrival = as_column(per_job(0), ints), as_column({}, ints)
        else:  # arrays, not lists: nothing for the cyclic collector to walk (jobs.py)
            self.conv, self.inn, self.keep = cluster.identity, cluster.inn0_column[:], filled(0, n)
            self.over, self.after, self.arrival = filled(False, n), filled(0, n), filled(0, n)
        self.fetches: dict[int, list[tuple[int, int, int]]] = {}  # job -> (start, end, bytes) of its peer and pool fetches
        self.fetched_ids: dict[int, set[int]] = {}  # job -> the block ids those fetches bring
        self.estimate: dict[int, float] = {}  # job -> the router's prefill estimate, until admitted
        self.pending_ns = 0.0
        self.iter_at, self.iter_ns = -1, 0.0
        self.served = 0
        self.cache: InstanceCache | None
        self.store: KVSource
        if role == "decode":
            self.cache = None
            self.store = HeldKV(self)
        else:
            self.cache = cache.make_store(self, cluster)
            self.store = self.cache  # it tells the instance of each admission (cache.py, admit)
        if tb is not None:  # one lane group per instance: one Perfetto process each
            g = f"instance {index}"
            self.l_gpu = tb.lane(f"{g} GPU · {role}", g)  # names unique across instances (CSV keys lanes by name)
            self.l_rdma = tb.lane(f"{g} RDMA in · " + ("KV from prefill" if role == "decode" else
                                                      "peer and pool fetches"), g)
            if self.cache is not None and len(self.cache.names) > 1:
                self.l_dram = tb.lane(f"{g} DRAM↔HBM · block loads and writes", g)
            # over time, for the cluster view: the requests waiting here, and each cache tier's blocks
            self.c_queue = f"{g} queue"
            self.c_tiers = [f"{g} {nm.upper()} cache" for nm in self.cache.names] if self.cache is not None else []
        self.n = 0  # the batcher's lists made empty, then replaced by dicts (sparse) or arrays (jobs.py)
        # a preempted request resumes from the instance's cache (instance.resume_from_cache); a decode
        # instance has none and recomputes
        cfg = replace(cfg, resume_from_cache=self.cache is not None and cluster.sc.instance.resume_from_cache)
        self.batcher: Batcher
        if self.cache is not None and self.cache.shared:
            self.batcher = SharedPoolBatcher(self, cfg, self.cache)
        elif role == "decode":
            self.batcher = DecodeBatcher(self, cfg)
        elif role == "prefill":
            self.batcher = PrefillBatcher(self, cfg)
        else:
            self.batcher = ClusterBatcher(self, cfg)
        if cluster.sparse:
            sparse(self.batcher)
        else:
            dense(self.batcher, n)
        self.n = n  # flows of a decode instance are numbered after the workload's

    # --- the router's signals -----------------------------------------------------------------
    def match(self, j: int) -> int:
        store = self.cache
        assert store is not None  # the router looks at prefill instances only
        if store.shared:
            store.fit()
        pool = self.cluster.pool
        if pool is not None:  # the pool's blocks count for every instance
            return pool.chain(j, lambda i: cache.holds(store, i))
        return cache.resident_prefix(store, j)

    def queue_ns(self) -> float:
        now = self.loop.now
        running = max(0.0, self.iter_at + self.iter_ns - now) if self.iter_at >= 0 else 0.0
        return self.pending_ns + running

    def queue_len(self) -> int:
        return len(self.batcher.waiting)

    def kv_utilisation(self) -> float:
        return self.batcher.tok_run / self.batcher.cap_tok

    # --- the cluster's calls ------------------------------------------------------------------
    def arrive(self, j: int, estimate_ns: float = 0.0) -> None:
        self.served += 1
        self.jobs.append(j)
        if estimate_ns:  # a decode instance's arrivals carry none (the router never looks at it)
            self.estimate[j] = estimate_ns
            self.pending_ns += estimate_ns
        self.arrival[j] = self.loop.now  # the stores' `arrived` does nothing: not called
        self.batcher.arrive(j)
        if self.tb is not None:
            self.tb.counter(self.c_queue, self.loop.now, len(self.batcher.waiting), "requests")

    def admitted(self, j: int) -> None:
        est = self.estimate.pop(j, 0.0)
        self.pending_ns = max(0.0, self.pending_ns - est)
        now = self.loop.now
        if self.iter_at != now:
            self.iter_at, self.iter_ns = now, 0.0
        self.iter_ns += est
        if self.cluster.pool is not None:
            self.cluster.admitted(self, j)

    # --- the batcher's calls ------------------------------------------------------------------
    def job_done(self, j: int) -> None:
        if self.cache is not None:  # a decode instance's store keeps nothing
            self.cache.finished(j)
        self.cluster.job_done(self, j)

    def gpu_state(self, t: int, batch: int) -> None:
        pass

    def save_span(self, s0: int, s1: int, j: int) -> None:
        pass  # never called: the instances' stores save nothing (`stores` false)

    def stall_span(self, t0: int, t1: int) -> None:
        pass  # never called: no synchronous saves

    def prefill_span(self, S: int, pe: int, jobs: list[int], layer: LayerSchedule | None) -> None:
        tb = self.tb
        assert tb is not None  # the batcher draws only in a recorded run
        tb.counter(self.c_queue, S, len(self.batcher.waiting), "requests")  # its admissions have left the queue
        if self.cache is not None:
            for name, blocks in zip(self.c_tiers, self.cache.cache.occupancy()):
                tb.counter(name, S, blocks, "blocks")
        what = "KV arrived" if self.role == "decode" else "prefill"
        base = self.n if self.role == "decode" else 0  # a decode's flow is its P/D transfer's, apart
        for j in jobs:  # each job's mark, at the iteration's end, ends the flows of what it waited on
            hit = self.role == "decode" or (self.cache is not None and self.cache.hits.get(j, 0) > 0)
            tb.instant(self.l_gpu, pe, "hit" if hit else "miss", j, job=j, flow=base + j)
        tb.span(self.l_gpu, S, pe, "prefill", f"{what} · {len(jobs)} request{'s' * (len(jobs) > 1)}", ref=jobs[0],
                job=jobs[0], items=len(jobs))

    def decode_span(self, t0: int, t1: int, n: int, k: int, ref: int) -> None:
        assert self.tb is not None  # the batcher draws only in a recorded run
        self.tb.span(self.l_gpu, t0, t1, "decode", f"decode · {n} request{'s' * (n > 1)} × {k} iterations", ref=ref)

    def transfer(self, lane: int, t0: int, t1: int, kind: str, label: str, j: int, nbytes: int, src: str,
                 dst: str) -> None:
        """A transfer on one of this instance's link lanes, its facts and its job's flow."""
        if self.tb is not None:
            flow = -1 if kind == "save" else j + (self.n if self.role == "decode" else 0)
            self.tb.span(lane, t0, t1, kind, label, ref=j, bytes=int(nbytes), src=src, dst=dst, job=j, flow=flow)
