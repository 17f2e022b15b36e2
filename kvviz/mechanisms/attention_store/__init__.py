"""AttentionStore / CachedAttention (seed 003, USENIX ATC 2024): multi-turn KV reuse over
HBM/DRAM/SSD with scheduler-aware prefetch and eviction, layer-wise pre-loading, asynchronous
saving and decoupled truncation.

Every listed policy runs on the identical workload; `metrics.policies.<name>` compares them.
The Trace shows one run only, `trace_policy`'s (default scheduler_aware): five copies of a
52K-turn timeline would quintuple the trace for views that show one design at a time, and
another policy's timeline is one `--set trace_policy=lru` away.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...requests.extent import extent
from ...result import Result
from ...runs import complete, run_order
from ...size_guard import Estimate
from .. import Mechanism
from . import native
from .costs import DISPATCH_S_PER_TURN, PREPARE_S_PER_TURN, TRACE_LINE_S
from .model import AttentionStoreScenario
from .parts import parts_of, plan
from .serving import GPU_LANE, LAYER_LOADS_LANE, LAYERS_LANE
from .workload import expected_turns, workload_of  # noqa: F401  (workload_of: the package's API)

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


def inactive(data: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    w = data.get("workload")
    if isinstance(w, dict) and isinstance(w.get("trace_file"), str) and w["trace_file"]:
        out = {f"workload.{f}": "not used: workload.trace_file gives the workload" for f in GENERATOR_FIELDS}

    def get(section: str, field: str, default: object) -> Any:
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


# measured (see the README's size limits): 20,000 conversations (116,000 turns): 2.9 kB per turn
# for one policy's run, 0.55 kB more per further run
BYTES_PER_TURN, BYTES_PER_TURN_RUN = 2_600, 600

# Reading a trace file: measured on a 15 MB Mooncake JSONL (40,000 requests: 116 MB, 2.1 s) and
# a 2.4 MB conversation-log CSV (100,000 turns: 35 MB, 0.9 s): 7.7 and 15 B of peak memory per
# byte of file; taken as 16 B (ours). The whole 40,000-turn run of the bundled Mooncake scenario,
# five policies, measured 164 MB against the 224 MB the per-turn figures give. Time: costs.py.
BYTES_PER_TRACE_BYTE = 16


def estimate(sc: AttentionStoreScenario) -> Estimate | None:
    w = sc.workload
    runs = len(sc.policies) + (1 if sc.serving.compare_truncation else 0)
    if w.trace_file:  # turns: the file's lines, counted in its first MiB and scaled by its size
        ext = extent(w.trace_file)
        if ext is None:  # a zstd file that does not state its size
            return None
        turns, field = ext.lines, "workload.trace_file"
        nbytes = max(ext.bytes * BYTES_PER_TRACE_BYTE, turns * (BYTES_PER_TURN + BYTES_PER_TURN_RUN * runs))
        before = turns * TRACE_LINE_S
    else:
        turns, field = expected_turns(w), "workload.conversations"
        nbytes = turns * (BYTES_PER_TURN + BYTES_PER_TURN_RUN * runs)
        before = turns * PREPARE_S_PER_TURN
    # each part's cost is its seconds per turn with the engine that will run it (costs.py)
    parts = tuple((p.name, turns * p.cost) for p in run_order(parts_of(sc, keyed=False)))
    return Estimate(nbytes, before + sum(s for _, s in parts), field, parts=parts, parallel=True,
                    dispatch=turns * DISPATCH_S_PER_TURN)


def simulate(sc: AttentionStoreScenario) -> Result:
    """Every part (parts.py), run and combined."""
    return complete(plan(sc), sc)


MECHANISM = Mechanism("attention_store", AttentionStoreScenario, simulate, estimate, pick=PICK,
                      initial_range=initial_range, inactive=inactive, analyses=("policies",), plan=plan,
                      engine_note=native.note, engine_refusal=native.refusal)
