"""AttentionStore: where each session's KV lives between turns (DRAM and SSD), and the
scheduler-driven prefetch and eviction that move it (paper §3.3).

The store's narrow interface to the batch scheduler (kvviz/serving/batching.py; kv_source.py there names it):
- `arrived(j)`: job j was released to the waiting queue;
- `admit(j, hbm_hit)`: j enters the running batch: the answer is where its history is
  (an outcome) and how its history reaches HBM (bytes from DRAM, bytes read from SSD on
  demand, and when the DRAM data is ready);
- `load(...)` (host_load.py): how the iteration's loads overlap its layers; it books an
  on-demand SSD read with `demand_read(nbytes, earliest, c)`, answered with its start;
- `finished(j)`: the turn ended: its session (history + new KV) is saved to DRAM.

The look-ahead (`store.lookahead`) is a list of jobs in arrival order: the waiting queue
(jobs are listed as they arrive) or the whole job list (listed up front). `key[c]` is the
list position of session c's next job if the list shows it, else INF; `lo` is the number of
jobs admitted, so the next L jobs are the positions below lo + L. Under
`serving.arrivals = conversation_poisson` the job list holds only the turns whose nominal
release is within `store.lookahead_horizon_s` of now (`shown`: positions below it are listed);
it is brought up to date at every store event (an arrival, an admission, the end of a turn).

SSD copies (`store.ssd_inclusive`):
- inclusive (default): a session's KV written to SSD stays valid there. Reading it back does
  not delete it, so a session can be in DRAM and on SSD at once, counted in both tiers. The
  SSD copy is always a prefix of the session's KV (new turns append at the end, decoupled
  truncation drops from the front, freeing those blocks), so demoting the session again writes
  only the tokens not yet on SSD. Coupled truncation, or truncation to nothing, frees both.
- exclusive: a session lives in one tier; a read from SSD deletes the SSD copy, and every
  demotion writes the session's whole KV.
A prefetch takes its DRAM space when it is issued: residency and the DRAM counter count it
from then, not from when its data lands.
"""
from __future__ import annotations

import heapq
from typing import Protocol

import numpy as np
import numpy.typing as npt

from ...requests.conversations import Conversations
from ...serving.event_loop import Loop
from ...serving.kv_source import FIRST, HIT_DRAM, HIT_HBM, HIT_SSD, MISS, RECOMPUTE_FASTER
from ...serving.load_or_recompute import LoadRule
from ...serving.roofline import Roofline
from ...trace import TraceBuilder
from .host_load import HostLoad
from .model import AttentionStoreScenario
from .placement import PLACEMENTS
from .placement.base import DRAM, NONE, PREFETCHING, SSD
from .recording import EVICT, EVICT_WRITE, FETCH, LAND, PREFETCH, T_DRAM, T_HBM, T_SSD, RunLabels, U
from .ssd_queue import P_DEMAND, P_PREFETCH, P_WRITE, SsdOp, SsdQueue

INF = 1 << 62


class StorePrep(Protocol):
    """What the store reads of the prepared workload (serving.Prepared)."""
    @property
    def wl(self) -> Conversations: ...
    @property
    def kv(self) -> int: ...
    @property
    def block(self) -> int: ...
    @property
    def gpu(self) -> Roofline: ...
    @property
    def dram_cap(self) -> int: ...
    @property
    def ssd_cap(self) -> int: ...
    @property
    def L_pw(self) -> int: ...
    @property
    def L_ew(self) -> int: ...
    @property
    def order(self) -> npt.NDArray[np.intp]: ...
    @property
    def rank(self) -> npt.NDArray[np.int64]: ...


class StoreRun(Protocol):
    """What the store reads of its run (serving.Run; protocols: importing it would close an import
    loop): the per-job columns as the reference's lists, and the trace's builder and labels."""
    @property
    def sc(self) -> AttentionStoreScenario: ...
    @property
    def prep(self) -> StorePrep: ...
    @property
    def loop(self) -> Loop: ...
    @property
    def conv(self) -> list[int]: ...
    @property
    def next_row(self) -> list[int]: ...
    @property
    def keep(self) -> list[int]: ...
    @property
    def hist(self) -> list[int]: ...
    @property
    def over(self) -> list[bool]: ...
    @property
    def size_after(self) -> list[int]: ...
    @property
    def after(self) -> list[int]: ...
    @property
    def tb(self) -> TraceBuilder | None: ...
    @property
    def labels(self) -> RunLabels: ...
    def load_span(self, t0: int, t1: int, jobs: list[int], dram: int = 0, ssd: int = 0) -> None: ...


class Store(HostLoad, SsdQueue):
    run: StoreRun

    def __init__(self, run: StoreRun, policy: str, coupled: bool) -> None:
        sc, prep = run.sc, run.prep
        h = sc.hardware
        self.run, self.loop, self.prep = run, run.loop, prep
        self._init_host_load(sc)
        self.coupled = coupled
        self.kv = prep.kv
        self.block = prep.block
        self.ssd_r, self.ssd_w = h.ssds * h.ssd_read_gbps, h.ssds * h.ssd_write_gbps
        self.load_bw = h.host_bw_gbps
        self.ssd_prio = sc.store.ssd_read_priority
        self.rule = LoadRule(sc.store.load_if_faster, prep.gpu)
        self.stream = min(self.ssd_r, self.load_bw)  # SSD→DRAM→HBM on demand, as the batcher streams it
        self.inclusive = sc.store.ssd_inclusive
        self.ssd_q: list[SsdOp] = []
        self.ssd_free = 0
        self.dram_cap, self.ssd_cap = prep.dram_cap, prep.ssd_cap
        self.L_pw, self.L_ew = prep.L_pw, prep.L_ew
        self.conv = run.conv
        self.next_row = run.next_row  # plain list: indexed per job
        self.keep, self.hist, self.over = run.keep, run.hist, run.over
        self.size_after, self.after = run.size_after, run.after
        n_conv = prep.wl.n_conv

        # Look-ahead.
        self.job_list = sc.store.lookahead == "job_list"
        self.jobs: list[int] = prep.order.tolist() if self.job_list else []
        self.rank = prep.rank.tolist() if self.job_list else [INF] * len(prep.wl)
        self.key = [INF] * n_conv
        self.lo = 0
        poisson = self.job_list and sc.serving.arrivals == "conversation_poisson"
        self.horizon = int(sc.store.lookahead_horizon_s * 1e9) if poisson else -1
        self.shown = 0 if poisson else len(prep.wl)
        self.nominal = prep.wl.arrival_ns[prep.order].tolist() if poisson else []
        self.upcoming = [-1] * n_conv  # the session's next job not yet admitted (horizon only)
        self.pf_scan = 0

        self.where = [NONE] * n_conv     # the best tier with a full copy (DRAM/PREFETCHING/SSD/NONE)
        self.size = [0] * n_conv         # bytes of the session's KV (as held in DRAM)
        self.tok = [0] * n_conv          # tokens of the session's KV
        self.ssd_tok = [0] * n_conv      # tokens of the SSD copy: a prefix of the session's KV (0: none)
        self.ssd_size = [0] * n_conv     # bytes of the SSD copy (whole blocks)
        self.running = [False] * n_conv  # its job is in the running batch: never a victim
        self.queued = [False] * n_conv   # its next job has arrived and waits
        self.next_time = [INF] * n_conv  # arrival of the session's next turn (Belady's oracle)
        self.pf_end = [0] * n_conv
        self.pf_seq = [0] * n_conv
        self.dram_used = self.ssd_used = 0
        self.policy = PLACEMENTS[policy](self)
        self.stores = self.policy.stores and self.dram_cap > 0
        self.prefetches = self.policy.prefetches and self.ssd_cap > 0

        self.demoted = self.dropped = self.prefetched = self.ssd_copies_evicted = 0
        self.lost_queued = 0  # sessions dropped from the store while their next job was waiting
        self.ssd_write_bytes = self.ssd_read_bytes = self.ssd_busy_ns = 0
        self.late_prefetch = 0  # SSD hits whose prefetch was still in flight at admission

        self.tb = run.tb
        if self.tb is not None:
            self.l_ssd_read = self.tb.lane("SSD · prefetch + demand reads", "SSD")
            self.l_ssd_write = self.tb.lane("SSD · eviction writes", "SSD")
            self.labels = run.labels
            self.free_slots: list[int] = []
            self.n_slots = 0
            self.slot_of: dict[int, tuple[int, int]] = {}

    # --- the scheduler's calls -------------------------------------------------------------
    def arrived(self, j: int) -> None:
        c = self.conv[j]
        self.queued[c] = True
        if self.horizon >= 0:
            self._reveal()
        if not self.job_list:  # the waiting queue shows a job from its arrival on
            self.rank[j] = len(self.jobs)
            self.jobs.append(j)
            self._set_key(c, self.rank[j])
            if self.prefetches:
                self._prefetch()

    def admit(self, j: int, hbm_hit: bool) -> tuple[int, int, int, int]:
        """Job j enters the batch: (outcome, bytes to load from DRAM, bytes to read from SSD on
        demand, when the DRAM bytes are ready)."""
        c = self.conv[j]
        self.lo += 1
        self.queued[c] = False
        self.running[c] = True
        nxt = self.next_row[j]
        if self.horizon >= 0:
            self._reveal()
            self.upcoming[c] = nxt
        self._set_key(c, self.rank[nxt] if self.job_list and 0 <= nxt and self.rank[nxt] < self.shown else INF)
        keep, where = self.keep[j], self.where[c]
        dram = ssd = ready = 0
        if keep == 0:
            outcome = FIRST  # nothing to reuse (a first turn, or truncated to nothing)
            self._remove(c)
        elif self.over[j] and self.coupled:
            outcome = MISS   # coupled truncation: positions shifted, every stored copy is invalid
            self._remove(c)
        elif hbm_hit:
            outcome = HIT_HBM
            self._truncated(j, c)
            if where == DRAM:
                self.policy.on_hit(c)
        elif where == NONE:
            outcome = MISS
        else:
            self._truncated(j, c)
            nbytes = keep * self.kv
            if where == SSD:
                read = int(nbytes / self.stream)
                if self.rule.loads(keep, self._demand_start(c) - self.loop.now + read, read, self.loop.now):
                    outcome, ssd = HIT_SSD, nbytes
                    self.ssd_read_bytes += nbytes
                else:
                    outcome = RECOMPUTE_FASTER
                if self.inclusive:
                    self.policy.on_access(SSD, c)  # the SSD copy stays valid
                else:
                    self._remove(c)
            elif where == PREFETCHING:
                # A prefetch in flight: it lands at pf_end (as queued now), then loads over the link.
                land = max(0, self.pf_end[c] - self.loop.now)
                if self.rule.loads(keep, land + int(nbytes / self.load_bw), 0, self.loop.now):
                    if self.ssd_prio:
                        self._ssd_promote(c)  # the job now waits on it: a demand read
                    outcome, dram = HIT_SSD, nbytes
                    ready = self.pf_end[c]   # not before it is in DRAM (it may still be ahead)
                    self.late_prefetch += 1
                else:
                    outcome = RECOMPUTE_FASTER
                self._drop_dram(c)  # it is re-saved to DRAM when the turn ends
                self.where[c] = SSD if self.ssd_size[c] else NONE
            else:
                outcome, dram = HIT_DRAM, nbytes
                self.policy.on_hit(c)
        if self.prefetches:
            self._prefetch()
        return outcome, dram, ssd, ready

    def demand_read(self, nbytes: int, bw: float, earliest: int, c: int) -> int:
        """An on-demand SSD read streamed at `bw` from `earliest` at the soonest: its start."""
        dur = int(nbytes / bw)
        self.rule.booked()
        if self.ssd_prio:  # ahead of every queued prefetch and write
            start: int = self._ssd_book(dur, P_DEMAND, earliest, c, "fetch")[0]
            return start
        t0 = max(earliest, self.ssd_free)
        self.ssd_free = t0 + dur
        self.ssd_busy_ns += dur
        if self.tb is not None:
            self.tb.add_span_facts(self.l_ssd_read, t0, t0 + dur, FETCH, self.labels.fetch, c,
                                   int(nbytes), U, T_SSD, T_HBM, c, U, U, U, U)
        return t0

    def finished(self, j: int) -> None:
        """j's turn ended: the session's KV (history + the turn) is in DRAM, making room."""
        c = self.conv[j]
        self.running[c] = False
        self.policy.on_done(c)
        if self.horizon >= 0:
            self._reveal()
        if not self.stores:
            self._remove(c)
            return
        new = self.size_after[j]
        self.tok[c] = self.after[j]
        if self.where[c] == DRAM:
            self.dram_used += new - self.size[c]
            self.size[c] = new
        else:
            self._drop_dram(c)
            self.size[c] = new
            self._insert_dram(c)
        self.policy.on_resave(c)
        self._fit_dram()  # c itself may be the victim: then it goes straight on to SSD
        if self.prefetches:
            self._prefetch()

    def protected(self, c: int) -> bool:
        """Inside the eviction window: the session's next job is among the next L_ew jobs."""
        return self.key[c] < self.lo + self.L_ew

    def _demand_start(self, c: int) -> int:  # for store.load_if_faster (kvviz/serving/load_or_recompute.py)
        """When a demand read of session c issued now would start (the SSD's queue as it stands)."""
        now = self.loop.now
        if not self.ssd_prio:
            return max(now, self.ssd_free)
        self._ssd_retire()
        i = self._ssd_slot(P_DEMAND, c)
        if not i:
            return now
        end: int = self.ssd_q[i - 1][1]
        return max(now, end)

    # --- look-ahead ----------------------------------------------------------------------
    def _set_key(self, c: int, k: int) -> None:
        if self.key[c] != k:
            self.key[c] = k
            self.policy.on_key(c)

    def _reveal(self) -> None:
        """List the jobs whose nominal release came within the horizon; a job that is its
        session's next one gives the session its key."""
        t, jobs, nominal, conv, i = self.loop.now + self.horizon, self.jobs, self.nominal, self.conv, self.shown
        while i < len(jobs) and nominal[i] <= t:
            j = jobs[i]
            if self.upcoming[conv[j]] == j:
                self._set_key(conv[j], i)
            i += 1
        self.shown = i

    def _prefetch(self) -> None:
        """Fetch SSD→DRAM the sessions of the next L_pw listed jobs."""
        jobs, conv, where, key = self.jobs, self.conv, self.where, self.key
        end = min(len(jobs) if self.horizon < 0 else self.shown, self.lo + self.L_pw)
        i = max(self.pf_scan, self.lo)
        while i < end:
            c = conv[jobs[i]]
            if where[c] == SSD and not self.running[c] and key[c] <= i:
                size = self.size[c]
                if not self._fit_dram(size, before=c):
                    break  # DRAM holds only sessions needed sooner: try again later
                if where[c] != SSD:  # making room pushed c's own copy off the SSD
                    i += 1
                    continue
                if self.inclusive:
                    self.policy.on_access(SSD, c)  # the SSD copy stays valid
                else:
                    self._drop_ssd(c)
                where[c] = PREFETCHING
                self.dram_used += size
                self._resident(c)  # its DRAM space is taken from now, not from when the data lands
                self.pf_seq[c] += 1
                s0, s1 = self._ssd_io(size, self.ssd_r, P_PREFETCH, c, self.pf_seq[c])
                self.ssd_read_bytes += size
                self.pf_end[c] = s1
                self.prefetched += 1
                self.loop.push(s1, 0, self._landed, (c, self.pf_seq[c]))
                if self.tb is not None and not self.ssd_prio:
                    self.tb.add_span_facts(self.l_ssd_read, s0, s1, PREFETCH, self.labels.prefetch, c,
                                           int(size), U, T_SSD, T_DRAM, c, U, U, U, U)
            i += 1
        self.pf_scan = i

    def _landed(self, c: int, seq: int) -> None:
        if self.where[c] == PREFETCHING and self.pf_seq[c] == seq:
            self.where[c] = DRAM
            self.policy.on_insert(DRAM, c)
            if self.tb is not None:
                self.tb.add_instant_facts(self.l_ssd_read, self.loop.now, LAND, c, U, U, U, T_DRAM, c, U, U, U, U)

    # --- residency (the occupancy view) ----------------------------------------------------
    def _resident(self, c: int) -> None:
        if self.tb is not None:
            if self.free_slots:
                slot = heapq.heappop(self.free_slots)
            else:
                slot, self.n_slots = self.n_slots, self.n_slots + 1
            self.slot_of[c] = (slot, self.loop.now)

    def _gone(self, c: int) -> None:
        if self.tb is not None:
            slot, since = self.slot_of.pop(c)
            self.tb.residency(slot, since, self.loop.now, c)
            heapq.heappush(self.free_slots, slot)

    def close(self) -> None:
        """End of the run: draw what is still queued or resident."""
        if self.tb is not None:
            for op in self.ssd_q:  # SSD requests (read priority) are drawn once their times are final
                self._ssd_span(op)
            self.ssd_q = []
            for c in list(self.slot_of):
                self._gone(c)
            self.tb.slots = self.n_slots

    # --- tiers -----------------------------------------------------------------------------
    def _drop_dram(self, c: int) -> None:
        """Free c's DRAM copy (or its in-flight prefetch reservation); `where` is the caller's."""
        w = self.where[c]
        if w == DRAM or w == PREFETCHING:
            self.dram_used -= self.size[c]
            self._gone(c)
            if w == DRAM:
                self.policy.on_remove(DRAM, c)

    def _drop_ssd(self, c: int) -> None:
        """Free c's SSD copy; if that was its only copy, the session is gone from the store."""
        if self.ssd_size[c]:
            self.ssd_used -= self.ssd_size[c]
            self.policy.on_remove(SSD, c)
            self.ssd_size[c] = self.ssd_tok[c] = 0
        if self.where[c] == SSD:
            self.where[c] = NONE

    def _remove(self, c: int) -> None:
        """Take session c out of the store, every copy of it."""
        self._drop_dram(c)
        self._drop_ssd(c)
        self.where[c] = NONE

    def _truncated(self, j: int, c: int) -> None:
        """Decoupled truncation dropped the oldest tokens: so does the SSD copy (a prefix of the
        session), freeing their blocks."""
        dropped = self.hist[j] - self.keep[j]
        if dropped <= 0 or not self.ssd_size[c]:
            return
        left = self.ssd_tok[c] - dropped
        if left <= 0:
            self._drop_ssd(c)
            return
        size = -(-left // self.block) * self.block * self.kv
        self.ssd_used += size - self.ssd_size[c]
        self.ssd_tok[c], self.ssd_size[c] = left, size

    def _insert_dram(self, c: int) -> None:
        self.where[c] = DRAM
        self.dram_used += self.size[c]
        self.policy.on_insert(DRAM, c)
        self._resident(c)

    def _demote(self, v: int) -> None:
        """DRAM victim v: written to SSD (making room there), or dropped without an SSD. With an
        inclusive SSD copy only the tokens not yet on SSD are written."""
        self._drop_dram(v)
        if self.key[v] < INF:
            self.pf_scan = min(self.pf_scan, self.key[v])  # look at it again for prefetch
        if not self.ssd_cap:
            self.where[v] = NONE
            self._lost(v)
            return
        t = self.loop.now
        size, had = self.size[v], self.ssd_size[v] > 0
        write = size - self.ssd_size[v]
        self.demoted += 1
        if write > 0:
            s0, s1 = self._ssd_io(write, self.ssd_w, P_WRITE, v)
            self.ssd_write_bytes += write
            if self.tb is not None and not self.ssd_prio:
                self.tb.add_span_facts(self.l_ssd_write, s0, s1, EVICT_WRITE, self.labels.evict_write, v,
                                       int(write), U, T_DRAM, T_SSD, v, U, U, U, U)
        if self.tb is not None:
            self.tb.add_instant_facts(self.l_ssd_write, t, EVICT, v, U, U, T_DRAM, T_SSD, v, U, U, U, U)
        self.where[v] = SSD
        self.ssd_used += write
        self.ssd_size[v], self.ssd_tok[v] = size, self.tok[v]
        if had:
            self.policy.on_access(SSD, v)
        else:
            self.policy.on_insert(SSD, v)
        self._fit_ssd()

    def _lost(self, c: int) -> None:
        self.dropped += 1
        if self.queued[c]:  # the queue already said it would be needed
            self.lost_queued += 1

    def _fit_ssd(self) -> None:
        while self.ssd_used > self.ssd_cap:
            x = self.policy.victim(SSD)
            if x < 0:
                break
            lost = self.where[x] == SSD  # its only copy
            self._drop_ssd(x)
            if lost:
                self._lost(x)
            else:
                self.ssd_copies_evicted += 1
            if self.tb is not None:
                self.tb.add_instant_facts(self.l_ssd_write, self.loop.now, EVICT, x, U, U, T_SSD, U, x, U, U, U, U)

    def _fit_dram(self, extra: int = 0, before: int = -1) -> bool:
        """Evict until `extra` more bytes fit in DRAM; False if the policy finds no victim."""
        while self.dram_used + extra > self.dram_cap:
            v = self.policy.victim(DRAM, before)
            if v < 0:
                return False
            self._demote(v)
        return True

