"""A serving cluster over shared tiers (issue 32): N serving-core instances, a router, peer links
between instances, and an optional P/D split. One run = one router (`routing.policy`); its
metrics are at top level (metrics.py names each).

The parts: model.py (the scenario), workload.py (the requests as cacheable blocks),
instance.py (one instance: the serving core's batcher over its block cache, cache.py),
routers/ (one file per router, a registry), view.py (what a router sees), peers.py (the
instances' RDMA links), run.py (the run), metrics.py. No other mechanism is imported (an
import contract in pyproject.toml): what the cluster shares with the prefix cache lives in
kvviz/serving.

The timeline: one lane group per instance (a Perfetto process each): its GPU's prefill and
decode iterations with a hit or miss mark per request, its RDMA lane (peer, pool and P/D KV
transfers) and its DRAM↔HBM lane (block loads and write-downs), each transfer carrying its
bytes, tiers and its request's flow to the prefill that consumed it; and a lane of requests
SLO admission refused.
"""
from __future__ import annotations

import math
import os
from typing import Any

from ...requests.extent import extent
from ...result import Result
from ...size_guard import Estimate
from ...trace import Trace
from .. import Mechanism
from .metrics import metrics
from .model import ClusterScenario, Workload
from .run import ClusterRun
from .workload import load

# The estimate's constants, measured on this machine: `kvviz run cluster_mooncake_routing` (12,031
# requests, 288,500 block lookups, 16 instances, the compiled block cache, the timeline recorded)
# took 2.9 s of wall time and 189 MB of peak RSS with the Python cache (about 110 MB above the
# interpreter's), i.e. ~240 µs a request and ~400 B a lookup (benchmarks/bench_cluster.py)
BYTES_PER_LOOKUP = 400
SECONDS_PER_REQUEST = 250e-6
MAX_TRACE_MARKS = 200_000


GENERATOR_FIELDS = ("block_tokens", "groups", "prompts_per_group", "system_prompt_tokens", "question_tokens",
                    "generated_output_tokens", "stages", "multi_turn", "seed")
ROUTER_FIELDS = {"seed": ("random",), "balancing_threshold": ("global_cache_aware",),
                 "prefix_weight": ("precise_prefix", "approximate_prefix"),
                 "kv_weight": ("precise_prefix", "approximate_prefix"),
                 "queue_weight": ("precise_prefix", "approximate_prefix"),
                 "approx_index_blocks": ("approximate_prefix",)}


def inactive(data: dict[str, Any]) -> dict[str, str]:
    """Fields another field makes moot, for the app to grey out."""
    out = {}
    w = data.get("workload")
    if isinstance(w, dict) and isinstance(w.get("trace_file"), str) and w["trace_file"]:
        out.update({f"workload.{f}": "not used: workload.trace_file gives the workload" for f in GENERATOR_FIELDS})
    else:
        out["workload.max_requests"] = "not used: only a trace file is cut to its first requests"
    r = data.get("routing")
    policy = r.get("policy", "prefix_affinity") if isinstance(r, dict) else "prefix_affinity"
    for f, users in ROUTER_FIELDS.items():
        if policy not in users:
            out[f"routing.{f}"] = f"not used: only {' and '.join(users)} read{'s' * (len(users) == 1)} it"
    p = data.get("pool")
    if not (isinstance(p, dict) and p.get("shared")):
        out.update({f"pool.{f}": "not used: pool.shared is off" for f in ("read_gbps", "write_gbps", "latency_us")})
    ins = data.get("instance")
    if isinstance(ins, dict) and ins.get("hbm_pool") == "shared":
        out["instance.running_kv_gb"] = "not used: hbm_pool = shared (instance.hbm_cache_tokens is the whole pool)"
    c = data.get("cluster")
    if isinstance(c, dict) and c.get("instances", 1) == 1:
        out.update({f"cluster.{f}": "not used: one instance" for f in ("peer_gbps", "peer_latency_us")})
    return out


def estimate(sc: ClusterScenario) -> Estimate:
    w = sc.workload
    if w.trace_file:
        ext = extent(w.trace_file)
        requests = ext.lines if ext else 1.0
        if w.max_requests:
            requests = min(requests, w.max_requests)
        size = os.stat(w.trace_file).st_size if os.path.isfile(w.trace_file) else 0
        # ASSUMPTION: Mooncake's 24 blocks a request (288,500 / 12,031), or, where the file's commas
        # say more (a JSONL trace of long prompts: 250,000 ids a line), that many (an upper bound)
        per_request = max(25.0, ext.blocks / ext.lines) if ext and ext.lines else 25.0
        lookups = requests * per_request
        nbytes, field = lookups * BYTES_PER_LOOKUP + size * 8, "workload.trace_file"
    else:
        requests = sum(r * d for r, d in w.stages)
        tokens = requests * (w.system_prompt_tokens + w.question_tokens) + _earlier_rounds(w, requests)
        nbytes, field = tokens / w.block_tokens * BYTES_PER_LOOKUP, "workload.stages"
    seconds = requests * SECONDS_PER_REQUEST * max(1.0, sc.cluster.instances / 16)  # ASSUMPTION: linear beyond 16
    return Estimate(nbytes + requests * sc.cluster.instances * 60, seconds, field)


def _earlier_rounds(w: Workload, requests: float) -> float:
    """Prompt tokens of earlier rounds over the generator's requests (kvviz.requests.shared_prefix):
    with multi_turn, request i of U users is round i // U and carries every earlier round's
    question and answer, so the tokens grow with the square of the requests per user (one user
    over 10,000 requests: 110 billion tokens; the estimate without them said 1.8 GB)."""
    if not w.multi_turn or not math.isfinite(requests):
        return 0.0
    users = w.groups * w.prompts_per_group
    rounds, rest = divmod(int(requests), users)
    return float((users * rounds * (rounds - 1) // 2 + rest * rounds) * (w.question_tokens + w.generated_output_tokens))


def simulate(sc: ClusterScenario) -> Result:
    work = load(sc)
    run = ClusterRun(sc, work).run()
    m = metrics(run)
    return Result(scenario=sc, trace=build_trace(run), metrics=m, events=run.loop.processed)


def build_trace(run: ClusterRun) -> Trace:
    """The run's recording (instance.py's lanes) and a lane of the requests SLO admission refused."""
    tb = run.tb
    assert tb is not None  # simulate's run records
    rej = [j for j in range(len(run.work)) if run.rejected[j]]
    if rej:
        lane = tb.lane("rejected (SLO admission)", "router")
        for j in rej[:MAX_TRACE_MARKS]:
            tb.instant(lane, run.times[j], "miss", j, job=j)
    return tb.build()


MECHANISM = Mechanism("cluster", ClusterScenario, simulate, estimate, inactive=inactive)
