"""AttentionStore / CachedAttention (seed 003, USENIX ATC 2024): multi-turn KV reuse over
HBM/DRAM/SSD with scheduler-aware prefetch and eviction, layer-wise pre-loading, asynchronous
saving and decoupled truncation.

Every listed policy runs on the identical workload; `metrics.policies.<name>` compares them.
The Trace shows one run only, `trace_policy`'s (default scheduler_aware): five copies of a
52K-turn timeline would quintuple the trace for views that show one design at a time, and
another policy's timeline is one `--set trace_policy=lru` away.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from ...errors import ScenarioError
from ...executor import map_indexed, workers
from ...requests.extent import extent
from ...result import Result
from ...size_guard import Estimate
from .. import Mechanism
from .arrivals import conversation_poisson, interleaved, mean_turns, saturated
from .model import AttentionStoreScenario
from .serving import GPU_LANE, LAYER_LOADS_LANE, LAYERS_LANE, Prepared, Run, round_metrics, versus
from .sizing import sizing
from .workload import load_trace, synthetic
from .workload_figures import workload_figures

# A GPU iteration's span carries one of its jobs' turn row: picking it draws that iteration's layers.
PICK = (GPU_LANE, "serving.detail_job", "draw this job's prefill iteration layer by layer")


def initial_range(result: Result) -> tuple[int, int] | None:
    """Where a view of this run opens (ns): the chosen job's prefill iteration, its layer-wise
    loads and a margin. The whole run is hours long; the mechanism's point is a few hundred ms."""
    tr = result.trace
    row = (result.metrics.get("detail") or {}).get("turn_row")
    if row is None:  # the chosen job never reached its prefill
        return None
    wanted = {LAYERS_LANE.format(row), LAYER_LOADS_LANE.format(row)}
    lanes = [i for i, name in enumerate(tr.lanes["name"].tolist()) if name in wanted]
    layers = tr.spans[np.isin(tr.spans["lane"], lanes)]
    if not len(layers):
        return None
    t0, t1 = int(layers["start"].min()), int(layers["end"].max())
    pad = max((t1 - t0) // 2, 1_000_000)
    return max(0, t0 - pad), t1 + pad


# what only the synthetic generator reads (workload.synthetic): a trace file sets them itself
GENERATOR_FIELDS = ("conversations", "multi_turn_share", "mean_turns_multi", "max_turns", "input_tokens_mean",
                    "output_tokens_mean", "tokens_sigma", "max_turn_tokens", "think_time_mean_s")


def inactive(data: dict) -> dict[str, str]:
    out = {}
    w = data.get("workload")
    if isinstance(w, dict) and isinstance(w.get("trace_file"), str) and w["trace_file"]:
        out = {f"workload.{f}": "not used: workload.trace_file gives the workload" for f in GENERATOR_FIELDS}

    def get(section, field, default):
        d = data.get(section)
        return d.get(field, default) if isinstance(d, dict) else default

    rule = get("serving", "arrivals", "closed_loop")
    if rule != "conversation_poisson":
        for f in ("think_time_median_s", "think_time_sigma"):
            out[f"workload.{f}"] = "not used: only serving.arrivals = conversation_poisson draws these gaps"
        out["store.lookahead_horizon_s"] = "not used: only serving.arrivals = conversation_poisson bounds the job list"
    elif get("store", "lookahead", "waiting_queue") != "job_list":
        out["store.lookahead_horizon_s"] = "not used: store.lookahead = waiting_queue lists only arrived jobs"
    if rule == "saturated":
        out["workload.arrival_rate_per_s"] = "not used: serving.arrivals = saturated releases turns as replies end"
    s = data.get("store")
    if isinstance(s, dict) and s.get("preload") == "none":
        out["hardware.read_buffer_gb"] = "not used: store.preload = none (nothing pre-loads)"
    if isinstance(s, dict) and s.get("save") == "sync":
        out["hardware.write_buffer_gb"] = "not used: store.save = sync (every save ends before the blocks go)"
    return out


# Above this many turns a run is refused up front (each turn costs a few µs per policy).
MAX_TURNS = 3_000_000
# measured (see the README's size limits): 20,000 conversations (116,000 turns): 2.9 kB per turn
# for one policy's run, 0.55 kB more per further run; 12-55 µs per turn and run (more with a
# deeper queue)
BYTES_PER_TURN, BYTES_PER_TURN_RUN, SECONDS_PER_TURN_RUN = 2_600, 600, 30e-6
# From this many turns the independent runs (one per policy, and the truncation run) go to a
# process pool over the machine's cores; smaller ones are not worth starting processes for.
PARALLEL_TURNS = 10_000


def _one(task):
    """One run: (its metrics, its trace if recorded, the drawn job's details, events)."""
    sc, prep, policy, mode, record = task
    run = Run(sc, prep, policy, mode, record).run()
    return run.metrics(), (run.tb.build() if record else None), run.detail_info, run.loop.processed


def _cost(task) -> float:
    """Relative run time, to start the longest runs first (the recorded one builds the trace;
    look-ahead policies prefetch)."""
    _, _, policy, _, record = task
    return (1.6 if record else 1.0) * (1.3 if policy in ("scheduler_aware", "belady") else
                                       0.7 if policy == "recompute" else 1.0)


def run_all(tasks: list) -> list:
    """The runs in order; in parallel (kvviz.executor) when the workload is large, the longest
    first so the workers finish together. Each run is a pure function of its task, so the
    results are the same either way."""
    n = min(workers(), len(tasks))
    if len(tasks[0][1].wl) < PARALLEL_TURNS:
        n = 1
    order = sorted(range(len(tasks)), key=lambda i: -_cost(tasks[i])) if n > 1 else list(range(len(tasks)))
    outs = map_indexed(_one, [tasks[i] for i in order], n_workers=n)
    result = [None] * len(tasks)
    for k, i in enumerate(order):
        result[i] = outs[k]
    return result


def _expected_turns(w) -> float:
    """Turns the synthetic generator makes, on average."""
    return w.conversations * (1 + w.multi_turn_share * (w.mean_turns_multi - 1))


# Reading a trace file: measured on a 15 MB Mooncake JSONL (40,000 requests: 116 MB, 2.1 s) and
# a 2.4 MB conversation-log CSV (100,000 turns: 35 MB, 0.9 s): 7.7 and 15 B of peak memory per
# byte of file; taken as 16 B and 60 µs per line (ours). The whole 40,000-turn run of the bundled
# Mooncake scenario, five policies, measured 164 MB against the 224 MB the per-turn figures give.
BYTES_PER_TRACE_BYTE, SECONDS_PER_TRACE_LINE = 16, 60e-6


def estimate(sc: AttentionStoreScenario) -> Estimate | None:
    w = sc.workload
    runs = len(sc.policies) + (1 if sc.serving.compare_truncation else 0)
    if w.trace_file:  # turns: the file's lines, counted in its first MiB and scaled by its size
        ext = extent(w.trace_file)
        turns, parse = ext.lines, ext.bytes * BYTES_PER_TRACE_BYTE
        return Estimate(max(parse, turns * (BYTES_PER_TURN + BYTES_PER_TURN_RUN * runs)),
                        turns * (runs * SECONDS_PER_TURN_RUN + SECONDS_PER_TRACE_LINE), "workload.trace_file")
    turns = _expected_turns(w)
    return Estimate(turns * (BYTES_PER_TURN + BYTES_PER_TURN_RUN * runs), turns * runs * SECONDS_PER_TURN_RUN,
                    "workload.conversations")


def workload_of(sc: AttentionStoreScenario):
    w = sc.workload
    if w.trace_file:
        wl = load_trace(Path(w.trace_file))
    else:
        est = _expected_turns(w)
        if est > MAX_TURNS:
            raise ScenarioError(f"too large to simulate: about {est:,.0f} turns (limit {MAX_TURNS:,}); "
                                f"reduce workload.conversations", field="workload.conversations")
        wl = synthetic(w)
    rule = sc.serving.arrivals
    if rule == "interleaved":
        wl = interleaved(wl, w.arrival_rate_per_s, w.seed)
    elif rule == "saturated":
        wl = saturated(wl)
    elif rule == "conversation_poisson":
        wl = conversation_poisson(wl, w.arrival_rate_per_s, w.think_time_median_s, w.think_time_sigma, w.seed)
    return wl


def gpu_setup(sc: AttentionStoreScenario) -> dict:
    """The GPU group and host links the run used (metrics.gpu): free HBM as used, and as the
    preset and hardware compute it (they differ only when hardware.hbm_free_gb is given)."""
    m, h = sc.model, sc.hardware
    return {"gpus": h.gpus, "hbm_gb_per_gpu": h.hbm_gb_per_gpu, "weights_gb": m.weights_gb,
            "hbm_reserve_gb_per_gpu": h.hbm_reserve_gb_per_gpu,
            "hbm_free_gb": h.hbm_free_gb, "hbm_free_computed_gb": h.free_hbm_computed_gb(m), "mfu": h.mfu,
            "host_link_gbps": h.host_link_gbps, "host_links": h.host_links, "host_bw_gbps": h.host_bw_gbps}


def release_metrics(sc: AttentionStoreScenario, wl) -> dict:
    """How turns were released: the rule, and for conversation_poisson the rates it used."""
    out = {"rule": sc.serving.arrivals}
    if sc.serving.arrivals == "conversation_poisson":
        mt = mean_turns(wl)
        out.update(turns_per_s=sc.workload.arrival_rate_per_s, mean_turns_per_conversation=mt,
                   conversation_starts_per_s=sc.workload.arrival_rate_per_s / mt)
    return out


def simulate(sc: AttentionStoreScenario) -> Result:
    wl = workload_of(sc)
    if len(wl) > MAX_TURNS:
        raise ScenarioError(f"too large to simulate: {len(wl):,} turns (limit {MAX_TURNS:,})",
                            field="workload.trace_file")
    if sc.serving.detail_job >= len(wl):
        raise ScenarioError(f"turn {sc.serving.detail_job} does not exist (the workload has {len(wl)} turns, "
                            f"0..{len(wl) - 1})", field="serving.detail_job")
    prep = Prepared(sc, wl)
    mode = sc.serving.truncation
    other = "coupled" if mode == "decoupled" else "decoupled"
    tasks = [(sc, prep, name, mode, name == sc.trace_policy) for name in sc.policies]
    if sc.serving.compare_truncation:
        tasks.append((sc, prep, sc.trace_policy, other, False))
    with ThreadPoolExecutor(1) as side:  # the workload's own figures while the runs go (the parent waits)
        figures = side.submit(workload_figures, prep, mode == "coupled")
        outs = run_all(tasks)
        workload = figures.result()
    events = sum(o[3] for o in outs)
    raw = {t[2]: o[0] for t, o in zip(tasks, outs) if t[3] == mode}
    baseline = raw.get("recompute")
    per_policy = {name: versus(raw[name], baseline) for name in sc.policies}
    trace, detail = next((o[1], o[2]) for t, o in zip(tasks, outs) if t[4])

    def trunc_summary(m):
        return {k: m[k] for k in ("hit_rate", "overflow_jobs", "overflow_hit_rate", "prefill_gpu_s", "mean_ttft_ms")}

    truncation = {mode: trunc_summary(per_policy[sc.trace_policy])}
    if sc.serving.compare_truncation:
        truncation[other] = trunc_summary(outs[-1][0])

    h, g = sc.hardware, prep.gpu
    first = int((wl.turn == 0).sum())
    metrics = {
        "trace_policy": sc.trace_policy,
        "truncation_mode": mode,
        "conversations": wl.n_conv,
        "turns": len(wl),
        "multi_turn_share": float((wl.turn == 1).sum() / first) if first else 0.0,
        "overflow_turn_share": float(prep.overflow.mean()) if len(wl) else 0.0,
        "arrivals": release_metrics(sc, wl),
        "policies": {p: per_policy[p] for p in sc.policies},
        "workload": workload,
        "gpu": {
            **gpu_setup(sc),
            "prefill_ms_per_1k_tokens": g.prefill_ns(1000) / 1e6,
            "decode_step_ms_1_job_1k_ctx": g.decode_step_ns(1, 1000) / 1e6,
            "decode_step_ms_32_jobs_32k_ctx": g.decode_step_ns(32, 32_000) / 1e6,
        },
        "formulas": {
            "L_pw": prep.L_pw,
            "L_ew": prep.L_ew,
            "S_kv_bytes": prep.S_kv,
            # Eq. 4 for the chosen turn; 0 means perfect overlap needs no read buffer.
            "S_buf_bytes": max(0.0, prep.S_buf_raw),
            "S_buf_turn": prep.detail,
            "CCpS_bytes": prep.CCpS,
            "DSpUT_per_s": prep.DSpUT,
            "CCpUT_bytes_per_s": prep.DSpUT * prep.CCpS,
            "read_buffer_bytes": int(h.read_buffer_gb * 1e9),
        },
        "truncation": truncation,
        "sizing": sizing(sc, g),  # the paper's §2.4 figures, as this model gives them
        "detail": detail,
    }
    return Result(scenario=sc, trace=trace, metrics=round_metrics(metrics), events=events)


MECHANISM = Mechanism("attention_store", AttentionStoreScenario, simulate, estimate, pick=PICK,
                      initial_range=initial_range, inactive=inactive, analyses=("policies",))
