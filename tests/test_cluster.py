"""Sweeps through an executor: the local pool and Dask clusters (in-process, and one over TCP on
127.0.0.1), streaming by grid index, cancel, and the connection errors."""
import os
import re
import subprocess
import sys
import time

import pytest

from kvviz.cli import main
from kvviz.errors import ScenarioError
from kvviz.executor import check_workers, open_executor, versions
from kvviz.scenario_data import read_toml
from kvviz.sweep import Axis, run_sweep

from .conftest import SCENARIOS

distributed = pytest.importorskip("distributed", reason="the cluster extra (pip install 'kvviz[cluster]')")
pytestmark = pytest.mark.cluster

SEED = str(SCENARIOS / "rope_prefetch_16.toml")
# Rope runs are fast; 40 points of a 400k-token sequence take a few seconds in all.
AXES = [Axis("storage.latency_us", tuple(range(1, 11))), Axis("cache.slots", (8, 16)), Axis("prefetch.window", (2, 4))]


def base():
    data = read_toml(SEED)
    data["sequence"]["length"] = 20_000
    return data


@pytest.fixture(scope="module")
def local_result():
    return run_sweep(base(), AXES, "speedup", source=SEED, executor="local", workers=2)


def test_in_process_cluster_matches_the_local_pool_byte_for_byte(local_result):
    seen = []
    with distributed.LocalCluster(processes=False, n_workers=2, threads_per_worker=1,
                                  dashboard_address=":0") as cluster:
        res = run_sweep(base(), AXES, "speedup", source=SEED, executor=cluster.scheduler_address,
                        on_result=lambda i, v: seen.append(i))
    assert res.to_csv() == local_result.to_csv() and res.to_dict() == local_result.to_dict()
    assert sorted(seen) == list(range(40))  # every grid index exactly once
    # three axes: the long form, one row per point
    lines = res.to_csv().splitlines()
    assert lines[0] == "storage.latency_us,cache.slots,prefetch.window,speedup" and len(lines) == 41
    assert lines[1].startswith("1,8,2,")


def test_local_stream_keys_results_by_index(local_result):
    got = {}
    res = run_sweep(base(), AXES, "speedup", source=SEED, executor="local", workers=2,
                    on_result=lambda i, v: got.__setitem__(i, v))
    assert res.values == local_result.values and [got[i] for i in range(40)] == res.values


def test_cancel_leaves_no_task_on_the_cluster():
    class Stop(Exception):
        pass

    def progress(done, total):
        if done >= 2:
            raise Stop

    data = base()
    data["sequence"]["length"] = 200_000  # slower runs: most of the grid is still queued
    with distributed.LocalCluster(processes=False, n_workers=1, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster.scheduler_address) as watcher:
        with pytest.raises(Stop):
            run_sweep(data, AXES, "speedup", source=SEED, executor=cluster.scheduler_address, progress=progress)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            tasks = watcher.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))
            if tasks == 0:
                break
            time.sleep(0.05)
        assert tasks == 0


def test_over_tcp_the_cli_prints_what_a_local_run_prints(capsys):
    args = ["sweep", SEED, "--set", "sequence.length=20000", "--param", "storage.latency_us", "--values", "1:6",
            "--param", "cache.slots", "--values", "8,16", "--metric", "speedup", "--csv"]
    assert main(args + ["--executor", "local"]) == 0
    local = capsys.readouterr().out
    with distributed.LocalCluster(n_workers=1, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  scheduler_port=0, dashboard_address=":0") as cluster:
        addr = cluster.scheduler_address
        assert addr.startswith("tcp://127.0.0.1:")
        p = subprocess.run([sys.executable, "-m", "kvviz", *args, "--executor", addr],
                           capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout == local


def test_unreachable_address_exit_2_within_the_timeout(capsys, monkeypatch):
    monkeypatch.setenv("KVVIZ_CONNECT_TIMEOUT_S", "2")
    t = time.monotonic()
    assert main(["sweep", SEED, "--param", "cache.slots", "--values", "8,16", "--metric", "speedup",
                 "--executor", "tcp://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert time.monotonic() - t < 15
    assert "--executor: cannot connect to the Dask scheduler at tcp://127.0.0.1:9: cannot connect" in err
    assert "Traceback" not in err


def test_version_mismatch_is_refused():
    class Cluster:
        def __init__(self, workers):
            self.workers = workers

        def run(self, fn):
            return self.workers

    mine = versions()
    check_workers(Cluster({"tcp://a:1": dict(mine)}), "tcp://s:1")  # the same: accepted
    with pytest.raises(ScenarioError, match=r"worker tcp://b:2 runs numpy 1\.0 \(here .*\): install the same"):
        check_workers(Cluster({"tcp://a:1": dict(mine), "tcp://b:2": {**mine, "numpy": "1.0"}}), "tcp://s:1")
    with pytest.raises(ScenarioError, match="has no workers"):
        check_workers(Cluster({}), "tcp://s:1")


def test_missing_dask_names_the_extra(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_dask(name, *a, **k):
        if name == "distributed":
            raise ImportError(name)
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_dask)
    with pytest.raises(ScenarioError, match=r"pip install 'kvviz\[cluster\]'"):
        with open_executor("tcp://127.0.0.1:8786"):
            pass


def test_replay_over_tcp_gives_the_local_curve(capsys):
    """Each worker gets the trace once (scattered) and replays from its own copy."""
    pytest.importorskip("libcachesim")
    trace = str(SCENARIOS.parent / "resources" / "traces" / "zipf_20k.csv")
    args = ["replay", trace, "--policy", "fifo,s3fifo,belady", "--capacities", "auto", "--json"]
    assert main(args + ["--executor", "local", "--workers", "2"]) == 0
    local = capsys.readouterr().out
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1",
                                  scheduler_port=0, dashboard_address=":0") as cluster:
        p = subprocess.run([sys.executable, "-m", "kvviz", *args, "--executor", cluster.scheduler_address],
                           capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout == local and '"engine": "libcachesim"' in local


def test_the_scheduler_lost_mid_sweep_is_one_line_and_exit_2():
    """Issue 23: the scheduler closed while the sweep's tasks run gave CancelledError tracebacks."""
    args = ["sweep", SEED, "--set", "sequence.length=300000", "--param", "storage.latency_us", "--values", "1:40",
            "--metric", "speedup"]
    cluster = distributed.LocalCluster(processes=False, protocol="tcp", host="127.0.0.1", n_workers=1,
                                       threads_per_worker=1, dashboard_address=":0")
    try:
        p = subprocess.Popen([sys.executable, "-m", "kvviz", *args, "--executor", cluster.scheduler_address],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "KVVIZ_CONNECT_TIMEOUT_S": "5"})
        deadline = time.monotonic() + 60
        while not cluster.scheduler.tasks and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.05)
        assert cluster.scheduler.tasks, "the sweep never reached the cluster"
    finally:
        cluster.close()
    out, err = p.communicate(timeout=60)
    # the error is one line; the sweep's progress lines before it (runs done so far) may be there
    lines = [line for line in err.strip().splitlines() if not line.startswith("sweep: ")]
    assert p.returncode == 2, err[-2000:]
    assert "Traceback" not in err and len(lines) == 1, err[-2000:]
    assert "lost the Dask scheduler at tcp://127.0.0.1:" in lines[0] and "the run can be repeated" in lines[0]
    assert re.search(r"\d+ of \d+ tasks had returned", lines[0])
