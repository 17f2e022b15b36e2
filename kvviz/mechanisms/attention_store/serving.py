"""The serving model: one GPU (the 4×A100 tensor-parallel group) serving a FIFO job queue of
conversation turns, with each session's history KV kept in DRAM or SSD by a placement policy.

Job life, for turn j of conversation c arriving at a(j):
- It joins the queue. Policies that look ahead may start prefetching c's KV SSD→DRAM.
- It is dispatched when the GPU frees (FIFO). Its history (truncated on context overflow) is
  - a DRAM hit: loaded layer by layer over PCIe while the new tokens are prefilled; with a
    read buffer of k layers, the first k layers may load before dispatch (from when j became
    next in line);
  - an SSD hit: its KV is not (yet) in DRAM when it runs, so loading it is on the critical
    path: if a scheduler-aware prefetch SSD→DRAM is still in flight, the layer-wise load
    DRAM→HBM over PCIe starts when it lands; otherwise the KV is read on demand, streamed
    SSD→DRAM→HBM layer by layer at the slower of SSD and PCIe (both are occupied);
  - a miss (never stored, evicted from the store, or invalidated by coupled truncation): the
    history is prefilled again with the new tokens;
  - a first turn: only the new tokens are prefilled.
- Decode follows; the new KV (prefill KV and decode KV) streams HBM→DRAM over PCIe from the
  end of prefill (asynchronous saving). When decoding ends, the write buffer absorbs what is
  unsaved; if more is left, the GPU waits until it fits (a "stall" span).
- At the end the session's whole KV is in DRAM (the policy evicts to make room: DRAM victims
  are written to SSD, SSD victims are dropped), and the next turn arrives a think time later.
- A prefetch takes its DRAM space when it is issued: the trace's residency (the occupancy view)
  and the DRAM counter both count it from then, not from when its data lands.

SSD copies (`store.ssd_inclusive`):
- inclusive (default): a session's KV written to SSD stays valid there. Reading it back
  (prefetch or on-demand load) does not delete it, so a session can be in DRAM and on SSD at
  once, counted in both tiers' capacity. The SSD copy is always a prefix of the session's KV
  (new turns append at the end, decoupled truncation drops from the front, freeing those
  blocks), so demoting the session again writes only the tokens not yet on SSD. Evicting a
  session from SSD removes its copy (the session is lost only if it was not in DRAM); coupled
  truncation, or truncation to nothing, invalidates and frees both copies.
- exclusive: a session lives in one tier; a read from SSD deletes the SSD copy, and every
  demotion writes the session's whole KV.

Time is integer ns. A GB/s is exactly one byte per ns.
"""
from __future__ import annotations

import heapq
import math

import numpy as np

from ...engine import EventLoop
from ...trace import TraceBuilder
from .model import GB, AttentionStoreScenario
from .policies import POLICIES
from .policies.base import DRAM, NONE, PREFETCHING, SSD
from .workload import Workload

INF = 1 << 62
GPU_LANE = "GPU · prefill + decode"  # its spans' ref is the job's turn row
FIRST, MISS, HIT_DRAM, HIT_SSD = 0, 1, 2, 3  # job outcomes
P_DEMAND, P_PREFETCH, P_WRITE = 0, 1, 2       # SSD request priorities (store.ssd_read_priority)
OUTCOME = {FIRST: "no history", MISS: "miss (history recomputed)", HIT_DRAM: "DRAM hit", HIT_SSD: "SSD hit"}


# --- layer-wise pre-loading ------------------------------------------------------------------

def prefill_end(S: int, T0: int, a: int, c: int, L: int, k: int) -> tuple[int, int]:
    """(end of the last layer's compute, end of the last load), closed form.

    Layer i loads in `a` ns and computes in `c` ns. Loads run one after another from T0; the
    first k fit in the read buffer and may load before the job starts at S, the rest start no
    earlier than S. Layer i computes once layer i-1 is computed and layer i is loaded:
    ce_i = max(ce_{i-1}, le_i) + c with ce_{-1} = S, which unrolls to
    max(S + L·c, max_i le_i + (L-i)·c). The load ends le_i are linear in i on each of the two
    runs (before and after S), so the inner max is at a run's first or last layer.
    """
    k = min(k, L)
    best = S + L * c
    if k:
        le_k1 = T0 + k * a  # end of the last buffered layer
        best = max(best, T0 + a + L * c, le_k1 + (L - k + 1) * c)
        run2 = max(le_k1, S)
    else:
        le_k1 = T0
        run2 = max(T0, S)
    if k < L:
        le_last = run2 + (L - k) * a
        best = max(best, run2 + a + (L - k) * c, le_last + c)
    else:
        le_last = le_k1
    return best, le_last


def layer_schedule(S: int, T0: int, a: int, c: int, L: int, k: int):
    """The same schedule layer by layer: arrays (load start, load end, compute start, compute
    end). Used to draw one chosen job and to check `prefill_end`."""
    ls, le, cs, ce = (np.zeros(L, dtype=np.int64) for _ in range(4))
    t_load, t_comp = T0, S
    for i in range(L):
        start = t_load if i < k else max(t_load, S)
        ls[i], le[i] = start, start + a
        t_load = le[i]
        cs[i] = max(t_comp, le[i])
        ce[i] = t_comp = cs[i] + c
    return ls, le, cs, ce


# --- the workload as the model sees it ----------------------------------------------------------

class Prepared:
    """Per-turn quantities that do not depend on the policy: capped token counts, context
    truncation, session sizes, and the paper's sizing formulas."""

    def __init__(self, sc: AttentionStoreScenario, wl: Workload):
        m, h, s = sc.model, sc.hardware, sc.serving
        self.wl = wl
        W = m.context_window
        # ASSUMPTION (ours): a front end caps a turn's input at half the window and its reply
        # at a quarter, so every turn fits with room to spare.
        self.inn = np.minimum(wl.in_tok, W // 2)
        self.out = np.minimum(wl.out_tok, W // 4)
        n = len(wl)
        self.hist = np.zeros(n, dtype=np.int64)   # history tokens before the turn
        self.keep = np.zeros(n, dtype=np.int64)   # history tokens kept after truncation
        self.overflow = np.zeros(n, dtype=bool)
        # On overflow the oldest tokens go: the context keeps floor(W·(1-ratio)) tokens with
        # the new turn in it (paper: truncation ratio 0.5).
        budget = int(W * (1 - s.truncation_ratio))
        conv, inn, out = wl.conv.tolist(), self.inn.tolist(), self.out.tolist()
        hist, keep, over = [0] * n, [0] * n, [False] * n
        ctx, prev = 0, -1
        for j in range(n):
            if conv[j] != prev:
                ctx, prev = 0, conv[j]
            hist[j] = ctx
            if ctx + inn[j] + out[j] > W:
                over[j], ctx = True, max(0, budget - inn[j] - out[j])
            keep[j] = ctx
            ctx += inn[j] + out[j]
        self.hist[:], self.keep[:], self.overflow[:] = hist, keep, over
        self.after = self.keep + self.inn + self.out   # session tokens after the turn
        self.block = h.block_tokens
        self.kv = m.kv_bytes_per_token
        self.size_after = self.blocks(self.after) * self.kv
        # Paper §3.3: windows in jobs = capacity / average session KV (S_kv: the mean stored
        # session size over all turns of this workload).
        self.dram_cap, self.ssd_cap = int(h.dram_gb * GB), int(h.ssd_gb * GB)
        self.S_kv = float(self.size_after.mean())
        self.L_pw = max(1, int(self.dram_cap // self.S_kv))
        self.L_ew = max(self.L_pw, int((self.dram_cap + self.ssd_cap) // self.S_kv))
        # Paper Eq. 4: S_buf = B·(T_load·L_hist − T_pref·L_new); B·T_load is bytes per token.
        # B is the aggregate HBM↔DRAM bandwidth of the job's KV, gpus × pcie_gbps: each GPU of
        # the tensor-parallel group loads its 1/gpus shard on its own PCIe link (so T_load =
        # kv_bytes_per_token / B), and S_buf is the read buffer summed over the GPUs.
        pref_ns = m.prefill_us_per_token * 1000
        sbuf = self.keep * self.kv - h.host_link_gbps * pref_ns * self.inn
        if sc.serving.detail_job >= 0:
            self.detail = sc.serving.detail_job
        else:
            cand = np.where(self.keep > 0, sbuf, -np.inf)
            self.detail = int(np.argmax(cand)) if n else 0
        self.S_buf_raw = float(sbuf[self.detail]) if n else 0.0
        # Paper §3.5: CCpUT = DSpUT · CCpS (distinct sessions per second × full-context KV).
        first = wl.arrival_ns[wl.turn == 0]
        span_s = (first.max() - first.min()) / 1e9 if len(first) > 1 else 0.0
        self.DSpUT = (len(first) - 1) / span_s if span_s > 0 else float(len(first))
        self.CCpS = int(self.blocks(np.array([W]))[0] * self.kv)

    def blocks(self, tokens: np.ndarray) -> np.ndarray:
        """Tokens rounded up to whole storage blocks."""
        return -(-tokens // self.block) * self.block


# --- one run of one policy ------------------------------------------------------------------------

class Run:
    """All state of one simulated run (nothing is shared between runs)."""

    def __init__(self, sc: AttentionStoreScenario, prep: Prepared, policy: str, truncation: str,
                 record: bool):
        m, h = sc.model, sc.hardware
        wl = prep.wl
        self.sc, self.prep = sc, prep
        self.coupled = truncation == "coupled"
        self.L = m.layers
        self.kv = m.kv_bytes_per_token
        self.pref = m.prefill_us_per_token * 1000   # ns per token (float; rounded per job)
        self.dec = m.decode_us_per_token * 1000
        # HBM↔DRAM, bytes per ns: a job's KV moves over all `gpus` PCIe links at once (each GPU
        # loads and saves its own 1/gpus shard of every layer); gpus = 1 is one link.
        self.pcie = h.host_link_gbps
        # The SSD tier: `ssds` devices striped as one queue (every request uses them all).
        self.ssd_r, self.ssd_w = h.ssds * h.ssd_read_gbps, h.ssds * h.ssd_write_gbps
        self.k_buf_bytes = int(h.read_buffer_gb * GB)
        self.wb_ns = int(h.write_buffer_gb * GB / self.pcie)
        # SSD request order (store.ssd_read_priority): False = one FIFO queue (ssd_free is the
        # end of the last booked request); True = ssd_q, the requests not yet finished, in
        # service order, re-timed when a more urgent request jumps the not-yet-started ones.
        self.ssd_prio = sc.store.ssd_read_priority
        self.ssd_q: list[list] = []
        self.dram_cap, self.ssd_cap = prep.dram_cap, prep.ssd_cap
        self.L_pw, self.L_ew = prep.L_pw, prep.L_ew
        self.closed = sc.serving.arrivals == "closed_loop"
        # Plain lists: the per-job path is pure Python, and list indexing beats numpy scalars.
        self.conv = wl.conv.tolist()
        self.turn = wl.turn.tolist()
        self.think = wl.think_ns.tolist()
        self.rec_arrival = wl.arrival_ns.tolist()
        self.inn, self.out = prep.inn.tolist(), prep.out.tolist()
        self.keep, self.over = prep.keep.tolist(), prep.overflow.tolist()
        self.size_after = prep.size_after.tolist()
        self.after = prep.after.tolist()
        self.hist = prep.hist.tolist()
        self.block = prep.block
        self.inclusive = sc.store.ssd_inclusive
        self.n = len(wl)
        self.n_conv = wl.n_conv
        self.last_row = np.r_[np.flatnonzero(np.diff(wl.conv)), self.n - 1].tolist() if self.n else []
        self.last_of = [0] * self.n_conv
        for r in self.last_row:
            self.last_of[self.conv[r]] = r

        self.loop = EventLoop()
        self.where = [NONE] * self.n_conv   # the best tier with a full copy (DRAM/PREFETCHING/SSD/NONE)
        self.size = [0] * self.n_conv       # bytes of the session's KV (as held in DRAM)
        self.tok = [0] * self.n_conv        # tokens of the session's KV
        self.ssd_tok = [0] * self.n_conv    # tokens of the SSD copy: a prefix of the session's KV (0: none)
        self.ssd_size = [0] * self.n_conv   # bytes of the SSD copy (whole blocks)
        self.qidx = [-1] * self.n_conv     # queue index of the session's waiting job, or -1
        self.next_time = [INF] * self.n_conv  # arrival of the session's next turn (for Belady)
        self.queue: list[int] = []
        self.qhead = 0
        self.running = -1
        self.busy = False
        self.dram_used = self.ssd_used = 0
        self.pcie_load_free = self.pcie_save_free = self.ssd_free = 0
        self.last_dispatch = 0
        self.pf_scan = 0
        self.pf_end = [0] * self.n_conv
        self.pf_seq = [0] * self.n_conv
        self.policy = POLICIES[policy](self)
        self.stores = self.policy.stores
        self.prefetches = self.policy.prefetches and self.ssd_cap > 0

        # Per-job results.
        self.arrival = [0] * self.n
        self.start = [0] * self.n
        self.first_token = [0] * self.n
        self.end = [0] * self.n
        self.outcome = [FIRST] * self.n
        self.demoted = self.dropped = self.prefetched = self.ssd_copies_evicted = 0
        self.lost_queued = 0    # sessions dropped from the store while their next job was waiting
        self.ssd_write_bytes = self.ssd_read_bytes = self.ssd_busy_ns = 0
        self.late_prefetch = 0  # SSD hits whose prefetch was still in flight at dispatch
        self.detail = prep.detail
        self.detail_info: dict = {}

        self.tb = TraceBuilder(item_name="session") if record else None
        if record:
            self._lanes()

    # --- trace -------------------------------------------------------------------------------
    def _lanes(self):
        tb, d = self.tb, self.detail
        self.l_gpu = tb.lane(GPU_LANE, "GPU")
        self.l_layers = tb.lane(f"GPU · layers of turn {d}", "GPU")
        self.l_load = tb.lane("PCIe · load DRAM→HBM", "PCIe")
        self.l_layer_load = tb.lane(f"PCIe · layer loads of turn {d}", "PCIe")
        self.l_save = tb.lane("PCIe · save HBM→DRAM", "PCIe")
        self.l_ssd_read = tb.lane("SSD · prefetch + demand reads", "SSD")
        self.l_ssd_write = tb.lane("SSD · eviction writes", "SSD")
        self.free_slots: list[int] = []
        self.n_slots = 0
        self.slot_of: dict[int, tuple[int, int]] = {}

    def _counters(self):
        t, tb = self.loop.now, self.tb
        tb.counter("DRAM in use", t, self.dram_used, "B")
        tb.counter("SSD in use", t, self.ssd_used, "B")
        tb.counter("queue length", t, len(self.queue) - self.qhead, "jobs")

    def _resident(self, c: int):
        if self.tb is not None:
            if self.free_slots:
                slot = heapq.heappop(self.free_slots)
            else:
                slot, self.n_slots = self.n_slots, self.n_slots + 1
            self.slot_of[c] = (slot, self.loop.now)

    def _gone(self, c: int):
        if self.tb is not None:
            slot, since = self.slot_of.pop(c)
            self.tb.residency(slot, since, self.loop.now, c)
            heapq.heappush(self.free_slots, slot)

    # --- store ---------------------------------------------------------------------------------
    def _ssd_io(self, nbytes: int, bw: float, prio: int = 2, c: int = -1, seq: int = 0) -> tuple[int, int]:
        """Book `nbytes` on the SSD (one device, reads and writes in turn): (start, end)."""
        if self.ssd_prio:
            op = self._ssd_book(int(nbytes / bw), prio, self.loop.now, c, seq=seq)
            return op[0], op[1]
        s0 = max(self.loop.now, self.ssd_free)
        s1 = s0 + int(nbytes / bw)
        self.ssd_free = s1
        self.ssd_busy_ns += s1 - s0
        return s0, s1

    # --- SSD with read priority (store.ssd_read_priority) ---------------------------------------
    # An op is [start, end, prio, earliest, c, seq, label]: served one at a time in list order,
    # each from max(end of the one before, its earliest). Ops with start <= now have started
    # and are never moved; the others are queued, in priority order (a new op goes behind the
    # queued ones of its own or a more urgent priority), except that a read of session c stays
    # behind c's own queued write (it reads what that write puts on the SSD).
    def _ssd_retire(self):
        q, now = self.ssd_q, self.loop.now
        k = 0
        while k < len(q) and q[k][1] <= now:
            k += 1
        if k:
            for op in q[:k]:
                self._ssd_span(op)
            del q[:k]

    def _ssd_span(self, op):
        if self.tb is not None:
            s0, s1, prio, _, c, _, _ = op
            if prio == P_WRITE:
                self.tb.span(self.l_ssd_write, s0, s1, "evict_write", "evict DRAM→SSD", ref=c)
            elif op[6] == "fetch":
                self.tb.span(self.l_ssd_read, s0, s1, "fetch", "demand read SSD→HBM", ref=c)
            else:
                self.tb.span(self.l_ssd_read, s0, s1, "prefetch", "prefetch SSD→DRAM", ref=c)

    def _ssd_insert(self, op) -> None:
        """Place `op` by priority among the queued ops and re-time the ops from there on."""
        q, now, prio, c = self.ssd_q, self.loop.now, op[2], op[4]
        i = len(q)
        while i > 0 and q[i - 1][0] > now and q[i - 1][2] > prio:
            i -= 1
        if prio != P_WRITE and c >= 0:  # not ahead of c's own queued write
            for k in range(len(q) - 1, i - 1, -1):
                if q[k][4] == c and q[k][2] == P_WRITE:
                    i = k + 1
                    break
        q.insert(i, op)
        prev = q[i - 1][1] if i else now
        dur = op[1] - op[0]
        op[0] = max(prev, op[3])
        op[1] = op[0] + dur
        prev = op[1]
        for k in range(i + 1, len(q)):
            o = q[k]
            s0 = max(prev, o[3])
            if s0 != o[0]:
                d = o[1] - o[0]
                o[0], o[1] = s0, s0 + d
                if o[2] != P_WRITE and o[6] == "prefetch" and self.pf_seq[o[4]] == o[5]:
                    self._pf_retimed(o)
            prev = o[1]

    def _pf_retimed(self, o):
        c = o[4]
        self.pf_seq[c] += 1
        o[5] = self.pf_seq[c]
        self.pf_end[c] = o[1]
        self.loop.at(o[1], self._landed, c, o[5], priority=0)

    def _ssd_book(self, dur: int, prio: int, earliest: int, c: int, label: str = "", seq: int = 0) -> list:
        self._ssd_retire()
        op = [earliest, earliest + dur, prio, earliest, c, seq, label or ("prefetch" if prio == P_PREFETCH else "")]
        self._ssd_insert(op)
        self.ssd_busy_ns += dur
        return op

    def _ssd_promote(self, c: int):
        """c's prefetch, still queued, now has a job waiting on it: serve it as a demand read."""
        self._ssd_retire()
        q, now = self.ssd_q, self.loop.now
        for k, o in enumerate(q):
            if o[4] == c and o[6] == "prefetch" and o[5] == self.pf_seq[c] and o[0] > now:
                del q[k]
                end = o[1]
                o[2] = P_DEMAND
                for x in range(k, len(q)):  # close the gap it leaves
                    prev = q[x - 1][1] if x else now
                    y = q[x]
                    s0 = max(prev, y[3])
                    d = y[1] - y[0]
                    if s0 != y[0]:
                        y[0], y[1] = s0, s0 + d
                        if y[6] == "prefetch" and self.pf_seq[y[4]] == y[5]:
                            self._pf_retimed(y)
                self._ssd_insert(o)
                if o[1] != end:
                    self._pf_retimed(o)
                return

    def _drop_dram(self, c: int):
        """Free c's DRAM copy (or its in-flight prefetch reservation); `where` is the caller's."""
        w = self.where[c]
        if w == DRAM or w == PREFETCHING:
            self.dram_used -= self.size[c]
            self._gone(c)
            if w == DRAM:
                self.policy.on_remove(DRAM, c)

    def _drop_ssd(self, c: int):
        """Free c's SSD copy; if that was its only copy, the session is gone from the store."""
        if self.ssd_size[c]:
            self.ssd_used -= self.ssd_size[c]
            self.policy.on_remove(SSD, c)
            self.ssd_size[c] = self.ssd_tok[c] = 0
        if self.where[c] == SSD:
            self.where[c] = NONE

    def _remove(self, c: int):
        """Take session c out of the store, every copy of it."""
        self._drop_dram(c)
        self._drop_ssd(c)
        self.where[c] = NONE

    def _truncate_ssd(self, c: int, dropped_tokens: int):
        """Decoupled truncation dropped the oldest tokens: so does the SSD copy (a prefix of the
        session), freeing their blocks."""
        left = self.ssd_tok[c] - dropped_tokens
        if left <= 0:
            self._drop_ssd(c)
            return
        size = -(-left // self.block) * self.block * self.kv
        self.ssd_used += size - self.ssd_size[c]
        self.ssd_tok[c], self.ssd_size[c] = left, size

    def _insert_dram(self, c: int):
        self.where[c] = DRAM
        self.dram_used += self.size[c]
        self.policy.on_insert(DRAM, c)
        self._resident(c)

    def _demote(self, v: int):
        """DRAM victim v: written to SSD (making room there), or dropped without an SSD. With an
        inclusive SSD copy only the tokens not yet on SSD are written."""
        self._drop_dram(v)
        if self.qidx[v] >= 0:
            self.pf_scan = min(self.pf_scan, self.qidx[v])  # look at it again for prefetch
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
                self.tb.span(self.l_ssd_write, s0, s1, "evict_write", "evict DRAM→SSD", ref=v)
        if self.tb is not None:
            self.tb.instant(self.l_ssd_write, t, "evict", v)
        self.where[v] = SSD
        self.ssd_used += write
        self.ssd_size[v], self.ssd_tok[v] = size, self.tok[v]
        if had:
            self.policy.on_access(SSD, v)
        else:
            self.policy.on_insert(SSD, v)
        self._fit_ssd()

    def _lost(self, c: int):
        self.dropped += 1
        if self.qidx[c] >= 0:  # the queue already said it would be needed
            self.lost_queued += 1

    def _fit_ssd(self):
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
                self.tb.instant(self.l_ssd_write, self.loop.now, "evict", x)

    def _fit_dram(self, extra: int = 0, before: int = -1) -> bool:
        """Evict until `extra` more bytes fit in DRAM; False if the policy finds no victim."""
        while self.dram_used + extra > self.dram_cap:
            v = self.policy.victim(DRAM, before)
            if v < 0:
                return False
            self._demote(v)
        return True

    def _prefetch(self):
        """Scheduler look-ahead: fetch SSD→DRAM the sessions of the next L_pw queued jobs."""
        queue, conv, where = self.queue, self.conv, self.where
        end = min(len(queue), self.qhead + self.L_pw)
        i = max(self.pf_scan, self.qhead)
        while i < end:
            c = conv[queue[i]]
            if where[c] == SSD and c != self.running:
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
                self.loop.at(s1, self._landed, c, self.pf_seq[c], priority=0)
                if self.tb is not None and not self.ssd_prio:
                    self.tb.span(self.l_ssd_read, s0, s1, "prefetch", "prefetch SSD→DRAM", ref=c)
            i += 1
        self.pf_scan = i

    def _landed(self, c: int, seq: int):
        if self.where[c] == PREFETCHING and self.pf_seq[c] == seq:
            self.where[c] = DRAM
            self.policy.on_insert(DRAM, c)
            if self.tb is not None:
                self.tb.instant(self.l_ssd_read, self.loop.now, "land", c)

    # --- jobs ------------------------------------------------------------------------------------
    def arrive(self, j: int):
        c = self.conv[j]
        self.arrival[j] = self.loop.now
        self.qidx[c] = len(self.queue)
        self.queue.append(j)
        if not self.busy:
            self.dispatch()
        elif self.prefetches:
            self._prefetch()
        if self.tb is not None:
            self._counters()

    def dispatch(self):
        t = self.loop.now
        j = self.queue[self.qhead]
        self.qhead += 1
        c = self.conv[j]
        self.qidx[c] = -1
        head_since = max(self.arrival[j], self.last_dispatch)  # when j became next in line
        self.last_dispatch = t
        self.busy, self.running = True, c
        self.start[j] = t
        inn, out, keep = self.inn[j], self.out[j], self.keep[j]
        where = self.where[c]
        if keep == 0:
            outcome = FIRST  # nothing to reuse (a first turn, or truncated to nothing)
            self._remove(c)
        elif where == NONE or (self.over[j] and self.coupled):
            outcome = MISS
            self._remove(c)  # coupled truncation: positions shifted, every stored copy is invalid
        else:
            outcome = HIT_DRAM if where == DRAM else HIT_SSD
            if keep < self.hist[j] and self.ssd_size[c]:
                self._truncate_ssd(c, self.hist[j] - keep)  # decoupled: the copy stays valid
        self.outcome[j] = outcome
        L = self.L
        layer = None
        if outcome >= HIT_DRAM:
            layer_bytes = keep * self.kv / L
            c_layer = int(inn * self.pref / L)
            k = 0
            if where == SSD:
                # On demand, on the critical path: stream SSD→DRAM→HBM layer by layer at the
                # slower of SSD and PCIe, once both are free.
                a = int(layer_bytes / min(self.ssd_r, self.pcie))
                if self.ssd_prio:  # ahead of every queued prefetch and write
                    T0 = self._ssd_book(L * a, P_DEMAND, max(t, self.pcie_load_free), c, "fetch")[0]
                else:
                    T0 = max(t, self.ssd_free, self.pcie_load_free)
                    self.ssd_free = T0 + L * a
                    self.ssd_busy_ns += L * a
                self.ssd_read_bytes += keep * self.kv
                if self.tb is not None and not self.ssd_prio:
                    self.tb.span(self.l_ssd_read, T0, T0 + L * a, "fetch", "demand read SSD→HBM", ref=c)
                if self.inclusive:
                    self.policy.on_access(SSD, c)  # the SSD copy stays valid
                else:
                    self._remove(c)
            else:
                a = int(layer_bytes / self.pcie)
                k = int(self.k_buf_bytes // layer_bytes) if layer_bytes else L
                if where == PREFETCHING and self.ssd_prio:
                    self._ssd_promote(c)  # the job now waits on it: a demand read
                # Not before it is in DRAM (pf_end: when a prefetch lands, possibly still ahead).
                T0 = max(head_since, self.pcie_load_free, self.pf_end[c])
                if where == PREFETCHING:
                    self.late_prefetch += 1
                    self._drop_dram(c)  # it is re-saved to DRAM when the turn ends
                    self.where[c] = SSD if self.ssd_size[c] else NONE
                else:
                    self.policy.on_hit(c)
            pe, le_last = prefill_end(t, T0, a, c_layer, L, k)
            self.pcie_load_free = le_last
            layer = (T0, a, c_layer, k)
            if self.tb is not None:
                self.tb.span(self.l_load, min(T0, le_last), le_last, "load", OUTCOME[outcome], ref=c)
        else:
            pe = t + int((keep + inn) * self.pref)
        self.first_token[j] = pe
        dec_end = pe + int(out * self.dec)
        E = dec_end
        if self.stores:
            saved = (inn + out) if outcome >= HIT_DRAM else (keep + inn + out)
            s0 = max(pe, self.pcie_save_free)
            self.pcie_save_free = s1 = s0 + int(saved * self.kv / self.pcie)
            E = max(dec_end, s1 - self.wb_ns)  # wait until the rest fits in the write buffer
            if self.tb is not None:
                self.tb.span(self.l_save, s0, s1, "save", "save new KV", ref=c)
        self.end[j] = E
        if self.tb is not None:
            self._trace_job(j, c, t, pe, dec_end, E, outcome, layer)
        self.loop.at(E, self.finish, j, priority=1)
        if self.prefetches:
            self._prefetch()

    def finish(self, j: int):
        c = self.conv[j]
        E = self.loop.now
        self.busy, self.running = False, -1
        nxt = j + 1 if j != self.last_of[c] else -1
        if nxt >= 0:
            at = E + self.think[nxt] if self.closed else max(self.rec_arrival[nxt], E)
            self.next_time[c] = at
            self.loop.at(at, self.arrive, nxt, priority=2)
        else:
            self.next_time[c] = INF
        if self.stores:
            new = self.size_after[j]
            self.tok[c] = self.after[j]
            if self.where[c] == DRAM:
                self.dram_used += new - self.size[c]
                self.size[c] = new
            else:
                self.size[c] = new
                self._insert_dram(c)
            self.policy.on_resave(c)
            self._fit_dram()  # c itself may be the victim: then it goes straight on to SSD
        if self.qhead < len(self.queue):
            self.dispatch()
        elif self.prefetches:
            self._prefetch()
        if self.tb is not None:
            self._counters()

    def _trace_job(self, j, c, t, pe, dec_end, E, outcome, layer):
        tb = self.tb
        tb.instant(self.l_gpu, t, "miss" if outcome == MISS else "hit" if outcome >= HIT_DRAM else "arrive", c)
        if self.over[j]:
            tb.instant(self.l_gpu, t, "overflow", c)
        tb.span(self.l_gpu, t, pe, "prefill", f"prefill · {OUTCOME[outcome]}", ref=j)
        tb.span(self.l_gpu, pe, dec_end, "decode", "decode", ref=j)
        if E > dec_end:
            tb.span(self.l_gpu, dec_end, E, "stall", "write buffer full", ref=j)
        if j != self.detail:
            return
        L = self.L
        if layer is None:  # a miss or first turn: compute only, evenly over the layers
            c_layer = (pe - t) // L
            T0, a, k = t, 0, L
        else:
            T0, a, c_layer, k = layer
        ls, le, cs, ce = layer_schedule(t, T0, a, c_layer, L, k)
        gaps = 0
        for i in range(L):
            if a:
                tb.span(self.l_layer_load, int(ls[i]), int(le[i]), "load", f"load layer {i}", ref=i)
            prev = t if i == 0 else int(ce[i - 1])
            if cs[i] > prev:
                gaps += int(cs[i]) - prev
                tb.span(self.l_layers, prev, int(cs[i]), "stall", f"wait for layer {i}", ref=i)
            tb.span(self.l_layers, int(cs[i]), int(ce[i]), "prefill", f"layer {i}", ref=i)
        self.detail_info = {"turn_row": j, "conversation": self.prep.wl.names[c], "turn": self.turn[j] + 1,
                            "outcome": OUTCOME[outcome], "L_hist": self.keep[j], "L_new": self.inn[j],
                            "layers_preloaded": min(k, L) if a else 0,
                            "overlap_gaps_ms": gaps / 1e6, "prefill_ms": (pe - t) / 1e6}

    def run(self):
        wl = self.prep.wl
        for j in np.flatnonzero(wl.turn == 0).tolist():
            self.loop.at(self.rec_arrival[j], self.arrive, j, priority=2)
        self.loop.run()
        if self.tb is not None:
            for op in self.ssd_q:  # SSD requests (read priority) are drawn once their times are final
                self._ssd_span(op)
            self.ssd_q = []
            for c in list(self.slot_of):
                self._gone(c)
            self.tb.slots = self.n_slots
        return self

    # --- metrics -------------------------------------------------------------------------------
    def metrics(self, baseline: dict | None) -> dict:
        out = np.array(self.outcome)
        arr, st, ft, en = (np.array(x, dtype=np.int64) for x in (self.arrival, self.start, self.first_token, self.end))
        hist_jobs = out != FIRST
        hits = int((out >= HIT_DRAM).sum())
        dram = int((out == HIT_DRAM).sum())
        n_hist = int(hist_jobs.sum())
        ttft = (ft - arr) / 1e6
        over = np.array(self.over, dtype=bool) & hist_jobs
        n_over = int(over.sum())
        busy_s = float((en - st).sum()) / 1e9
        prefill_s = float((ft - st).sum()) / 1e9
        m = {
            "jobs": self.n,
            "hit_rate": hits / n_hist if n_hist else None,
            "dram_hit_share": dram / hits if hits else None,
            "ssd_hit_share": (hits - dram) / hits if hits else None,
            "mean_ttft_ms": float(ttft.mean()) if self.n else None,
            "p99_ttft_ms": float(np.percentile(ttft, 99)) if self.n else None,
            "prefill_gpu_s": prefill_s,
            "speedup_vs_recompute": None,
            # Extras: what the headline numbers are made of.
            "hits": hits,
            "jobs_with_history": n_hist,
            "mean_ttft_later_turns_ms": float(ttft[hist_jobs].mean()) if n_hist else None,
            "mean_prefill_ms": float((ft - st).mean()) / 1e6 if self.n else None,
            "gpu_busy_s": busy_s,
            "makespan_s": float(en.max()) / 1e9 if self.n else 0.0,
            "mean_queue_wait_ms": float((st - arr).mean()) / 1e6 if self.n else None,
            "overflow_jobs": n_over,
            "overflow_hit_rate": float((out[over] >= HIT_DRAM).mean()) if n_over else None,
            "evictions_to_ssd": self.demoted,
            "sessions_dropped": self.dropped,
            "dropped_while_queued": self.lost_queued,  # its next job already waiting: the queue knew
            "prefetches": self.prefetched,
            "ssd_hits_prefetch_in_flight": self.late_prefetch,
            "ssd_copies_evicted": self.ssd_copies_evicted,  # inclusive: SSD copies of DRAM-resident sessions
            "ssd_write_gb": self.ssd_write_bytes / 1e9,
            "ssd_read_gb": self.ssd_read_bytes / 1e9,
            "ssd_busy_share": self.ssd_busy_ns / float(en.max()) if self.n and en.max() > 0 else 0.0,
        }
        if baseline:
            # The paper's "speedup": end-to-end GPU time of recomputation over this policy's.
            m["speedup_vs_recompute"] = baseline["gpu_busy_s"] / busy_s if busy_s else None
            m["prefill_speedup_vs_recompute"] = baseline["prefill_gpu_s"] / prefill_s if prefill_s else None
            if baseline["mean_ttft_ms"]:
                m["ttft_reduction_vs_recompute"] = 1 - m["mean_ttft_ms"] / baseline["mean_ttft_ms"]
        return m


def round_metrics(m: dict) -> dict:
    """Six significant digits: enough to read, and stable for golden comparisons."""
    def r(v):
        if isinstance(v, float) and math.isfinite(v):
            return float(f"{v:.6g}")
        if isinstance(v, dict):
            return {k: r(x) for k, x in v.items()}
        return v
    return {k: r(v) for k, v in m.items()}
