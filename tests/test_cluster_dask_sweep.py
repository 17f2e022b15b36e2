"""A cluster scenario swept over routers × instances × shared-pool size on a Dask cluster (in
process) gives the serial executor's values, point for point."""
import pytest

from kvviz.scenario_data import read_toml
from kvviz.sweep import Axis, run_sweep

from .conftest import ROOT

distributed = pytest.importorskip("distributed", reason="the cluster extra (pip install 'kvviz[cluster]')")
pytestmark = pytest.mark.cluster

ROUTING = ROOT / "scenarios" / "cluster_mooncake_routing.toml"
TRACE = ROOT / "resources" / "traces" / "mooncake_conversation_trace.jsonl"
AXES = [Axis("routing.policy", ("random", "prefix_affinity", "global_cache_aware")), Axis("cluster.instances", (1, 3)),
        Axis("instance.dram_cache_tokens", (1_024, 200_000))]  # the shared pool: instances × this


def base() -> dict:
    data = read_toml(ROUTING)
    data["workload"].update(trace_file=str(TRACE), max_requests=300)  # absolute: a worker reads it
    data["cluster"]["prefill_instances"] = 0
    data["pool"] = {**data.get("pool", {}), "shared": True}
    data["instance"]["hbm_cache_tokens"] = 20_000
    return data


@pytest.mark.skipif(not TRACE.exists(), reason="the Mooncake trace is not on this machine")
def test_a_dask_sweep_of_a_cluster_equals_the_serial_one():
    metric = "mean_ttft_ms"  # every part of a run (routing, caches, pool, batching) moves it
    serial = run_sweep(base(), AXES, metric, source=str(ROUTING), executor="local", workers=1)
    with distributed.LocalCluster(processes=False, n_workers=2, threads_per_worker=1,
                                  dashboard_address=":0") as cluster:
        dask = run_sweep(base(), AXES, metric, source=str(ROUTING), executor=cluster.scheduler_address)
    assert dask.to_dict() == serial.to_dict()
    flat = serial.values  # three axes: one value per grid point, the last axis fastest
    assert len(flat) == 12 and all(isinstance(v, float) for v in flat)
    assert len(set(flat)) >= 6  # the axes change the runs (one instance: every router alike)
    csv = dask.to_csv().splitlines()
    assert csv[0] == "routing.policy,cluster.instances,instance.dram_cache_tokens,mean_ttft_ms" and len(csv) == 13
