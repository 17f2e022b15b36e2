"""What a router may look at: the cluster's view of its prefill instances. Each call is a fact a
real router has (its own estimates, the instances' published KV events and load), never an
instance's internals.

- `match(k, j)` (`matches(j)`: for every instance at once): leading blocks of request j that instance k holds in its own tiers (what its KV
  events publish; with a shared pool, the pool's blocks count for every instance);
- `queue_ns(k)`: the router's estimate of how long a request sent to k now waits before its
  prefill starts: the prefill estimates of the requests sent to k and not yet started, plus
  what is left of the prefill iteration running there (ASSUMPTION, ours: decode iterations
  between prefills are not counted; Mooncake's EstimatePrefillQueueTime is not specified);
- `prefill_ns(j, held)`: the roofline's prefill of j's prompt after its first `held` blocks;
- `fetch_ns(j, src, dst, have, best)`: blocks have..best-1 of j from src to dst over the peer
  links, queued behind what those links have booked;
- `queue_len(k)`, `kv_utilisation(k)`: the scorers' load signals (waiting requests; running KV
  over the running pool).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ...serving.tiered_cache import prefix_counter

if TYPE_CHECKING:
    from ...serving.event_loop import Loop
    from ...serving.roofline import Roofline
    from .instance import Instance
    from .model import ClusterScenario
    from .peers import PeerLinks
    from .pool import SharedPool
    from .workload import Work


class Run(Protocol):
    """What the view reads of the cluster run (run.py's ClusterRun)."""
    sc: ClusterScenario
    work: Work
    inst: list[Instance]
    n_route: int
    pool: SharedPool | None
    peers: PeerLinks
    loop: Loop
    gpu: Roofline
    ids: list[int]
    off: list[int]
    cum_tokens: list[int]
    inn0: list[int]
    kv: int


class View:
    def __init__(self, run: Run) -> None:
        self.run = run
        self.settings = run.sc.routing
        self.instances = run.n_route
        self.work = run.work
        self.off = run.off
        self.cum = run.cum_tokens
        self.ids = run.ids
        self._matched: list[Callable[[Sequence[int]], list[int]]] | None = None
        self._caches: list[Any] = []
        self._count: Callable[[list[Any], int, int], list[int]] | None = None

    def blocks_of(self, j: int) -> int:
        return self.off[j + 1] - self.off[j]

    def block_ids(self, j: int) -> list[int]:
        return self.ids[self.off[j]:self.off[j + 1]]

    def held_tokens(self, j: int, held: int) -> int:
        s = self.off[j]
        return self.cum[s + held] - self.cum[s]

    def match(self, k: int, j: int) -> int:
        return self.run.inst[k].match(j)

    def matches(self, j: int) -> list[int]:
        """match(k, j) for every routed instance, the request's block ids sliced once (every
        instance's cache numbers blocks alike: the stream's ids, or the compiled caches' shared
        dense ones)."""
        insts = self.run.inst[:self.instances]
        c0 = insts[0].cache
        assert c0 is not None  # routed instances prefill: each has its cache
        if self.run.pool is not None or c0.shared:
            return [i.match(j) for i in insts]
        if self._matched is None:  # each cache's `matched`, bound once; the compiled count over all, if they all are
            stores = [i.cache for i in insts if i.cache is not None]
            self._matched = [c.cache.matched for c in stores]
            self._caches = [c.cache for c in stores]
            self._count = prefix_counter(self._caches)
        if self._count is not None:
            return self._count(self._caches, self.off[j], self.off[j + 1])
        blocks = c0.cids[self.off[j]:self.off[j + 1]]
        return [sum(m(blocks)) for m in self._matched]

    def queue_ns(self, k: int) -> float:
        return self.run.inst[k].queue_ns()

    def queues_ns(self) -> list[float]:
        """queue_ns(k) for every routed instance (one pass, the estimate inlined: the hot path)."""
        now = self.run.loop.now
        return [i.pending_ns + (left if i.iter_at >= 0 and (left := i.iter_at + i.iter_ns - now) > 0.0 else 0.0)
                for i in self.run.inst[:self.instances]]

    def queue_len(self, k: int) -> int:
        return self.run.inst[k].queue_len()

    def kv_utilisation(self, k: int) -> float:
        return self.run.inst[k].kv_utilisation()

    def prefill_ns(self, j: int, held: int) -> float:
        s = self.off[j]  # held_tokens(j, held), inlined (the router asks for every instance it costs)
        h = self.cum[s + held] - self.cum[s]
        return self.run.gpu.prefill_ns(self.run.inn0[j] - h, h)

    def fetch_ns(self, j: int, src: int, dst: int, have: int, best: int) -> float:
        s = self.off[j]  # held_tokens(j, best) - held_tokens(j, have)
        nbytes = (self.cum[s + best] - self.cum[s + have]) * self.run.kv
        now = self.run.loop.now
        _, t1 = self.run.peers.quote(src, dst, nbytes, now)
        return t1 - now
