"""Links between instances (RDMA): each instance has one NIC link out and one in, and a transfer
from a to b holds a's out-link and b's in-link for its whole length, after the links' latency
(ASSUMPTION, ours: no packet-level sharing; transfers on a link run one after another in booking
order, the serving core's `fifo` rule, kvviz/serving/links.py). Two transfers into the same
instance booked at once end at 1x and 2x the time of one: the link is contended."""
from __future__ import annotations


class End:
    __slots__ = ("free", "bytes", "busy_ns")

    def __init__(self) -> None:
        self.free = 0
        self.bytes = 0
        self.busy_ns = 0


class PeerLinks:
    def __init__(self, instances: int, gbps: float, latency_ns: int) -> None:
        self.out = [End() for _ in range(instances)]
        self.inn = [End() for _ in range(instances)]
        self.gbps, self.lat = gbps, latency_ns  # GB/s = bytes per ns

    def quote(self, src: int, dst: int, nbytes: int, earliest: int) -> tuple[int, int]:
        """(start, end) a transfer booked now would get, booking nothing."""
        t0, a, b = earliest, self.out[src].free, self.inn[dst].free
        if a > t0:  # max(earliest, a, b), without the call (the routers quote every candidate)
            t0 = a
        if b > t0:
            t0 = b
        return t0, t0 + self.lat + int(nbytes / self.gbps)

    def book(self, src: int, dst: int, nbytes: int, earliest: int) -> tuple[int, int]:
        a, b = self.out[src], self.inn[dst]
        t0 = earliest  # quote(), inlined (every P/D hand-off books)
        if a.free > t0:
            t0 = a.free
        if b.free > t0:
            t0 = b.free
        t1 = t0 + self.lat + int(nbytes / self.gbps)
        a.free = b.free = t1
        a.bytes += nbytes
        b.bytes += nbytes
        a.busy_ns += t1 - t0
        b.busy_ns += t1 - t0
        return t0, t1
