"""The cluster's Perfetto trace: one process per instance (and one for the router), a flow from
each routed arrival to the instance that served its prefill, and a flow from each transfer into an
instance (peer fetch, pool or tier load, the P/D hand-over) to the mark of the request it fed."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from kvviz import load_scenario, simulate
from kvviz.export.perfetto import perfetto_json

ROUTING = Path(__file__).resolve().parents[1] / "scenarios" / "cluster_mooncake_routing.toml"
SETS = ["workload.max_requests=400", "cluster.instances=4", "cluster.prefill_instances=2",
        "instance.hbm_cache_tokens=100000", "instance.dram_cache_tokens=300000"]


@pytest.fixture(scope="module", params=[["routing.policy=global_cache_aware"], ["routing.policy=random"],
                                        ["routing.policy=prefix_affinity", "pool.shared=true"]])
def traced(request):
    r = simulate(load_scenario(ROUTING, SETS + request.param))
    return r, json.loads(perfetto_json(r))["traceEvents"]


def _process(ev):
    return {e["pid"]: e["args"]["name"].split(" · ")[0] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}


def test_one_process_per_instance_and_the_router(traced):
    r, ev = traced
    procs = _process(ev)
    n = len(r.metrics["per_instance"])
    assert n == 4
    lanes = {p for p in procs.values() if p != "counters"}
    assert lanes == {"router"} | {f"instance {k}" for k in range(n)}
    assert len(lanes) == len(set(lanes))  # one process each, not one per lane


def test_each_routed_arrival_flows_to_the_instance_that_served_its_prefill(traced):
    r, ev = traced
    procs = _process(ev)
    starts = {e["id"]: e for e in ev if e["ph"] == "s"}
    ends = {e["id"]: e for e in ev if e["ph"] == "f"}
    arrivals = {(e["pid"], e["tid"], e["ts"]) for e in ev if e["ph"] == "i" and e["name"] == "arrive"}
    routed = [n for n, s in starts.items() if (s["pid"], s["tid"], s["ts"]) in arrivals]
    m = r.metrics
    assert len(routed) == m["served"] == 400 - m["rejected"]
    assert all(procs[starts[n]["pid"]] == "router" for n in routed)
    assert all(ends[n]["ts"] >= starts[n]["ts"] for n in routed)  # forward: arrival, then its prefill's end
    landed = Counter(procs[ends[n]["pid"]] for n in routed)
    want = {f"instance {p['index']}": p["requests"] for p in m["per_instance"] if p["role"] == "prefill"}
    assert landed == want  # the router's choices, instance by instance


def test_each_transfer_into_an_instance_flows_forward_to_a_request_there(traced):
    r, ev = traced
    procs = _process(ev)
    starts = {e["id"]: e for e in ev if e["ph"] == "s"}
    ends = {e["id"]: e for e in ev if e["ph"] == "f"}
    moves = {(e["pid"], e["tid"], e["ts"]): e for e in ev if e["ph"] == "X" and e["cat"] in ("fetch", "load")}
    assert moves, "no transfer between instances, tiers or pools in this run"
    fed = set()
    for n, s in starts.items():
        x = moves.get((s["pid"], s["tid"], s["ts"]))
        if x is None:
            continue  # a routed arrival
        f = ends[n]
        assert procs[f["pid"]] == procs[s["pid"]]  # the instance it moved into
        assert round(f["ts"] * 1000) >= round((x["ts"] + x["dur"]) * 1000)  # after it has landed
        fed.add((x["pid"], x["tid"], x["ts"]))
    assert fed == set(moves)  # every transfer feeds a request
    kinds = Counter(e["cat"] for e in moves.values())
    lanes = Counter(e["args"]["name"].split(" · ")[-1] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"
                    and (e["pid"], e["tid"]) in {k[:2] for k in fed})
    if r.scenario.routing.policy == "global_cache_aware":
        assert kinds["fetch"] > 0  # peer fetches (inter-instance) among them
    if r.scenario.pool.shared:
        assert lanes["peer and pool fetches"] > 0  # the shared pool's transfers among them
    assert lanes["KV from prefill"] == 2  # the P/D hand-over, into both decode instances
