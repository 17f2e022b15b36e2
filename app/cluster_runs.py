"""What the Cluster view reads from a finished cluster run, and its router comparison's runs.
No Qt here: the comparison's runs happen in worker processes, which import this module alone.

A cluster run's trace names each instance's lanes by group ("instance 3"), marks each arrival on
the "router · arrivals" lane and each request's first token on its prefill instance's GPU lane
(its job), and samples per-instance counters over time ("instance 3 queue", "instance 3 HBM
cache", ...; kvviz/mechanisms/cluster/instance.py) and the shared pool's ("shared pool cache"). Everything here is derived from those.
"""
from __future__ import annotations

import re
import typing
from concurrent.futures import FIRST_COMPLETED, wait
from typing import Callable

import numpy as np

from kvviz.trace import Trace

ARRIVALS = "router · arrivals"
POOL = "shared pool cache"  # the shared pool's blocks (kvviz/mechanisms/cluster/pool.py)
_GROUP = re.compile(r"instance (\d+)$")


def instance_of(group: str) -> int | None:
    m = _GROUP.match(group)
    return int(m.group(1)) if m else None


def instance_lanes(tr: Trace) -> dict[int, list[int]]:
    """{instance: its lanes' rows, in trace order}, instances in index order."""
    out: dict[int, list[int]] = {}
    for i, group in enumerate(tr.lanes["group"].tolist()):
        k = instance_of(group)
        if k is not None:
            out.setdefault(k, []).append(i)
    return dict(sorted(out.items()))


def roles(result) -> dict[int, str]:
    """{instance: "both" | "prefill" | "decode"}, from the run's per-instance metrics."""
    return {int(r["index"]): str(r["role"]) for r in result.metrics.get("per_instance", ())}


def first_tokens(result) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(arrival ns, first token ns, prefill instance) per request (−1 where never served), or None
    when the trace has no arrivals lane (a run recorded before it had one)."""
    tr = result.trace
    names = tr.lanes["name"].tolist()
    if ARRIVALS not in names:
        return None
    n = int(result.metrics.get("requests", 0))
    ins = tr.instants
    job = tr.fact_column(ins, "job")
    arrive = ins["lane"] == names.index(ARRIVALS)
    arrival = np.full(n, -1, dtype=np.int64)
    arrival[job[arrive]] = ins["t"][arrive]
    role = roles(result)
    lane_inst = np.full(len(names), -1, dtype=np.int64)
    for k, rows in instance_lanes(tr).items():
        if role.get(k) != "decode":  # a decode instance's mark is the KV's arrival, not the first token
            lane_inst[rows[0]] = k   # the GPU lane is each instance's first
    on_gpu = (lane_inst[ins["lane"]] >= 0) & (job >= 0)
    t, j = ins["t"][on_gpu], job[on_gpu]
    order = np.lexsort((t, j))  # by job, then time: each job's first mark first
    t, j, lane = t[order], j[order], ins["lane"][on_gpu][order]
    first_of = np.r_[True, j[1:] != j[:-1]] if len(j) else np.zeros(0, dtype=bool)
    first = np.full(n, -1, dtype=np.int64)
    where = np.full(n, -1, dtype=np.int64)
    first[j[first_of]] = t[first_of]
    where[j[first_of]] = lane_inst[lane[first_of]]
    return arrival, first, where


def ttft_ms(result) -> np.ndarray | None:
    """TTFT of every served request (ms), as the run's metrics count it (first token − arrival)."""
    got = first_tokens(result)
    if got is None:
        return None
    arrival, first, _ = got
    ok = (arrival >= 0) & (first >= 0)
    return (first[ok] - arrival[ok]) / 1e6


def steps(tr: Trace, name: str) -> tuple[np.ndarray, np.ndarray]:
    """A counter's (times ns, values), in time order (a step function: each value holds until the next)."""
    if name not in tr.counter_names:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    rows = tr.counter(name)
    order = np.argsort(rows["t"], kind="stable")
    return rows["t"][order].astype(np.int64), rows["value"][order].astype(np.float64)


def step_means(t: np.ndarray, v: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The time-weighted mean of a step function over each interval between `edges` (0 before its first point)."""
    if not len(t):
        return np.zeros(len(edges) - 1)
    area = np.r_[0.0, np.cumsum(v[:-1] * np.diff(t))]  # the integral from t[0] up to each t[i]
    i = np.searchsorted(t, edges, "right") - 1
    before = i < 0
    i = np.clip(i, 0, None)
    at = area[i] + v[i] * (edges - t[i])
    at[before] = 0.0
    widths = np.diff(edges).astype(np.float64)
    return np.divide(np.diff(at), widths, out=np.zeros(len(widths)), where=widths > 0)


def step_peaks(t: np.ndarray, v: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The highest value a step function takes in each interval between `edges` (the value
    carried in at its start, or any point inside it; 0 before its first point)."""
    n = len(edges) - 1
    if not len(t):
        return np.zeros(n)
    i = np.searchsorted(t, edges[:-1], "right") - 1  # the value holding at each interval's start
    out = np.where(i >= 0, v[np.clip(i, 0, None)], 0.0)
    col = np.searchsorted(edges, t, "right") - 1  # the interval each point falls in
    inside = (col >= 0) & (col < n)
    np.maximum.at(out, col[inside], v[inside])
    return out


def sub_trace(tr: Trace, rows: list[int]) -> Trace:
    """`tr` with only the lanes `rows` (in that order), their spans and marks; the rest as is."""
    keep = np.asarray(rows, dtype=np.int64)
    new = np.full(len(tr.lanes), -1, dtype=np.int64)
    new[keep] = np.arange(len(keep))

    def only(a):
        out = a[new[a["lane"]] >= 0].copy()
        out["lane"] = new[out["lane"]]
        return out
    return Trace(tr.lanes[keep].copy(), only(tr.spans), only(tr.instants), tr.counters, tr.residency, tr.labels,
                 tr.counter_names, tr.counter_units, tr.slots, tr.item_name, tr.facts)


# --- the router comparison ------------------------------------------------------------------

def policies(model) -> tuple[str, ...]:
    """The routers a cluster scenario's `routing.policy` accepts, in the schema's order."""
    field = model.model_fields["routing"].annotation.model_fields["policy"]
    return tuple(typing.get_args(field.annotation))


def paper_means(scenario) -> dict[str, float]:
    """{router: the paper's mean TTFT in ms} from the scenario's claims (a value claim on
    mean_ttft_ms whose `set` names one routing.policy)."""
    out = {}
    for c in getattr(scenario, "claim", ()):
        if c.metric != "mean_ttft_ms" or c.scale != "value" or not isinstance(c.paper, (int, float)):
            continue
        named = [s.split("=", 1)[1].strip() for s in c.set if s.split("=", 1)[0].strip() == "routing.policy"]
        if len(named) == 1:
            out[named[0]] = float(c.paper)
    return out


SUMMARY = ("mean_ttft_ms", "ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms", "token_hit_rate", "served", "rejected",
           "throughput_tokens_per_s", "load_imbalance")


def summary(policy: str, result) -> dict:
    """What the comparison keeps of one router's run: its TTFTs and its headline metrics."""
    m = result.metrics
    return {"policy": policy, "ttft_ms": ttft_ms(result), **{k: m.get(k) for k in SUMMARY}}


def router_run(task: tuple) -> dict:
    """One router's run (in a worker process): (scenario data, source, router, memory limit)."""
    from kvviz import parse_scenario, simulate
    from kvviz.scenario_data import apply_override
    data, source, policy, limit = task
    sc = parse_scenario(apply_override(data, f"routing.policy={policy}", source), source)
    return summary(policy, simulate(sc, limit))


def compare_routers(data: dict, source: str, names: tuple[str, ...], progress: Callable[[int, int], None],
                    on_result: Callable[[dict], None], have: dict | None = None, workers: int = 2,
                    max_memory_gb: float | None = None) -> list[dict]:
    """Each router of `names` run on the scenario, in a local pool of `workers` processes (`have`:
    a summary already at hand, the shown run's, not run again). `progress(done, total)` may raise
    to cancel: the workers are ended at once (a run cannot be interrupted)."""
    from kvviz.executor import local_pool
    out: dict[str, dict] = {}
    total = len(names)
    if have is not None and have["policy"] in names:
        out[have["policy"]] = have
        on_result(have)
    progress(len(out), total)
    todo = [p for p in names if p not in out]
    if todo:
        pool = local_pool(min(workers, len(todo)))
        futures = {pool.submit(router_run, (data, source, p, max_memory_gb)): p for p in todo}
        try:
            pending = set(futures)
            while pending:
                done, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
                for f in done:
                    s = f.result()
                    out[s["policy"]] = s
                    on_result(s)
                progress(len(out), total)  # also every quarter second: Cancel is seen while runs go on
        except BaseException:
            for p in list(getattr(pool, "_processes", {}).values()):  # ended now, not after their runs
                p.terminate()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()
    return [out[p] for p in names]
