"""The serving model: one run of one placement policy = the continuous-batching engine
(kvviz/serving/batching.py) serving the workload, with each session's KV kept between turns by the store
(store.py). This module holds what joins them: the workload as the model sees it (`Prepared`),
turn release (`serving.arrivals`), the trace, and the per-policy metrics.

Job life, for turn j of conversation c:
- It is released (closed_loop: a think time after the previous reply; saturated: as the
  previous reply ends; recorded/interleaved/conversation_poisson: at its nominal time, never
  before the previous reply ends) and joins the waiting queue; the store lists it for look-ahead.
- The batch scheduler admits it when the batch and the HBM pool have room. Its history is an
  HBM hit (kept in free HBM blocks), a DRAM hit (loaded layer by layer during the prefill
  iteration), an SSD hit (a prefetch still in flight, or read on demand on the critical path),
  a miss (recomputed with the new tokens) or absent (a first turn).
- A prefill iteration emits its first token; decode iterations the rest, one per iteration.
- When it ends, the session's KV (history + the turn) is in DRAM, the policy making room.

Time is integer ns. A GB/s is exactly one byte per ns.
"""
from __future__ import annotations

import math
from types import ModuleType
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from ...requests.conversations import Conversations
from ...serving.batching import BatchConfig, Batcher
from ...serving.event_loop import Loop
from ...serving.kv_source import FIRST, HIT_DRAM, HIT_HBM, HIT_SSD, OUTCOME, RECOMPUTE_FASTER, LayerSchedule
from ...serving.overload import served_load
from ...serving.request_metrics import mean, percentile, tpot_ms, ttft_ms
from ...serving.roofline import Roofline
from ...trace import NO_FACT, TraceBuilder
from . import economics, native
from . import recording as rec
from .model import GB, AttentionStoreScenario
from .recording import U
from .store import INF, Store

GPU_LANE = "GPU · prefill + decode iterations"  # its spans' ref is a job's turn row
# The chosen turn's layer-by-layer lanes (a view of the run opens on them: initial_range).
LAYERS_LANE = "GPU · layers of turn {}'s prefill iteration"
LAYER_LOADS_LANE = "PCIe · layer loads of turn {}'s iteration"
COUNTERS = ("batch size", "queue length", "HBM KV in use", "DRAM in use", "SSD in use")
UNITS = ("jobs", "jobs", "B", "B", "B")
# The mark a turn's outcome puts on the GPU lane when its prefill starts
MARK = tuple(rec.HIT if o >= HIT_HBM else rec.ARRIVE if o == FIRST else rec.MISS for o in sorted(OUTCOME))
Int64s = npt.NDArray[np.int64]


def layer_schedule(S: int, T0: int, a: int, c: int, L: int, k: int) -> tuple[Int64s, Int64s, Int64s, Int64s]:
    """`prefill_end`'s schedule layer by layer: arrays (load start, load end, compute start,
    compute end). Used to draw one chosen iteration and to check `prefill_end`."""
    ls, le, cs, ce = (np.zeros(L, dtype=np.int64) for _ in range(4))
    t_load, t_comp = T0, S
    for i in range(L):
        start = t_load if i < k else max(t_load, S)
        ls[i], le[i] = start, start + a
        t_load = le[i]
        cs[i] = max(t_comp, le[i])
        ce[i] = t_comp = cs[i] + c
    return ls, le, cs, ce


def batch_config(sc: AttentionStoreScenario, prep: "Prepared") -> BatchConfig:
    h = sc.hardware
    sync_save = sc.store.save == "sync"
    preload = sc.store.preload == "layerwise"
    # The buffers take HBM only where their mechanism runs (pre-loading; async saving).
    buffers = h.read_buffer_gb * preload + h.write_buffer_gb * (not sync_save)
    kv = sc.model.kv_bytes_per_token
    hbm_free_gb = h.hbm_free_gb
    assert hbm_free_gb is not None  # a validated scenario has it (AttentionStoreScenario._check refuses None)
    return BatchConfig(gpu=prep.gpu, kv=kv, layers=sc.model.layers, max_batch=sc.serving.max_batch,
                       cap_tok=int((hbm_free_gb - buffers) * GB) // kv, save_gbps=h.host_bw_gbps,
                       write_buffer=h.write_buffer_gb * GB, sync_save=sync_save,
                       hbm_cache=sc.store.tiers.startswith("hbm"))


# --- the workload as the model sees it ----------------------------------------------------------

class Prepared:
    """Per-turn quantities that do not depend on the policy: capped token counts, context
    truncation, session sizes, and the paper's sizing formulas."""

    def __init__(self, sc: AttentionStoreScenario, wl: Conversations):
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
        tiers = sc.store.tiers
        self.dram_cap = int(h.dram_gb * GB) if "dram" in tiers else 0
        self.ssd_cap = int(h.ssd_gb * GB) if "ssd" in tiers else 0
        self.S_kv = float(self.size_after.mean())
        self.L_pw = max(1, int(self.dram_cap // self.S_kv))
        self.L_ew = max(self.L_pw, int((self.dram_cap + self.ssd_cap) // self.S_kv))
        # Paper Eq. 4: S_buf = B·(T_load·L_hist − T_pref·L_new); B·T_load is bytes per token.
        # B is the aggregate HBM↔DRAM bandwidth of the job's KV, host links × host_link_gbps:
        # each GPU of the tensor-parallel group loads its 1/gpus shard, all links at once (so
        # T_load = kv_bytes_per_token / B), and S_buf is the read buffer summed over the GPUs.
        self.gpu = Roofline(m.params_b * 1e9, h.gpus, h.gpu_peak_tflops, h.mfu, h.hbm_tbps, h.hbm_efficiency,
                            m.kv_bytes_per_token, m.layers, m.d_model)
        # T_pref·L_new: the new tokens' prefill, attending over the history too (roofline.py).
        sbuf = self.keep * self.kv - h.host_bw_gbps * self.gpu.prefill_ns(self.inn, self.keep)
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
        # The job list: rows in order of their nominal arrival, and each row's place in it.
        self.order = np.argsort(wl.arrival_ns, kind="stable")
        self.rank = np.empty(n, dtype=np.int64)
        self.rank[self.order] = np.arange(n)
        self.next_row = np.where(np.r_[wl.conv[1:] == wl.conv[:-1], False], np.arange(1, n + 1), -1)

    def blocks(self, tokens: Int64s) -> Int64s:
        """Tokens rounded up to whole storage blocks."""
        return -(-tokens // self.block) * self.block


def _engine_for(engine: str, policy: str) -> tuple[ModuleType | None, str]:
    """(the compiled engine's module to run, or None for the reference; why the reference runs
    where it was not asked for, else ""). `engine`: "auto" (the compiled one where it is built and
    current and has the policy), "python" (the reference), "native" (the compiled one, or an error
    saying why not): native/__init__.py."""
    if engine not in ("auto", "python", "native"):
        raise ValueError(f"engine: {engine!r} (auto, python or native)")
    nat = native.engine() if engine != "python" else None
    why = native.note() if nat is None else "" if policy in nat.STORE_POLICIES else \
        f"placement {policy!r} has no compiled twin: the Python reference engine runs it, several times slower"
    if engine == "native" and why:
        raise RuntimeError(f"engine='native': {why}")
    return (None, why) if why else (nat, "")


# --- one run of one policy ------------------------------------------------------------------------

class Run:
    """All state of one simulated run (nothing is shared between runs)."""

    # Per-job columns, typed as the reference reads them (lists). The compiled engine is handed the
    # arrays as they are (it copies them: batch_state.pxi); the Python it calls back (_draw_layers, metrics)
    # reads them through int() and np.array, the same on both.
    conv: list[int]
    think: list[int]
    rec_arrival: list[int]
    inn: list[int]
    out: list[int]
    keep: list[int]
    over: list[bool]
    hist: list[int]
    size_after: list[int]
    after: list[int]
    next_row: list[int]

    def __init__(self, sc: AttentionStoreScenario, prep: Prepared, policy: str, truncation: str, record: bool,
                 engine: str = "auto") -> None:
        nat, self.engine_note = _engine_for(engine, policy)  # the note: why the reference runs ("" if asked)
        wl = prep.wl
        self.sc, self.prep = sc, prep
        self.coupled = truncation == "coupled"
        self.closed = sc.serving.arrivals in ("closed_loop", "saturated")  # saturated: think times are 0
        self.L = sc.model.layers
        # Plain lists for the reference (its per-job path is pure Python, and list indexing beats
        # numpy scalars); the compiled engine copies the arrays into its own.
        cols = (wl.conv, wl.think_ns, wl.arrival_ns, prep.inn, prep.out, prep.keep, prep.overflow, prep.hist,
                prep.size_after, prep.after, prep.next_row)
        (self.conv, self.think, self.rec_arrival, self.inn, self.out, self.keep, self.over, self.hist,
         self.size_after, self.after, self.next_row) = cast("list[Any]", cols) if nat else [a.tolist() for a in cols]
        self.n = len(wl)
        self.arrival: list[int] = [0] * self.n if not nat else []  # the compiled batcher's, below
        self.arrived = 0
        self.queue_mid = self.queue_end = 0
        self.detail = prep.detail
        self.detail_info: dict[str, int | float | str] = {}
        self.loop: Loop = nat.Loop() if nat else Loop()
        self.tb = tb = TraceBuilder(item_name="session", slot_tier="DRAM") if record else None
        if tb is not None:
            d = self.detail
            self.l_gpu = tb.lane(GPU_LANE, "GPU")
            self.l_layers = tb.lane(LAYERS_LANE.format(d), "GPU")
            self.l_load = tb.lane("PCIe · load DRAM→HBM", "PCIe")
            self.l_layer_load = tb.lane(LAYER_LOADS_LANE.format(d), "PCIe")
            self.l_save = tb.lane("PCIe · save HBM→DRAM", "PCIe")
            self.labels = rec.RunLabels(tb)
            self.counters = tb.counter_series(COUNTERS, UNITS)
            # the trace's turn numbers, from 1 (the compiled engine keeps its own)
            self.turn1: list[int] = (wl.turn + 1).tolist() if not nat else []
            self._last: tuple[int, ...] | None = None
            self._load_flow, self._load_bytes = -1, 0  # the last load's, for the prefill it feeds
        self.store: Store = (nat.Store if nat else Store)(self, policy, self.coupled)
        cfg = batch_config(sc, prep)
        self.batcher: Batcher  # or its compiled twin, which also runs the loop (run)
        if nat:  # the compiled batcher does the per-turn glue (arrive, job_done) itself
            self.batcher = compiled = nat.Batcher(self, cfg)
            self.arrival = compiled.arrival
        else:
            self.batcher = Batcher(self, cfg)
        self.native = nat is not None

    # --- release --------------------------------------------------------------------------
    def arrive(self, j: int) -> None:
        self.arrival[j] = self.loop.now
        self.store.arrived(j)
        self.batcher.arrive(j)
        self.arrived += 1
        # Stability: the queue at half the arrivals and at the last one.
        if self.arrived == (self.n + 1) // 2:
            self.queue_mid = self.batcher.queue_len()
        if self.arrived == self.n:
            self.queue_end = self.batcher.queue_len()

    def job_done(self, j: int) -> None:
        """Called by the batcher when j's last token is out: release the next turn, save."""
        c, E = self.conv[j], self.loop.now
        nxt = self.next_row[j]
        if nxt >= 0:
            at = E + self.think[nxt] if self.closed else max(self.rec_arrival[nxt], E)
            self.store.next_time[c] = at
            self.loop.push(at, 2, self.arrive, (nxt,))
        else:
            self.store.next_time[c] = INF
        self.store.finished(j)

    # --- trace ----------------------------------------------------------------------------
    def gpu_state(self, t: int, batch: int) -> None:
        """Counters at an iteration boundary; a point only where a value changed."""
        if self.tb is not None:
            g, st = self.batcher, self.store
            now = (batch, len(g.waiting), (g.tok_run + g.cached_tok) * g.kv, st.dram_used, st.ssd_used)
            if now != self._last:
                self.tb.counter_row(self.counters, t, now)
                self._last = now

    def prefill_span(self, S: int, pe: int, jobs: list[int], layer: LayerSchedule | None) -> None:
        if self.tb is None:
            return
        tb, turn1, conv, outcome, kv, lane = self.tb, self.turn1, self.conv, self.batcher.outcome, self.batcher.kv, self.l_gpu
        for j in jobs:
            o, c = outcome[j], conv[j]
            tb.add_instant_facts(lane, S, MARK[o], c, self.keep[j] * kv, U, U, U, c, turn1[j], U, U, U)
            if self.over[j]:
                tb.add_instant_facts(lane, S, rec.OVERFLOW, c, U, U, U, U, c, turn1[j], U, U, U)
        shown = self.detail if self.detail in jobs else jobs[0]
        tb.add_span_facts(lane, S, pe, rec.PREFILL, self.labels.prefill[len(jobs)], shown,
                          U, len(jobs), U, U, conv[jobs[0]], turn1[jobs[0]], U, U, self._load_flow if layer is not None else U)
        if self.detail in jobs:
            self._draw_layers(S, pe, jobs, layer)

    def decode_span(self, t0: int, t1: int, n: int, k: int, ref: int) -> None:
        if self.tb is not None:
            self.tb.add_span(self.l_gpu, t0, t1, rec.DECODE, self.labels.decode[n, k], ref, NO_FACT)

    def load_span(self, t0: int, t1: int, jobs: list[int], dram: int = 0, ssd: int = 0) -> None:
        if self.tb is not None:
            # the load feeds the iteration's prefill (a flow, by the first job's row) and its layers
            self._load_flow, self._load_bytes = jobs[0], dram + ssd
            tb, c = self.tb, self.conv[jobs[0]]
            tb.add_span_facts(self.l_load, t0, t1, rec.LOAD, self.labels.load[len(jobs)], c, int(dram + ssd), len(jobs),
                              rec.T_DRAM if dram else rec.T_SSD, rec.T_HBM, c, self.turn1[jobs[0]], U, U, jobs[0])

    def save_span(self, t0: int, t1: int, j: int) -> None:
        if self.tb is not None:
            c = self.conv[j]
            self.tb.add_span_facts(self.l_save, t0, t1, rec.SAVE, self.labels.save, c,
                                   self.batcher._new_kv(j), U, rec.T_HBM, rec.T_DRAM, c, self.turn1[j], U, U, U)

    def stall_span(self, t0: int, t1: int) -> None:
        if self.tb is not None:
            self.tb.add_span(self.l_gpu, t0, t1, rec.STALL, self.labels.stall, -1, NO_FACT)

    def _draw_layers(self, S: int, pe: int, jobs: list[int], layer: LayerSchedule | None) -> None:
        tb, L, j = cast(TraceBuilder, self.tb), self.L, self.detail  # drawn in a recorded run only
        if layer is None:  # nothing to load: compute only, evenly over the layers
            T0, a, c_layer, k, S_c = S, 0, (pe - S) // L, L, S
        else:  # S_c: when the compute may start (S; after every load without pre-loading)
            T0, a, c_layer, k, S_c = layer
        ls, le, cs, ce = layer_schedule(S_c, T0, a, c_layer, L, k)
        gaps = 0
        who = dict(job=int(self.conv[j]), turn=int(self.prep.wl.turn[j]) + 1)
        for i in range(L):
            flow = self.n + i  # past every turn row's id: layer i's load to layer i
            if a:
                tb.span(self.l_layer_load, int(ls[i]), int(le[i]), "load", f"load layer {i}", ref=i, layer=i,
                        bytes=int(self._load_bytes // L), dst="HBM", flow=flow, **who)
            prev = S if i == 0 else int(ce[i - 1])
            if cs[i] > prev:
                gaps += int(cs[i]) - prev
                tb.span(self.l_layers, prev, int(cs[i]), "stall", f"wait for layer {i}", ref=i, layer=i, **who)
            tb.span(self.l_layers, int(cs[i]), int(ce[i]), "prefill", f"layer {i}", ref=i, layer=i,
                    flow=flow if a else -1, **who)
        o = self.batcher.outcome[j]
        self.detail_info = {"turn_row": j, "conversation": self.prep.wl.names[self.conv[j]],
                            "turn": int(self.prep.wl.turn[j]) + 1, "outcome": OUTCOME[o],
                            "L_hist": int(self.keep[j]), "L_new": int(self.inn[j]), "batch_jobs": len(jobs),
                            "layers_preloaded": min(k, L) if a else 0,
                            "overlap_gaps_ms": gaps / 1e6, "prefill_ms": (pe - S) / 1e6}

    def run(self) -> Run:
        first: list[int] = np.flatnonzero(self.prep.wl.turn == 0).tolist()
        if self.native:
            compiled: Any = self.batcher  # the compiled twin: it runs the loop itself
            compiled.serve(first, [self.rec_arrival[j] for j in first])
        else:
            self.loop.stream([self.rec_arrival[j] for j in first], self.arrive, [(j,) for j in first], priority=2)
            self.loop.run()
        self.store.close()
        return self

    # --- metrics --------------------------------------------------------------------------
    def metrics(self) -> dict[str, Any]:
        g, st = self.batcher, self.store
        out = np.array(g.outcome)
        arr, adm, ft, en = (np.array(x, dtype=np.int64) for x in (self.arrival, g.first_admit, g.first_token, g.end))
        keep = self.prep.keep
        hist_jobs = out != FIRST
        hit = out >= HIT_HBM
        hits, n_hist = int(hit.sum()), int(hist_jobs.sum())
        late = hist_jobs & (arr >= np.median(arr)) if self.n else hist_jobs
        by_tier = {name: int((out == o).sum()) for name, o in (("hbm", HIT_HBM), ("dram", HIT_DRAM), ("ssd", HIT_SSD))}
        dram_hit = out == HIT_DRAM
        ttft, tpot = ttft_ms(arr, ft), tpot_ms(ft, en, self.prep.out)
        wait = (adm - arr) / 1e6
        over = np.array(self.over, dtype=bool) & hist_jobs
        n_over = int(over.sum())
        busy_s, prefill_s = g.busy_ns / 1e9, g.prefill_ns / 1e9
        some = self.n > 0
        m: dict[str, Any] = {
            "jobs": self.n,
            "hit_rate": hits / n_hist if n_hist else None,
            "hit_rate_all_turns": hits / self.n if some else None,
            # Past the warm-up: turns that arrive in the second half of the run (the store is full).
            "hit_rate_second_half": float(hit[late].sum() / late.sum()) if late.any() else None,
            "token_hit_rate": float(keep[hit].sum() / keep[hist_jobs].sum()) if n_hist else None,
            "hbm_hit_share": by_tier["hbm"] / hits if hits else None,
            "dram_hit_share": by_tier["dram"] / hits if hits else None,
            "ssd_hit_share": by_tier["ssd"] / hits if hits else None,
            "mean_ttft_ms": mean(ttft),
            "p99_ttft_ms": percentile(ttft, 99),
            "tpot_ms": mean(tpot),
            "mean_queue_wait_ms": mean(wait),
            "p99_queue_wait_ms": percentile(wait, 99),
            "queue_len_mid": self.queue_mid,
            "queue_len_end": self.queue_end,
            "mean_batch": g.dec_job_iters / g.dec_iters if g.dec_iters else 0.0,
            "max_batch_seen": g.max_seen,
            "preemptions": g.preemptions,
            # open-loop arrivals only (a closed loop releases a turn when the last reply ends):
            # overloaded or not from the nominal arrivals (kvviz/serving/overload.py)
            **(served_load(self.rec_arrival, adm, en) if not self.closed else {}),
            "gpu_busy_s": busy_s,  # wall clock in iterations (= gpu_time_s summed over jobs: economics.py)
            "prefill_gpu_s": prefill_s,
            # Extras: what the headline numbers are made of.
            "hits": hits,
            "jobs_with_history": n_hist,
            "mean_ttft_later_turns_ms": float(ttft[hist_jobs].mean()) if n_hist else None,
            "mean_prefill_ms": float((ft - adm).mean()) / 1e6 if some else None,
            # Figure 19's measure: prefill time (admission to first token) of the DRAM hits.
            "prefill_time_dram_hits_ms": float((ft - adm)[dram_hit].mean()) / 1e6 if dram_hit.any() else None,
            # store.load_if_faster: jobs whose history was on SSD, by what they did with it.
            "ssd_loads": by_tier["ssd"],
            "ssd_recomputes": int((out == RECOMPUTE_FASTER).sum()),
            "save_stall_s": g.save_stall_ns / 1e9,  # store.save = sync: GPU time spent waiting on writes
            "makespan_s": float(en.max()) / 1e9 if some else 0.0,
            "overflow_jobs": n_over,
            "overflow_hit_rate": float(hit[over].mean()) if n_over else None,
            "evictions_to_ssd": st.demoted,
            "sessions_dropped": st.dropped,
            "dropped_while_queued": st.lost_queued,  # its next job already waiting: the queue knew
            "prefetches": st.prefetched,
            "ssd_hits_prefetch_in_flight": st.late_prefetch,
            "ssd_copies_evicted": st.ssd_copies_evicted,  # inclusive: SSD copies of DRAM-resident sessions
            "ssd_write_gb": st.ssd_write_bytes / 1e9,
            "ssd_read_gb": st.ssd_read_bytes / 1e9,
            "ssd_busy_share": st.ssd_busy_ns / float(en.max()) if some and en.max() > 0 else 0.0,
        }
        m.update(economics.work_and_cost(self, m["makespan_s"]))
        return m


def versus(m: dict[str, Any], baseline: dict[str, Any] | None) -> dict[str, Any]:
    """A policy's metrics with its gains over the recompute baseline (when that was run)."""
    m = dict(m)
    if baseline:
        busy, prefill = m["gpu_busy_s"], m["prefill_gpu_s"]
        # The paper's "speedup": end-to-end GPU time of recomputation over this policy's.
        m["speedup_vs_recompute"] = baseline["gpu_busy_s"] / busy if busy else None
        m["prefill_speedup_vs_recompute"] = baseline["prefill_gpu_s"] / prefill if prefill else None
        if baseline["mean_ttft_ms"]:
            m["ttft_reduction_vs_recompute"] = 1 - m["mean_ttft_ms"] / baseline["mean_ttft_ms"]
        economics.versus(m, baseline)
    return m


def round_metrics(m: dict[str, Any]) -> dict[str, Any]:
    """Six significant digits: enough to read, and stable for golden comparisons."""
    def r(v: object) -> object:
        if isinstance(v, float) and math.isfinite(v):
            return float(f"{v:.6g}")
        if isinstance(v, dict):
            return {k: r(x) for k, x in v.items()}
        return v
    return {k: r(v) for k, v in m.items()}
