"""What a prefix-cache deployment costs per hour, and per million tokens served: a computation
after the run, from the scenario's `[cost]` prices and the run's metrics (nothing here changes
what the run simulates).

cost_per_hour = serving.gpus × the GPU-hour price (the instance: its GPUs with the HBM that
holds the weights and the running requests' KV, serving.running_kv_gb)
  + Σ over tiers: capacity_gb × the tier's GB-hour price (the hbm tier's cached blocks are HBM
    beyond the running pool, priced per GB: model.py keeps the two pools apart)
  + Σ over tiers below HBM: link units × the tier's link-hour price, a link unit being the tier's
    default read bandwidth (tiers.py: one PCIe 5.0 ×16 CXL card, the host's PCIe 4.0 link, one
    NVMe drive, one 200 Gb/s NIC), so read_gbps = 2 × the default pays two links.
cost_per_million_tokens = cost_per_hour / (output tokens served per hour / 10^6), at the run's
own throughput_tokens_per_s (the timed engine's: output tokens over the makespan). The untimed
replay has no serving times, so its runs get cost_per_hour only (cost_per_million_tokens None).

Every default price is in model.py's `Cost`, with its source or "ASSUMPTION (ours)" and why.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import cast

from ...result import Result
from .model import PrefixCacheScenario, Tier
from .tiers import TIER_DEFAULTS

HOUR_S = 3600.0


def link_units(tier: Tier) -> float:
    """The tier's links, in units of its default read bandwidth (tiers.py)."""
    return tier.read_gbps / TIER_DEFAULTS[tier.name]["read_gbps"]


def hourly(sc: PrefixCacheScenario, capacity_gb: dict[str, float] | None = None) -> dict[str, float]:
    """The deployment's cost per hour, by part (`gpus`, `<tier>_capacity`, `<tier>_links`) and
    `total`. `capacity_gb`: each tier's capacity as the run used it (whole blocks), else the
    scenario's capacity_gb (a tier given in blocks needs the run's figure)."""
    c = sc.cost
    parts = {"gpus": sc.serving.gpus * c.gpu_usd_per_gpu_hour}
    for t in sc.tiers:
        gb = capacity_gb[t.name] if capacity_gb is not None else (t.capacity_gb or 0.0)
        parts[f"{t.name}_capacity"] = gb * getattr(c, f"{t.name}_usd_per_gb_hour")
        if t.name != "hbm":
            parts[f"{t.name}_links"] = link_units(t) * getattr(c, f"{t.name}_link_usd_per_hour")
    parts["total"] = sum(parts.values())
    return parts


def hourly_in_blocks(sc: PrefixCacheScenario, block_bytes: int) -> dict[str, float]:
    """hourly() with each tier's capacity in whole blocks of `block_bytes`, as a run holds it
    (known before the run: what `kvviz plan` prices a mix by)."""
    return hourly(sc, {t.name: t.blocks(block_bytes) * block_bytes / 1e9 for t in sc.tiers})


def per_million_tokens(cost_per_hour: float, tokens_per_s: float | None) -> float | None:
    if not tokens_per_s:
        return None
    return cost_per_hour / (tokens_per_s * HOUR_S / 1e6)


def with_cost(result: Result) -> Result:
    """`result` with `cost` (the hourly parts and the prices) and every run's `cost_per_hour`
    and `cost_per_million_tokens` beside its latency metrics."""
    sc = cast(PrefixCacheScenario, result.scenario)  # with_cost wraps the prefix cache's simulate only (priced)
    m = result.metrics_dict()
    caps = {name: t["capacity_gb"] for name, t in m.get("tiers", {}).items()}
    parts = hourly(sc, caps or None)
    total = parts["total"]
    m["cost"] = {"per_hour": parts, "prices": sc.cost.model_dump()}
    for run in m.get("policies", {}).values():
        run["cost_per_hour"] = total
        run["cost_per_million_tokens"] = per_million_tokens(total, run.get("throughput_tokens_per_s"))
    return Result(sc, result.trace, m, result.events)


def priced(simulate: Callable[[PrefixCacheScenario], Result]) -> Callable[[PrefixCacheScenario], Result]:
    """The mechanism's simulate, with the cost added after each run."""
    def run(sc: PrefixCacheScenario) -> Result:
        return with_cost(simulate(sc))
    run.__doc__ = simulate.__doc__
    return run
