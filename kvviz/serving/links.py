"""Links between memory tiers, each a shared resource under a named rule: prefix_cache's timed
engine books its block transfers on them (its `links.rule` names the rule).

Every tier below HBM has one link, `<tier>↔hbm`, carrying everything that enters or leaves
that tier: hit blocks loaded up to HBM, prefetches out of it, write-through copies and
write-back demotions into it (ASSUMPTION, ours: a transfer between two lower tiers, e.g. a
DRAM→SSD demotion or an SSD→DRAM prefetch, occupies the lower tier's link only). A transfer
runs at the link's full bandwidth (the tier's read_gbps out of it, write_gbps into it) after
its latency (one per transfer: the blocks of a batched transfer are issued together).

Two rules:
- `fifo`: every transfer (demand load, write, prefetch) is served one after another in booking
  order. Two transfers booked at once end at 1× and 2× the time of one: a burst of misses is
  slower than one. A prefetch booked before a demand load delays it by the prefetch's whole
  length.
- `demand_first`: demand loads and writes (foreground) are served FIFO among themselves as above;
  prefetches (background, `enqueue`) run only while no foreground transfer is booked, one block
  (a piece) at a time. The rule, precisely: a foreground transfer booked at time t starts at
  max(its earliest start, the end of the foreground transfers booked before it, the end of the
  one prefetch piece in flight at t); no prefetch piece starts while a foreground transfer is
  booked and unfinished. So a demand load waits for at most one block of prefetch. A piece pays
  the link's latency unless it follows the previous piece of its transfer back to back
  (ASSUMPTION, ours: a resumed prefetch is a new request to the device).
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterable

RULES = ("fifo", "demand_first")


class Prefetch:
    """A background transfer of `blocks` (id -> None, in order) for request `job`: a prefetch read
    out of the link's tier, or (write) the demotions a prefetch caused into it."""
    __slots__ = ("job", "blocks", "enq", "write", "last_end", "run_start", "run_n")

    def __init__(self, job: int, blocks: Iterable[Hashable], enq: int, write: bool = False) -> None:
        self.job, self.blocks, self.enq, self.write = job, dict.fromkeys(blocks), enq, write
        self.last_end = -1     # end of its last piece (a piece starting then streams on, no latency)
        self.run_start = -1    # the run of back-to-back pieces not yet reported (one span)
        self.run_n = 0


class Link:
    def __init__(self, name: str, read_gbps: float, write_gbps: float, read_lat_ns: int, write_lat_ns: int,
                 rule: str = "fifo", piece_bytes: int = 0,
                 on_piece: Callable[[Prefetch, Hashable, int], object] | None = None,
                 on_run: Callable[[Prefetch, int, int, int], object] | None = None) -> None:
        self.name = name
        self.read_gbps, self.write_gbps = read_gbps, write_gbps
        self.read_lat, self.write_lat = read_lat_ns, write_lat_ns
        self.rule = rule
        self.free = 0          # when the last committed transfer (or piece) ends
        self.bytes = 0
        self.busy_ns = 0
        self.queue: deque[Prefetch] = deque()   # demand_first: background prefetches waiting
        self.piece = piece_bytes
        self.on_piece = on_piece  # (prefetch, block, end): a piece of it ended at `end`
        self.on_run = on_run      # (prefetch, start, end, blocks): a run of its pieces, for the trace

    def book(self, nbytes: int, earliest: int, write: bool) -> tuple[int, int]:
        """A foreground transfer of `nbytes` that may start at `earliest`: (start, end). GB/s =
        bytes per ns. Under demand_first the caller has advanced the link to now first."""
        t0, t1 = self.quote(nbytes, earliest, write)
        self.free = t1
        self.bytes += nbytes
        self.busy_ns += t1 - t0
        return t0, t1

    def quote(self, nbytes: int, earliest: int, write: bool) -> tuple[int, int]:
        """(start, end) that `book` would give now, booking nothing."""
        t0 = max(earliest, self.free)
        dur = (self.write_lat + int(nbytes / self.write_gbps)) if write else \
            (self.read_lat + int(nbytes / self.read_gbps))
        return t0, t0 + dur

    # --- demand_first's background prefetches -------------------------------------------------
    def enqueue(self, pf: Prefetch, now: int) -> None:
        self.advance(now)
        self.queue.append(pf)

    def advance(self, t: int) -> None:
        """Commit every prefetch piece that starts before t in the link's idle time (no foreground
        transfer was booked in it: a booking advances the link first)."""
        q = self.queue
        while q:
            pf = q[0]
            if not pf.blocks:
                q.popleft()
                self._close(pf)
                continue
            start = max(self.free, pf.enq)
            if start >= t:
                return
            streamed = start == pf.last_end
            if not streamed:
                self._close(pf)
                pf.run_start = start
            dur = (0 if streamed else self.write_lat) + int(self.piece / self.write_gbps) if pf.write else \
                (0 if streamed else self.read_lat) + int(self.piece / self.read_gbps)
            b = next(iter(pf.blocks))
            del pf.blocks[b]
            end = start + dur
            self.free = pf.last_end = end
            self.bytes += self.piece
            self.busy_ns += dur
            pf.run_n += 1
            if self.on_piece is not None:
                self.on_piece(pf, b, end)

    def take(self, pf: Prefetch, b: Hashable) -> bool:
        """Take block b out of a waiting prefetch (a request needs it now: it goes foreground)."""
        if b in pf.blocks:
            del pf.blocks[b]
            return True
        return False

    def drain(self) -> None:
        """The run is over: report what is left (nothing, once every request was admitted)."""
        self.advance(1 << 62)

    def _close(self, pf: Prefetch) -> None:
        if pf.run_n:
            if self.on_run is not None:
                self.on_run(pf, pf.run_start, pf.last_end, pf.run_n)
            pf.run_n = 0
