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

import os

from ...requests.extent import extent
from ...result import Result
from ...size_guard import Estimate
from .. import Mechanism
from .metrics import metrics
from .model import ClusterScenario
from .run import ClusterRun
from .workload import load

# ASSUMPTIONS of the estimate (measured on this machine, bench_cluster.py): a block lookup costs
# about 200 bytes while a run lasts, and a request about 40 µs of CPU per instance it could go to
BYTES_PER_LOOKUP = 200
SECONDS_PER_REQUEST = 40e-6
MAX_TRACE_MARKS = 200_000


def estimate(sc: ClusterScenario) -> Estimate:
    w = sc.workload
    if w.trace_file:
        ext = extent(w.trace_file)
        requests = ext.lines if ext else 1.0
        if w.max_requests:
            requests = min(requests, w.max_requests)
        size = os.stat(w.trace_file).st_size if os.path.isfile(w.trace_file) else 0
        lookups = requests * 25  # ASSUMPTION: Mooncake's ~24 blocks a request
        nbytes, field = lookups * BYTES_PER_LOOKUP + size * 8, "workload.trace_file"
    else:
        requests = sum(r * d for r, d in w.stages)
        per = (w.system_prompt_tokens + w.question_tokens) / w.block_tokens
        nbytes, field = requests * per * BYTES_PER_LOOKUP, "workload.stages"
    seconds = requests * SECONDS_PER_REQUEST * (1 + sc.cluster.instances / 8)
    return Estimate(nbytes + requests * sc.cluster.instances * 300, seconds, field)


def simulate(sc: ClusterScenario) -> Result:
    work = load(sc)
    run = ClusterRun(sc, work).run()
    m = metrics(run)
    return Result(scenario=sc, trace=build_trace(run), metrics=m, events=run.loop.processed)


def build_trace(run):
    """The run's recording (instance.py's lanes) and a lane of the requests SLO admission refused."""
    tb = run.tb
    rej = [j for j in range(len(run.work)) if run.rejected[j]]
    if rej:
        lane = tb.lane("rejected (SLO admission)", "router")
        for j in rej[:MAX_TRACE_MARKS]:
            tb.instant(lane, run.times[j], "miss", j, job=j)
    return tb.build()


MECHANISM = Mechanism("cluster", ClusterScenario, simulate, estimate)
