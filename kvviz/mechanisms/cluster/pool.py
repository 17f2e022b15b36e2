"""The shared pool (`pool.shared = true`, Mooncake Store's global cache, our reading): the
instances' DRAM tiers pooled into one cache of whole blocks (instances × instance.dram_cache_tokens)
that every instance reaches over its own link (pool.read_gbps towards HBM, pool.write_gbps into
the pool, pool.latency_us per transfer; the serving core's links, `fifo`).

- Lookup (the router's match for every instance): the longest prefix of a request held by the
  instance itself or by the pool, block by block (a block in either continues the chain).
- A request routed to instance k whose chain reaches further through the pool than k holds
  fetches the missing blocks from the pool over k's link when it is routed; they enter k's
  cache then, and its prefill waits for them layer by layer (as a peer fetch).
- Every block of a request enters the pool when the request is admitted (write-through, as
  Mooncake's prefill instances put their KV into the store; ASSUMPTION, ours: at admission, as
  the instances' own caches place blocks), the new ones booked as one write on k's link;
  the pool evicts by `instance.eviction`, never a block a running request holds.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from ...serving.eviction import make
from ...serving.links import Link

if TYPE_CHECKING:
    from ...trace import TraceBuilder
    from .model import ClusterScenario
    from .workload import Work


class Cluster(Protocol):
    """What the pool reads of the cluster run (run.py's ClusterRun)."""
    sc: ClusterScenario
    work: Work
    ids: list[int]
    off: list[int]
    tb: TraceBuilder | None

POOL_COUNTER = "shared pool cache"


class SharedPool:
    def __init__(self, cluster: Cluster) -> None:
        sc = cluster.sc
        ins, p = sc.instance, sc.pool
        self.cap = max(1, sc.cluster.instances * ins.dram_cache_tokens // cluster.work.block_tokens)
        self.ev = make(ins.eviction, "the cluster's pool")
        self.where: set[int] = set()
        self.pins: dict[int, int] = {}   # block -> running requests holding it
        self.held: dict[int, list[int]] = {}  # request -> its blocks
        self.ids, self.off = cluster.ids, cluster.off
        self.links = [Link(f"pool↔instance {k}", p.read_gbps, p.write_gbps, int(p.latency_us * 1e3),
                           int(p.latency_us * 1e3)) for k in range(sc.cluster.instances)]
        self.size = self.peak = 0
        self.tb = cluster.tb  # its occupancy over time, for the cluster view (blocks)

    def chain(self, j: int, local: Callable[[int], bool]) -> int:
        """Leading blocks of j held by the pool or by the instance (`local(position)`)."""
        ids, where = self.ids, self.where
        s, e = self.off[j], self.off[j + 1]
        p = s
        while p < e and (ids[p] in where or local(p)):
            p += 1
        return p - s

    def write(self, k: int, j: int, block_bytes_of: Callable[[int], int], now: int) -> None:
        """Request j (admitted on instance k) puts its blocks into the pool."""
        ids, where, ev = self.ids, self.where, self.ev
        new = 0
        held = self.held.setdefault(j, [])
        for i in range(self.off[j], self.off[j + 1]):
            b = ids[i]
            self.pins[b] = self.pins.get(b, 0) + 1
            held.append(b)
            if b in where:
                ev.touch(b)
                continue
            if len(where) >= self.cap:
                v = ev.victim(self.pins)
                if v is None:
                    continue
                ev.remove(v)
                where.discard(v)
            ev.insert(b)
            where.add(b)
            new += block_bytes_of(i)
        self.peak = max(self.peak, len(where))
        if self.tb is not None:
            self.tb.counter(POOL_COUNTER, now, len(where), "blocks")
        if new:
            self.links[k].book(new, now, True)

    def release(self, j: int) -> None:
        for b in self.held.pop(j, ()):
            n = self.pins[b] - 1
            if n:
                self.pins[b] = n
            else:
                del self.pins[b]
        self.ev.unpin()
