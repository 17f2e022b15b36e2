"""The tier links of the timed engine, each a shared resource served FIFO.

Every tier below HBM has one link, `<tier>↔hbm`, carrying everything that enters or leaves
that tier: hit blocks loaded up to HBM, prefetches out of it, write-through copies and
write-back demotions into it (ASSUMPTION, ours: a transfer between two lower tiers, e.g. a
DRAM→SSD demotion or an SSD→DRAM prefetch, occupies the lower tier's link only).

The rule is FIFO: transfers are served one after another in booking order, each at the link's
full bandwidth (the tier's read_gbps out of it, write_gbps into it) after its latency (one per
transfer: the blocks of a batched transfer are issued together). So two transfers booked at
once end at 1× and 2× the time of one: a burst of misses is slower than one.
"""
from __future__ import annotations


class Link:
    def __init__(self, name: str, read_gbps: float, write_gbps: float, read_lat_ns: int, write_lat_ns: int):
        self.name = name
        self.read_gbps, self.write_gbps = read_gbps, write_gbps
        self.read_lat, self.write_lat = read_lat_ns, write_lat_ns
        self.free = 0          # when the last booked transfer ends
        self.bytes = 0
        self.busy_ns = 0

    def book(self, nbytes: int, earliest: int, write: bool) -> tuple[int, int]:
        """A transfer of `nbytes` that may start at `earliest`: (start, end). GB/s = bytes per ns."""
        t0 = max(earliest, self.free)
        dur = (self.write_lat + int(nbytes / self.write_gbps)) if write else \
            (self.read_lat + int(nbytes / self.read_gbps))
        self.free = t0 + dur
        self.bytes += nbytes
        self.busy_ns += dur
        return t0, t0 + dur
