"""An AttentionStore run as independent parts (kvviz.runs): the workload's own figures, one run
per listed policy (the `trace_policy` one recorded as the Trace), and the truncation run; and
the step that combines them into the Result, also from some of them (a partial result).

Each part is keyed by the scenario's fields it reads. What a part does NOT read is declared
below, field by field; a field not listed is read by every part (so an omission costs a re-run,
never a stale result). tests/test_run_parts.py holds each declaration to the simulation: a
field declared unread, changed, leaves that part's output unchanged.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...errors import ScenarioError
from ...result import Result
from ...runs import Part, Plan, key_of
from ...serving.arrivals import mean_turns
from ...serving.overload import overload_note
from .costs import DISPATCH_S_PER_TURN, s_per_turn, workload_s_per_turn
from .model import AttentionStoreScenario
from .serving import Prepared, Run, round_metrics, versus
from .sizing import sizing
from .workload import MAX_TURNS, workload_of
from .workload_figures import workload_figures

# A part's output: the workload part's figures (a dict), or a run's (metrics, its trace if recorded, the
# drawn job's details, events): which one, the part's name says, so the plan's type cannot
Output = Any

# Fields that say which parts exist rather than what one computes: each run's key names its own
# policy, truncation mode and whether it records the trace instead.
PLAN_FIELDS = ("policies", "trace_policy", "serving.compare_truncation", "serving.truncation")
# Read only by the recorded run (which prefill iteration it draws layer by layer) and by the
# combine step (the formulas' S_buf turn), never by a run that records no trace.
RECORDED_ONLY = ("serving.detail_job",)
# What the simulation of a policy's run reads and the workload's figures do not: the engine's
# and the store's behaviour, and the prices of the cost metrics.
RUN_ONLY = ("serving.max_batch", "store.lookahead", "store.ssd_read_priority", "store.save", "store.preload",
            "store.load_if_faster", "store.ssd_inclusive", "store.lookahead_horizon_s", "hardware.ssds", "hardware.ssd_read_gbps", "hardware.ssd_write_gbps", "hardware.write_buffer_gb",
            "cost")
# Per policy: fields its runs never read. The look-ahead list feeds only prefetching policies'
# choices; a policy that stores nothing (recompute) reads neither the SSD nor the store's rules
# nor the prices of storage.
NOT_READ_BY = {
    "recompute": ("store.lookahead", "store.lookahead_horizon_s", "store.ssd_read_priority", "store.load_if_faster",
                  "store.ssd_inclusive", "hardware.ssds", "hardware.ssd_read_gbps", "hardware.ssd_write_gbps",
                  "hardware.dram_gb", "hardware.ssd_gb", "cost.dram_usd_per_gb_hour", "cost.ssd_usd_per_gb_hour"),
    "lru": ("store.lookahead", "store.lookahead_horizon_s"),
    "fifo": ("store.lookahead", "store.lookahead_horizon_s"),
}

TRUNCATION = "truncation"  # the name of the part that runs trace_policy with the other mode
ENGINE_NOTE = "engine_note"  # a run's metric that says why the Python engine ran it (absent when none did)


def _other(mode: str) -> str:
    return "coupled" if mode == "decoupled" else "decoupled"


def unread(sc: AttentionStoreScenario, name: str) -> tuple[str, ...]:
    """The fields (dotted paths; a section stands for all its fields) part `name` never reads."""
    if name == "workload":
        return (*PLAN_FIELDS[:3], *RECORDED_ONLY, *RUN_ONLY)
    policy, _, record = _runs(sc)[name]
    return _run_unread(policy, record)


def _run_unread(policy: str, record: bool) -> tuple[str, ...]:
    return (*PLAN_FIELDS, *NOT_READ_BY.get(policy, ()), *(() if record else RECORDED_ONLY))


def _run_key(sc: AttentionStoreScenario, policy: str, mode: str, record: bool) -> str:
    """The key of one policy's run: what it reads, its policy, mode and recording."""
    return key_of(sc, _run_unread(policy, record), part="run", policy=policy, mode=mode, record=record)


def _runs(sc: AttentionStoreScenario) -> dict[str, tuple[str, str, bool]]:
    """Part name -> (policy, truncation mode, records the trace)."""
    mode = sc.serving.truncation
    out: dict[str, tuple[str, str, bool]] = {p: (p, mode, p == sc.trace_policy) for p in sc.policies}
    if sc.serving.compare_truncation:
        out[TRUNCATION] = (sc.trace_policy, _other(mode), False)
    return out


def parts_of(sc: AttentionStoreScenario, keyed: bool = True) -> list[Part]:
    """The plan's parts (each one's cost: its seconds per turn); without their keys (hashing the
    inputs) when `keyed` is False."""
    parts = [Part("workload", key_of(sc, unread(sc, "workload"), part="workload") if keyed else "",
                  cost=workload_s_per_turn(), needed=True)]
    for name, (policy, mode, record) in _runs(sc).items():
        parts.append(Part(name, _run_key(sc, policy, mode, record) if keyed else "", cost=s_per_turn(policy, record),
                          needed=record, also=_run_key(sc, policy, mode, False) if record and keyed else ""))
    return parts


def plan(sc: AttentionStoreScenario) -> Plan[AttentionStoreScenario, Prepared, Output]:
    parts = parts_of(sc)
    return Plan(tuple(parts), prepare, run_part, combine, scale=lambda prep: len(prep.wl),
                dispatch=DISPATCH_S_PER_TURN,
                strip=lambda out: (out[0], None, {}, out[3]))


def prepare(sc: AttentionStoreScenario) -> Prepared:
    wl = workload_of(sc)
    if len(wl) > MAX_TURNS:
        raise ScenarioError(f"too large to simulate: {len(wl):,} turns (limit {MAX_TURNS:,})",
                            field="workload.trace_file")
    if sc.serving.detail_job >= len(wl):
        raise ScenarioError(f"turn {sc.serving.detail_job} does not exist (the workload has {len(wl)} turns, "
                            f"0..{len(wl) - 1})", field="serving.detail_job")
    return Prepared(sc, wl)


def run_part(sc: AttentionStoreScenario, prep: Prepared, name: str, engine: str = "auto") -> Output:
    """One part's output. A run: (its metrics, its trace if recorded, the drawn job's details,
    events), by `engine` (serving._engine_for; kvviz.calibration's probe asks for the reference).
    The workload: the figures and formulas that come before any policy."""
    if name == "workload":
        return _workload(sc, prep)
    policy, mode, record = _runs(sc)[name]
    run = Run(sc, prep, policy, mode, record, engine).run()
    m = run.metrics()
    if run.engine_note:  # the run fell back to the Python engine: combine says why in metrics["notes"]
        m[ENGINE_NOTE] = run.engine_note
    return m, (run.tb.build() if run.tb is not None else None), run.detail_info, run.loop.processed


def gpu_setup(sc: AttentionStoreScenario) -> dict[str, Any]:
    """The GPU group and host links the run used (metrics.gpu): free HBM as used, and as the
    preset and hardware compute it (they differ only when hardware.hbm_free_gb is given)."""
    m, h = sc.model, sc.hardware
    return {"gpus": h.gpus, "hbm_gb_per_gpu": h.hbm_gb_per_gpu, "weights_gb": m.weights_gb,
            "hbm_reserve_gb_per_gpu": h.hbm_reserve_gb_per_gpu,
            "hbm_free_gb": h.hbm_free_gb, "hbm_free_computed_gb": h.free_hbm_computed_gb(m), "mfu": h.mfu,
            "host_link_gbps": h.host_link_gbps, "host_links": h.host_links, "host_bw_gbps": h.host_bw_gbps}


def _workload(sc: AttentionStoreScenario, prep: Prepared) -> dict[str, Any]:
    wl, g = prep.wl, prep.gpu
    first = int((wl.turn == 0).sum())
    arrivals: dict[str, str | float] = {"rule": sc.serving.arrivals}
    if sc.serving.arrivals == "conversation_poisson":
        mt = mean_turns(wl)
        arrivals.update(turns_per_s=sc.workload.arrival_rate_per_s, mean_turns_per_conversation=mt,
                        conversation_starts_per_s=sc.workload.arrival_rate_per_s / mt)
    # Eq. 4 per turn, so the combine step takes the chosen turn's (serving.detail_job is not read here)
    h = sc.hardware
    sbuf = prep.keep * prep.kv - h.host_bw_gbps * g.prefill_ns(prep.inn, prep.keep)
    cand = np.where(prep.keep > 0, sbuf, -np.inf)
    return {
        "conversations": wl.n_conv,
        "turns": len(wl),
        "multi_turn_share": float((wl.turn == 1).sum() / first) if first else 0.0,
        "overflow_turn_share": float(prep.overflow.mean()) if len(wl) else 0.0,
        # The share of conversations (sessions) of which some turn overflows the context window
        # (model.context_window; a turn's capped input + reply on top of its kept history), the
        # paper's §2.4 "47% (OPT, 2K) / 30% (LLaMA-2, 4K) of sessions overflow". Closed form on the
        # generated workload's token counts and the window: a property of the input, not of serving.
        "overflow_session_share": (float(np.unique(wl.conv[prep.overflow]).size / np.unique(wl.conv).size)
                                   if len(wl) else 0.0),
        "arrivals": arrivals,
        "workload": workload_figures(prep, sc.serving.truncation == "coupled"),
        "gpu": {
            **gpu_setup(sc),
            "prefill_ms_per_1k_tokens": g.prefill_ns(1000) / 1e6,
            "decode_step_ms_1_job_1k_ctx": g.decode_step_ns(1, 1000) / 1e6,
            "decode_step_ms_32_jobs_32k_ctx": g.decode_step_ns(32, 32_000) / 1e6,
        },
        "formulas": {"L_pw": prep.L_pw, "L_ew": prep.L_ew, "S_kv_bytes": prep.S_kv, "CCpS_bytes": prep.CCpS,
                     "DSpUT_per_s": prep.DSpUT},
        "sbuf": sbuf.astype(np.float64),
        "detail_default": int(np.argmax(cand)) if len(wl) else 0,
        "sizing": sizing(sc, g),  # the paper's §2.4 figures, as this model gives them
    }


def _trunc_summary(m: dict[str, Any]) -> dict[str, Any]:
    return {k: m[k] for k in ("hit_rate", "overflow_jobs", "overflow_hit_rate", "prefill_gpu_s", "mean_ttft_ms")}


def combine(sc: AttentionStoreScenario, outputs: dict[str, Output]) -> Result | None:
    """The Result of the parts in `outputs`: every listed policy that has run (in the scenario's
    order); None until the workload and the recorded run are in."""
    w, traced = outputs.get("workload"), outputs.get(sc.trace_policy)
    if w is None or traced is None:
        return None
    runs = _runs(sc)
    mode, other = sc.serving.truncation, _other(sc.serving.truncation)
    # why a run fell back to the Python engine: the Result's notes, once each
    notes = list(dict.fromkeys(outputs[n][0][ENGINE_NOTE] for n in runs if n in outputs and ENGINE_NOTE in outputs[n][0]))
    raw = {p: {k: v for k, v in outputs[p][0].items() if k != ENGINE_NOTE} for p in sc.policies if p in outputs}
    per_policy = {name: versus(m, raw.get("recompute")) for name, m in raw.items()}
    truncation: dict[str, dict[str, Any]] = {mode: _trunc_summary(per_policy[sc.trace_policy])}
    if TRUNCATION in outputs and TRUNCATION in runs:
        truncation[other] = _trunc_summary(outputs[TRUNCATION][0])
    f = w["formulas"]
    n = w["turns"]
    detail = sc.serving.detail_job if sc.serving.detail_job >= 0 else w["detail_default"]
    s_buf = float(w["sbuf"][detail]) if n else 0.0
    metrics = {
        "trace_policy": sc.trace_policy,
        "truncation_mode": mode,
        **{k: w[k] for k in ("conversations", "turns", "multi_turn_share", "overflow_turn_share",
                                  "overflow_session_share", "arrivals")},
        "policies": per_policy,
        "workload": w["workload"],
        "gpu": w["gpu"],
        "formulas": {
            "L_pw": f["L_pw"],
            "L_ew": f["L_ew"],
            "S_kv_bytes": f["S_kv_bytes"],
            # Eq. 4 for the chosen turn; 0 means perfect overlap needs no read buffer.
            "S_buf_bytes": max(0.0, s_buf),
            "S_buf_turn": detail,
            "CCpS_bytes": f["CCpS_bytes"],
            "DSpUT_per_s": f["DSpUT_per_s"],
            "CCpUT_bytes_per_s": f["DSpUT_per_s"] * f["CCpS_bytes"],
            "read_buffer_bytes": int(sc.hardware.read_buffer_gb * 1e9),
        },
        "truncation": truncation,
        "sizing": w["sizing"],
        "detail": traced[2],
    }
    if note := overload_note(per_policy):
        metrics["overload"] = note
    if notes:
        metrics["notes"] = notes
    events = sum(outputs[name][3] for name in runs if name in outputs)
    return Result(scenario=sc, trace=traced[1], metrics=round_metrics(metrics), events=events)
