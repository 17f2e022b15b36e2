"""GPU time as work, its split by phase, and the cost of a turn (per policy; seed 003 §4.2).

- `gpu_time_s`: the GPU time attributed to the jobs, summed over jobs. kvviz/serving/batching.py attributes
  every busy ns once: a prefill iteration by the compute-share rule (each job's share of the
  tokens computed in it), a decode iteration by the even-split rule (equal parts for its running
  jobs). So the sum over jobs equals `gpu_busy_s`, the wall-clock time the GPU is in an
  iteration; idle time is attributed to nobody. The two differ in what they break down into
  (per turn: `gpu_time_per_turn_ms`; per phase: `phase_share`), not in their total: a
  work measure that is not busy time would have to charge a job something other than the
  iterations it shares, and none is asked of the engine here.
- `phase_share`: shares of GPU time in prefill compute, in decode, and in `load_wait`: within
  prefill iterations, the time layers wait for their KV (the iteration's length less its
  layers' compute, L × per-layer compute: the gaps of the paper's Figure 7(a), and the wait
  before layer 0). The decode share bounds any speedup from prefill (Amdahl):
  `gpu_time_speedup_cap_vs_recompute` = 1 / recompute's decode share.
- Cost (`[cost]`, prices ours: the seed gives none): GPU cost = gpu_time_s × gpus × the GPU-hour
  price (the GPU is paid for the work it does); storage cost = the provisioned DRAM and SSD of
  the store (hardware.dram_gb and ssd_gb, for the tiers `store.tiers` uses) × their GB-hour
  prices × the run's duration (makespan_s: from t = 0 to the last reply; capacity is paid for
  while the service runs, used or not). `cost_per_turn` = (GPU + storage) / turns. A policy
  that keeps nothing (recompute) provisions no store, so its cost is GPU only.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from .model import GB, AttentionStoreScenario


class _Work(Protocol):
    """The batcher's GPU accounting (kvviz/serving/batching.py, or its compiled twin)."""
    @property
    def gpu_ns(self) -> Sequence[float]: ...
    @property
    def busy_ns(self) -> int: ...
    @property
    def prefill_ns(self) -> int: ...
    @property
    def load_wait_ns(self) -> int: ...


class _Stores(Protocol):
    @property
    def stores(self) -> bool: ...


class _Capacities(Protocol):
    @property
    def dram_cap(self) -> int: ...
    @property
    def ssd_cap(self) -> int: ...


class _Run(Protocol):
    """What the costs read of a run (serving.Run)."""
    @property
    def batcher(self) -> _Work: ...
    @property
    def sc(self) -> AttentionStoreScenario: ...
    @property
    def store(self) -> _Stores: ...
    @property
    def prep(self) -> _Capacities: ...

HOUR_S = 3600.0


def work_and_cost(run: _Run, makespan_s: float) -> dict[str, Any]:
    """Per-policy metrics of GPU time as work, phase shares and cost."""
    g, sc = run.batcher, run.sc
    per_job = np.asarray(g.gpu_ns, dtype=np.float64)
    busy = g.busy_ns
    gpu_time_s = float(per_job.sum()) / 1e9
    phase = None
    if busy:
        decode = busy - g.prefill_ns
        phase = {"prefill": (g.prefill_ns - g.load_wait_ns) / busy, "decode": decode / busy,
                 "load_wait": g.load_wait_ns / busy}
    c = sc.cost
    gpu_usd = gpu_time_s / HOUR_S * sc.hardware.gpus * c.gpu_usd_per_gpu_hour
    stores = run.store.stores
    dram_gb = run.prep.dram_cap / GB if stores else 0.0
    ssd_gb = run.prep.ssd_cap / GB if stores else 0.0
    storage_usd = (dram_gb * c.dram_usd_per_gb_hour + ssd_gb * c.ssd_usd_per_gb_hour) * makespan_s / HOUR_S
    total = gpu_usd + storage_usd
    n = len(per_job)
    return {
        "gpu_time_s": gpu_time_s,
        "gpu_time_per_turn_ms": float(per_job.mean()) / 1e6 if n else None,
        "gpu_time_per_turn_p99_ms": float(np.percentile(per_job, 99)) / 1e6 if n else None,
        "load_wait_gpu_s": g.load_wait_ns / 1e9,
        "phase_share": phase,
        "provisioned_dram_gb": dram_gb,
        "provisioned_ssd_gb": ssd_gb,
        "gpu_cost_usd": gpu_usd,
        "storage_cost_usd": storage_usd,
        "cost_usd": total,
        "cost_per_turn": total / n if n else None,
        "storage_share_of_cost": storage_usd / total if total else None,
    }


def versus(m: dict[str, Any], baseline: dict[str, Any]) -> None:
    """Add the gains over recompute (in place)."""
    def ratio(key: str) -> float | None:
        return baseline[key] / m[key] if m[key] else None

    m["gpu_time_speedup_vs_recompute"] = ratio("gpu_time_s")
    m["makespan_speedup_vs_recompute"] = ratio("makespan_s")
    share = baseline["phase_share"]
    m["gpu_time_speedup_cap_vs_recompute"] = 1 / share["decode"] if share and share["decode"] else None
    if baseline["cost_usd"]:
        m["cost_saving_vs_recompute"] = 1 - m["cost_usd"] / baseline["cost_usd"]
