"""The timed engine (`serving.timing = true`): the serving core's continuous-batching engine and
roofline (kvviz/serving: batching.py, roofline.py, event_loop.py), the ones AttentionStore serves
with, serve the requests, unchanged; the block store (timed_store.py) answers the engine's
questions through their seam (kv_source.py), and the tier links (links.py, under `links.rule`)
time the block transfers.

A request arrives at its trace time and waits in the queue (first come, first served); when
admitted, its hit (the longest prefix resident in some tier) is attended, not recomputed: the
prefill computes only the other prompt tokens, over the hit as history, while the hit blocks
below HBM load layer by layer. With `store.load_if_faster` (the default) the tail of the hit is
recomputed instead where that ends the prefill sooner (timed_store.py says the rule). Decode emits its output tokens. ASSUMPTION, ours: a request
whose whole prompt hits computes nothing but waits for its loads.

Each policy (and with `store.prefetch`, each policy again with prefetch) is one run on the
identical workload; the Trace shows `trace_policy`'s run without prefetch.
"""
from __future__ import annotations

from typing import Any, cast

import numpy as np

from ...gc_pause import gc_paused
from ...result import Result
from ...serving.batching import BatchConfig, Batcher
from ...serving.event_loop import Loop
from ...serving.kv_source import LayerSchedule
from ...serving.overload import overload_note, served_load
from ...serving.pool_fit import refuse_unservable
from ...serving.request_metrics import mean, percentile, tpot_ms, ttft_ms
from ...serving.roofline import Roofline
from ...trace import Trace, TraceBuilder
from .engine import Prepared, ceiling
from .metrics import run_metrics, tier_setup
from .model import PrefixCacheScenario
from .timed_store import BlockStore
from .workload import Blocks

# a run by name: (each tier's eviction, prefetch)
Runs = dict[str, tuple[list[str], bool]]

GPU_LANE = "GPU · prefill + decode iterations"
COUNTER_EVERY = 1  # an occupancy point per admission and completion (the counters thin below)
MAX_COUNTER_POINTS = 20_000


class Run:
    """One timed run: the batcher's `run` (the attributes and calls batching.py reads)."""

    def __init__(self, sc: PrefixCacheScenario, blocks: Blocks, prep: Prepared, caps: list[int], evictions: list[str],
                 prefetch: bool, record: bool) -> None:
        n = len(blocks)
        self.n = n
        self.loop = Loop()
        self.tb = tb = TraceBuilder(item_name="request") if record else None
        self.conv = list(range(n))
        self.inn = blocks.input_tokens.tolist()
        self.keep = [0] * n  # the store sets a request's hit tokens at admission (inn: the rest)
        out = blocks.output_tokens if blocks.output_tokens is not None else np.ones(n, dtype=np.int64)
        self.out = np.maximum(out, 1).tolist()
        self.over, self.coupled, self.after = [False] * n, False, [0] * n
        self.arrival = [0] * n
        self.times = np.rint(blocks.times_s * 1e9).astype(np.int64).tolist()
        names = [t.name for t in sc.tiers]
        if tb is not None:
            self.l_gpu = tb.lane(GPU_LANE, "GPU")
            # link_lanes[k]: tier k's link's lane; HBM (k = 0) has no link: None, never read
            self.link_lanes = cast("list[int]", [None]) + [tb.lane(f"link {nm}↔hbm · block transfers", "links")
                                                           for nm in names[1:]]
            self.points: list[tuple[int, ...]] = []
        bb = blocks.block_tokens * sc.model.kv_bytes_per_token
        m, s = sc.model, sc.serving
        gpu = Roofline(m.params_b * 1e9, s.gpus, s.gpu_peak_tflops, s.mfu, s.hbm_tbps, s.hbm_efficiency,
                       m.kv_bytes_per_token, m.layers, m.d_model)
        self.gpu = gpu  # before the store: its load-or-recompute rule prices recomputing with it
        self.store = BlockStore(self, sc, prep, caps, evictions, prefetch, bb)
        cfg = BatchConfig(gpu=gpu, kv=m.kv_bytes_per_token, layers=m.layers, max_batch=s.max_batch,
                          cap_tok=int(s.running_kv_gb * 1e9) // m.kv_bytes_per_token, save_gbps=1.0,
                          write_buffer=0.0, sync_save=False, hbm_cache=False,
                          resume_from_cache=s.resume_from_cache)
        self.batcher = Batcher(self, cfg)
        self.bb, self.names = bb, names

    # --- the batcher's calls ------------------------------------------------------------------
    def arrive(self, j: int) -> None:
        self.arrival[j] = self.loop.now
        self.store.arrived(j)
        self.batcher.arrive(j)

    def job_done(self, j: int) -> None:
        self.store.finished(j)
        self._occupancy()

    def gpu_state(self, t: int, batch: int) -> None:
        pass

    def save_span(self, s0: int, s1: int, j: int) -> None:
        pass  # never asked: the store saves nothing through the batcher (BlockStore.stores)

    def stall_span(self, t0: int, t1: int) -> None:
        pass  # never asked: saving is not synchronous (BatchConfig.sync_save)

    def prefill_span(self, S: int, pe: int, jobs: list[int], layer: LayerSchedule | None) -> None:
        if self.tb is not None:
            tb, hits = self.tb, self.store.hits
            for j in jobs:
                tb.instant(self.l_gpu, S, "hit" if hits[j] else "miss", j, job=j, items=hits[j],
                           bytes=hits[j] * self.bb)
            what = f"prefill · {len(jobs)} request{'s' * (len(jobs) > 1)}"
            loaded = self.store.loads_in
            if loaded is not None and loaded[0] == S and S < loaded[1] <= pe:
                # split where the iteration's last load is in: the layers after it use every block
                # loaded, so the loads' flows end there (pointing forward, as Perfetto draws them);
                # an iteration that computes nothing ends as its loads do (the second part is empty)
                tb.span(self.l_gpu, S, loaded[1], "prefill", f"{what} · while its loads stream in",
                        ref=jobs[0], job=jobs[0], items=len(jobs))
                tb.span(self.l_gpu, loaded[1], pe, "prefill", f"{what} · its loads in", ref=jobs[0],
                        job=jobs[0], items=len(jobs), flow=loaded[2])
            else:
                tb.span(self.l_gpu, S, pe, "prefill", what, ref=jobs[0], job=jobs[0], items=len(jobs))
            self._occupancy()

    def decode_span(self, t0: int, t1: int, n: int, k: int, ref: int) -> None:
        if self.tb is not None:
            self.tb.span(self.l_gpu, t0, t1, "decode", f"decode · {n} request{'s' * (n > 1)} × {k} iterations",
                         ref=ref)

    def _occupancy(self) -> None:
        if self.tb is not None:
            self.points.append((self.loop.now, *self.store.size))

    # --- the run ------------------------------------------------------------------------------
    def run(self) -> Run:
        # as the cluster's run: many short-lived objects and no cycles, so a full collection they set
        # off mid-run would only walk every object of the process
        with gc_paused():
            self.loop.stream(self.times, self.arrive, [(j,) for j in range(self.n)], priority=2)
            self.loop.run()
            self.store.close()
        return self

    def metrics(self, blocks: Blocks, ref_rate: float) -> dict[str, Any]:
        st, g = self.store, self.batcher
        m = run_metrics(st.outcome(), self.names, blocks, self.bb, ref_rate)
        arr, ft, en = (np.array(x, dtype=np.int64) for x in (self.arrival, g.first_token, g.end))
        out = np.array(self.out)
        ttft, tpot = ttft_ms(arr, ft), tpot_ms(ft, en, out)
        span_ns = int(en.max() - arr.min()) if self.n else 0
        hit_tok = np.array(st.hit_tokens, dtype=np.float64)
        upper = [k for k, nm in enumerate(self.names) if nm in ("hbm", "cxl", "dram")]
        for k, nm in enumerate(self.names):  # store.load_if_faster: hit blocks recomputed, not used
            m["tiers"][nm]["recomputed_hit_blocks"] = st.recomputed_blocks[k]
            m["tiers"][nm]["recomputed_hit_tokens"] = st.recomputed_tokens[k]
        m["prefill_tokens_saved"] -= sum(st.recomputed_tokens)
        m.update({
            "ttft_p50_ms": percentile(ttft, 50),
            "ttft_p99_ms": percentile(ttft, 99),
            "mean_ttft_ms": mean(ttft),
            "tpot_ms": mean(tpot),
            "makespan_s": span_ns / 1e9,
            "throughput_requests_per_s": self.n / (span_ns / 1e9) if span_ns else None,
            "throughput_tokens_per_s": float(out.sum()) / (span_ns / 1e9) if span_ns else None,
            "prefill_tokens_computed": g.prefill_tokens,
            "load_wait_s": g.load_wait_ns / 1e9,
            "gpu_busy_s": g.busy_ns / 1e9,
            "preemptions": g.preemptions,
            **served_load(arr, g.first_admit, en),  # overloaded or not, and the rates (overload.py)
            # the share of hit tokens served from HBM, CXL or DRAM (what prefetch raises)
            "dram_or_above_hit_share": float(hit_tok[upper].sum() / hit_tok.sum()) if hit_tok.sum() else 0.0,
            "prefetched_blocks": st.prefetched_blocks,
            # hit blocks whose prefetch had not landed when their request was admitted (the load waited)
            "prefetch_late_blocks": st.late_blocks,
            # demand_first: hit blocks whose prefetch had not started at admission (loaded from their
            # source tier instead, and counted as its hits)
            "prefetch_cancelled_blocks": st.cancelled,
            # store.load_if_faster: hit blocks recomputed because that ended their prefill sooner
            "recomputed_hit_blocks": sum(st.recomputed_blocks),
            "recomputed_hit_tokens": sum(st.recomputed_tokens),
            "links": {lk.name: {"bytes": lk.bytes, "busy_s": lk.busy_ns / 1e9,
                                "utilisation": lk.busy_ns / span_ns if span_ns else 0.0}
                      for lk in st.links[1:]},
        })
        return m

    def trace(self) -> Trace:
        tb = self.tb
        assert tb is not None  # the recorded run's (record=True)
        pts = self.points
        if len(pts) > MAX_COUNTER_POINTS:
            pts = [pts[i] for i in np.linspace(0, len(pts) - 1, MAX_COUNTER_POINTS).astype(np.int64)]
        for k, nm in enumerate(self.names):
            for p in pts:
                tb.counter(f"{nm} occupancy", p[0], p[1 + k] * self.bb / 1e9, "GB")
        return tb.build()


def simulate_timed(sc: PrefixCacheScenario, blocks: Blocks, prep: Prepared, caps: list[int], runs: Runs) \
        -> tuple[dict[str, dict[str, Any]], Trace | None, int, float | None, list[str]]:
    """Every run (name -> (evictions, prefetch)); the shown policy's run records the trace.

    belady_gap: the token hit rate of Belady on every tier, timed, without prefetch (the `belady`
    run if listed, else one more run) − the run's. ASSUMPTION, ours: the reference is served in
    time like the others, so its admission order is its own (its hits change its timing);
    Belady is then the clairvoyant evictor for that order, not a bound on every schedule."""
    shown = sc.shown_policy
    metrics: dict[str, dict[str, Any]] = {}
    trace: Trace | None = None
    events = 0
    notes: dict[str, None] = {}  # why a run's block cache is the Python one (the compiled twin could not run), once each
    reference = ["belady"] * len(caps)
    ref_name = next((n for n, (ev, pf) in runs.items() if ev == reference and not pf), None)
    total = int(blocks.input_tokens.sum())
    ref_rate: float | None
    if ref_name is None:
        ref = Run(sc, blocks, prep, caps, reference, False, record=False).run()
        events += ref.loop.processed
        if ref.store.engine_note:
            notes.setdefault(ref.store.engine_note, None)
        ref_rate = sum(ref.store.hit_tokens) / total if total else 0.0
    else:  # its own run is the reference: run it first
        runs = {ref_name: runs[ref_name], **runs}
        ref_rate = None
    for name, (evictions, prefetch) in runs.items():
        r = Run(sc, blocks, prep, caps, evictions, prefetch, record=(name == shown)).run()
        if r.store.engine_note:
            notes.setdefault(r.store.engine_note, None)
        if ref_rate is None:
            ref_rate = sum(r.store.hit_tokens) / total if total else 0.0
        metrics[name] = r.metrics(blocks, ref_rate)
        events += r.loop.processed
        if name == shown:
            trace = r.trace()
    return metrics, trace, events, ref_rate, list(notes)


def check_every_request_fits(sc: PrefixCacheScenario, blocks: Blocks) -> None:
    """Refuse a workload with a request serving.running_kv_gb can never hold
    (kvviz.serving.pool_fit: it would wait forever, its TTFT negative)."""
    kv = sc.model.kv_bytes_per_token
    refuse_unservable(blocks.input_tokens, blocks.output_tokens, int(sc.serving.running_kv_gb * 1e9) // kv, kv,
                      blocks.source, f"{sc.serving.running_kv_gb:g} GB", "serving.running_kv_gb")


def timed_result(sc: PrefixCacheScenario, blocks: Blocks, prep: Prepared, caps: list[int],
                 runs: dict[str, list[str]]) -> Result:
    """The timed runs' Result: the untimed result's workload and tier facts, per-run metrics."""
    check_every_request_fits(sc, blocks)
    named: Runs = {p: (ev, False) for p, ev in runs.items()}
    if sc.store.prefetch:
        named.update({f"{p}_prefetch": (ev, True) for p, ev in runs.items()})
    policies, trace, events, ref_rate, notes = simulate_timed(sc, blocks, prep, caps, named)
    assert trace is not None  # the shown policy's run records it (trace_policy is one of the policies: checked)
    policies = {n: policies[n] for n in named}  # in the scenario's order (the reference may run first)
    kv = sc.model.kv_bytes_per_token
    bb = blocks.block_tokens * kv
    total = int(blocks.input_tokens.sum())
    hb, ht, hr = ceiling(prep)
    R = len(blocks)
    metrics: dict[str, Any] = {
        "trace_policy": sc.shown_policy,
        "link_rule": sc.links.rule,
        "workload": {"source": blocks.source, "requests": R, "block_lookups": len(blocks.ids),
                     "unique_blocks": int(len(np.unique(blocks.ids))), "input_tokens": total,
                     "output_tokens": int(np.sum(blocks.output_tokens)) if blocks.output_tokens is not None else R,
                     "block_tokens": blocks.block_tokens, "kv_bytes_per_token": kv, "block_bytes": bb},
        "tiers": tier_setup(sc.tiers, caps, bb),
        "hit_rate_ceiling": ht / total if total else 0.0,
        "block_hit_ceiling": hb / len(blocks.ids) if len(blocks.ids) else 0.0,
        "request_hit_ceiling": hr / R if R else 0.0,
        "belady_token_hit_rate": ref_rate,  # Belady on every tier, timed, without prefetch
        "policies": policies,
    }
    if note := overload_note(policies):
        metrics["overload"] = note
    if notes:  # a run whose block cache fell back to the Python one says why (absent when none did)
        metrics["notes"] = notes
    return Result(scenario=sc, trace=trace, metrics=metrics, events=events)
