"""Mixed into store.Store: the SSD as one queue of reads and writes (its drives striped, served one
op at a time), with `store.ssd_read_priority` ordering the queued ops by urgency: demand reads,
then prefetches, then eviction writes. Apart from store.py so the store keeps to where sessions
live; the queue's state (`ssd_q`, `ssd_free`, `ssd_busy_ns`, `pf_seq`, `pf_end`) is the store's."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...serving.event_loop import Loop
from ...trace import TraceBuilder
from .recording import EVICT_WRITE, FETCH, PREFETCH, T_DRAM, T_HBM, T_SSD, RunLabels, U

P_DEMAND, P_PREFETCH, P_WRITE = 0, 1, 2                  # SSD request priorities (store.ssd_read_priority)
# An op in the queue, [start, end, prio, earliest, c, seq, label]: a list re-timed in place on the
# queue's hot path; its items are ints but the last (a str: "fetch", "prefetch" or ""), which a
# list's type cannot say item by item.
SsdOp = list[Any]


class SsdQueue:
    # the store's, read and kept here (store.Store sets them)
    ssd_prio: bool
    loop: Loop
    ssd_q: list[SsdOp]
    ssd_free: int
    ssd_busy_ns: int
    pf_seq: list[int]
    pf_end: list[int]
    tb: TraceBuilder | None
    labels: RunLabels
    l_ssd_read: int
    l_ssd_write: int
    if TYPE_CHECKING:
        def _landed(self, c: int, seq: int) -> None: ...

    def _ssd_io(self, nbytes: int, bw: float, prio: int = 2, c: int = -1, seq: int = 0) -> tuple[int, int]:
        """Book `nbytes` on the SSD (its drives striped: reads and writes in turn): (start, end)."""
        if self.ssd_prio:
            op = self._ssd_book(int(nbytes / bw), prio, self.loop.now, c, seq=seq)
            return op[0], op[1]
        s0 = max(self.loop.now, self.ssd_free)
        s1 = s0 + int(nbytes / bw)
        self.ssd_free = s1
        self.ssd_busy_ns += s1 - s0
        return s0, s1

    # With read priority an op is [start, end, prio, earliest, c, seq, label]: served one at a
    # time in list order, each from max(end of the one before, its earliest). Ops with start <=
    # now have started and are never moved; the others are queued, in priority order (a new op
    # goes behind the queued ones of its own or a more urgent priority), except that a read of
    # session c stays behind c's own queued write (it reads what that write puts on the SSD).
    def _ssd_retire(self) -> None:
        q, now = self.ssd_q, self.loop.now
        k = 0
        while k < len(q) and q[k][1] <= now:
            k += 1
        if k:
            for op in q[:k]:
                self._ssd_span(op)
            del q[:k]

    def _ssd_span(self, op: SsdOp) -> None:
        if self.tb is not None:
            s0, s1, prio, _, c, _, _ = op
            tb, lab = self.tb, self.labels
            if prio == P_WRITE:
                tb.add_span_facts(self.l_ssd_write, s0, s1, EVICT_WRITE, lab.evict_write, c, U, U, T_DRAM, T_SSD, c, U, U, U, U)
            elif op[6] == "fetch":
                tb.add_span_facts(self.l_ssd_read, s0, s1, FETCH, lab.fetch, c, U, U, T_SSD, T_HBM, c, U, U, U, U)
            else:
                tb.add_span_facts(self.l_ssd_read, s0, s1, PREFETCH, lab.prefetch, c, U, U, T_SSD, T_DRAM, c, U, U, U, U)

    def _retime_from(self, i: int) -> None:
        """Ops from position i on start when the one before ends (or at their earliest)."""
        q = self.ssd_q
        prev = q[i - 1][1] if i else self.loop.now
        for k in range(i, len(q)):
            o = q[k]
            s0 = max(prev, o[3])
            if s0 != o[0]:
                d = o[1] - o[0]
                o[0], o[1] = s0, s0 + d
                if o[6] == "prefetch" and self.pf_seq[o[4]] == o[5]:
                    self._pf_retimed(o)
            prev = o[1]

    def _ssd_slot(self, prio: int, c: int) -> int:
        """Where an op of priority `prio` for session c goes in the queue: behind the ops started
        and the queued ones of its own or a more urgent priority, and behind c's own queued write."""
        q, now = self.ssd_q, self.loop.now
        i = len(q)
        while i > 0 and q[i - 1][0] > now and q[i - 1][2] > prio:
            i -= 1
        if prio != P_WRITE and c >= 0:  # not ahead of c's own queued write
            for k in range(len(q) - 1, i - 1, -1):
                if q[k][4] == c and q[k][2] == P_WRITE:
                    i = k + 1
                    break
        return i

    def _ssd_insert(self, op: SsdOp) -> None:
        """Place `op` by priority among the queued ops and re-time the ops from there on."""
        q, now = self.ssd_q, self.loop.now
        i = self._ssd_slot(op[2], op[4])
        q.insert(i, op)
        prev = q[i - 1][1] if i else now
        dur = op[1] - op[0]
        op[0] = max(prev, op[3])
        op[1] = op[0] + dur
        self._retime_from(i + 1)

    def _pf_retimed(self, o: SsdOp) -> None:
        c = o[4]
        self.pf_seq[c] += 1
        o[5] = self.pf_seq[c]
        self.pf_end[c] = o[1]
        self.loop.push(o[1], 0, self._landed, (c, o[5]))

    def _ssd_book(self, dur: int, prio: int, earliest: int, c: int, label: str = "", seq: int = 0) -> SsdOp:
        self._ssd_retire()
        op = [earliest, earliest + dur, prio, earliest, c, seq, label or ("prefetch" if prio == P_PREFETCH else "")]
        self._ssd_insert(op)
        self.ssd_busy_ns += dur
        return op

    def _ssd_promote(self, c: int) -> None:
        """c's prefetch, still queued, now has a job waiting on it: serve it as a demand read."""
        self._ssd_retire()
        q, now = self.ssd_q, self.loop.now
        for k, o in enumerate(q):
            if o[4] == c and o[6] == "prefetch" and o[5] == self.pf_seq[c] and o[0] > now:
                del q[k]
                end = o[1]
                o[2] = P_DEMAND
                self._retime_from(k)  # close the gap it leaves
                self._ssd_insert(o)
                if o[1] != end:
                    self._pf_retimed(o)
                return
