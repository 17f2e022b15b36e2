"""The time estimate's arithmetic (kvviz.calibration) on fixed figures: parts scheduled over
worker processes as a pool takes them, kept parts left out, the probe's factor and the cores'
contention, when a pool is worth it and what it costs (none to start for a warm one); the probe
timing the reference engine; and the AttentionStore estimate held to its plan and to the engine
that will run it. No wall-clock assertions."""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from kvviz import load_scenario
from kvviz.calibration import (
    REFERENCE_PROBE_US_PER_TURN,
    calibrated,
    calibration_from,
    contention,
    others_running,
    probe_us_per_turn,
    wall_seconds,
)
from kvviz.executor import POOL_MARGIN, POOL_START_S, makespan, worth_a_pool
from kvviz.mechanisms import mechanisms
from kvviz.mechanisms.attention_store import costs, native, serving
from kvviz.mechanisms.attention_store.parts import plan
from kvviz.size_guard import Estimate

FLAGSHIP = Path(__file__).resolve().parent.parent / "scenarios" / "attention_store_sharegpt.toml"
# 1 s before the parts; 9 s of parts, 5 s over 2 workers: worth even a pool started for them
PARTS = Estimate(1e6, 10.0, "f", parts=(("a", 4.0), ("b", 3.0), ("c", 2.0)), parallel=True)


def test_makespan_is_list_scheduling_in_the_order_given():
    assert makespan([4, 3, 3, 2], 2) == 6  # 4 | 3, then 3 → the second (6), 2 → the first (6)
    assert makespan([4, 3, 3, 2], 1) == 12
    assert makespan([4, 3, 3, 2], 10) == 4
    assert makespan([1, 1, 4], 2) == 5  # in the order given: the long one last waits for a worker


def test_wall_seconds_of_a_run_of_parts():
    # 2 × (1 s before + (pool start + 4 | 3+2)) on 2 workers, nothing else running on 2 cores
    assert wall_seconds(PARTS, 2.0, 2, (), 0, 2) == pytest.approx(2 * (1 + POOL_START_S + 5))
    assert wall_seconds(PARTS, 2.0, 2, ["a"], 0, 2) == pytest.approx(2 * (1 + POOL_START_S + 3))
    assert wall_seconds(PARTS, 2.0, 2, ["a", "b"], 0, 2) == pytest.approx(2 * (1 + 2))  # one part: no pool
    assert wall_seconds(PARTS, 2.0, 2, ["a", "b", "c"], 0, 2) == 0.0  # all kept: nothing runs
    assert wall_seconds(PARTS, 2.0, 1, (), 0, 2) == pytest.approx(2 * 10)  # one process: one after another
    serial = Estimate(1e6, 10.0, "f", parts=PARTS.parts)  # not parallel however many workers
    assert wall_seconds(serial, 1.0, 2, (), 0, 2) == pytest.approx(10)


def test_other_processes_share_the_cores():
    assert contention(2, 0, 2) == 1 and contention(1, 1, 2) == 1  # all fit
    assert contention(2, 1, 2) == 1.5 and contention(1, 3, 2) == 2
    # the parallel part × 1.5 (2 workers + 1 other on 2 cores), before it (1 process) × 1
    assert wall_seconds(PARTS, 1.0, 2, (), 1, 2) == pytest.approx(1 + (POOL_START_S + 5) * 1.5)
    plain = Estimate(1e6, 10.0, "f")  # a run in one piece
    assert wall_seconds(plain, 1.5, 4, (), 3, 2) == pytest.approx(10 * 1.5 * 2)


def test_the_probe_scales_against_the_reference():
    cal = calibration_from(2 * REFERENCE_PROBE_US_PER_TURN)
    assert cal.factor == pytest.approx(2)
    est = calibrated(PARTS, cal, workers=2, skip=["a"], others=0, cores=2)
    assert est.seconds == pytest.approx(2 * (1 + POOL_START_S + 3)) and est.parts == ()
    assert est.bytes == PARTS.bytes and est.field == "f"
    assert calibrated(None, cal) is None


def test_the_probe_and_the_count_of_others_run_here():
    assert probe_us_per_turn(1) > 0  # ~190 turns of a real run (no assertion on how long)
    assert others_running() >= 0


def test_the_attention_store_estimate_follows_its_plan():
    sc = load_scenario(FLAGSHIP)
    est = mechanisms()[sc.kind].estimate(sc)
    p = plan(sc)
    assert [name for name, _ in est.parts] == [part.name for part in p.order()]  # the order they run in
    secs = dict(est.parts)
    for part in p.parts:  # each part's seconds in proportion to its cost (the pool's order)
        assert secs[part.name] / secs["lru"] == pytest.approx(part.cost / p.part("lru").cost)
    engine = costs.COMPILED if costs.compiled_runs(sc.trace_policy) else costs.REFERENCE
    assert secs[sc.trace_policy] / secs["truncation"] == pytest.approx(engine.record)  # same policy, recorded
    assert est.parallel and est.seconds > sum(secs.values())  # the workload is made before the parts
    small = mechanisms()[sc.kind].estimate(load_scenario(FLAGSHIP, ["workload.conversations=100"]))
    # a few ms of parts: not worth starting a pool for
    assert not worth_a_pool([s for _, s in small.parts], 2, False, small.dispatch)


def test_a_pool_is_used_when_it_saves_enough():
    # two equal parts of s: a pool takes start + dispatch + s, one process 2 s
    def edge(warm, dispatch):
        return POOL_MARGIN * ((0 if warm else POOL_START_S) + dispatch) / (2 - POOL_MARGIN)
    for warm in (False, True):
        for dispatch in (0.0, 0.3):
            s = edge(warm, dispatch)
            assert worth_a_pool([1.01 * s + 1e-9, 1.01 * s + 1e-9], 2, warm, dispatch)
            assert not worth_a_pool([0.99 * s, 0.99 * s], 2, warm, dispatch)
    assert edge(True, 0.0) == 0 and edge(True, 0.3) < edge(False, 0.3)  # a warm pool pays sooner
    assert not worth_a_pool([100.0, 100.0], 1, True, 0.0)  # one worker
    assert not worth_a_pool([100.0], 2, True, 0.0)  # one part


def test_no_pool_start_is_charged_for_a_warm_pool():
    sent = replace(PARTS, dispatch=0.6)  # sending the three parts: 0.2 s each
    assert wall_seconds(sent, 2.0, 2, (), 0, 2, warm=True) == pytest.approx(2 * (1 + 0.6 + 5))
    assert wall_seconds(sent, 2.0, 2, (), 0, 2) == pytest.approx(2 * (1 + POOL_START_S + 0.6 + 5))
    assert wall_seconds(sent, 2.0, 2, ["a"], 0, 2, warm=True) == pytest.approx(2 * (1 + 0.4 + 3))
    # 0.3 s of parts: worth a warm pool (1.25 × (0 + 0.2) ≤ 0.3), not one started for them
    small = Estimate(1e6, 0.3, "f", parts=(("a", 0.15), ("b", 0.15)), parallel=True)
    assert wall_seconds(small, 1.0, 2, (), 0, 2, warm=True) == pytest.approx(0.15)
    assert wall_seconds(small, 1.0, 2, (), 0, 2) == pytest.approx(0.3)


def test_run_parts_goes_to_a_pool_as_the_estimate_says(monkeypatch):
    import kvviz.runs as runs
    from kvviz.runs import Part, Plan
    calls = []
    monkeypatch.setattr(runs, "map_indexed", lambda fn, items, executor=None, n_workers=None, on_result=None:
                        calls.append((executor, n_workers)))
    monkeypatch.setenv("KVVIZ_WORKERS", "2")
    p = Plan((Part("a", "ka", cost=4.0), Part("b", "kb", cost=3.0), Part("c", "kc", cost=2.0)),
             prepare=lambda sc: None, run=None, combine=None, scale=lambda prep: 1.0, dispatch=0.3)
    warm = object()
    runs.run_parts(p, None, ["a", "b", "c"], print, pool=warm)  # 9 s of parts: to the warm pool
    runs.run_parts(p, None, ["a", "b", "c"], print)  # and to a pool of its own (None: map_indexed starts it)
    assert calls == [(warm, None), (None, None)]
    small = replace(p, scale=lambda prep: 0.1)  # 0.9 s: worth the warm pool only
    runs.run_parts(small, None, ["a", "b", "c"], print, pool=warm)
    runs.run_parts(small, None, ["a", "b", "c"], print)
    assert calls[2:] == [(warm, None), (None, 1)]
    monkeypatch.setenv("KVVIZ_WORKERS", "1")
    runs.run_parts(p, None, ["a", "b", "c"], print, pool=warm)  # one worker: in this process
    assert calls[4] == (None, 1)


def test_the_probe_times_the_reference_engine(monkeypatch):
    class Compiled:  # a compiled engine the probe must not run
        STORE_POLICIES = ("lru", "fifo")

        def Loop(self):
            raise AssertionError("the probe ran the compiled engine")
    monkeypatch.setattr(native, "engine", lambda: Compiled())
    with pytest.raises(AssertionError):  # what "auto" would run here
        serving.Run(*_probe_run_args(), engine="auto")
    assert probe_us_per_turn(1) > 0


def _probe_run_args():
    from kvviz.calibration import probe_scenario
    from kvviz.mechanisms.attention_store.parts import prepare
    sc = probe_scenario()
    return sc, prepare(sc), "lru", sc.serving.truncation, False


def test_the_compiled_engines_constants_are_picked_where_it_runs(monkeypatch):
    class Compiled:
        STORE_POLICIES = ("lru",)
    monkeypatch.setattr(native, "engine", lambda: Compiled())
    assert costs.compiled_runs("lru") and not costs.compiled_runs("belady")  # a policy not compiled: the reference
    sc = load_scenario(FLAGSHIP, ['policies=["lru","belady"]', 'trace_policy="lru"'])
    est = dict(mechanisms()[sc.kind].estimate(sc).parts)
    turns = est["workload"] / costs.WORKLOAD_S_PER_TURN["compiled"]
    assert est["lru"] == pytest.approx(turns * costs.COMPILED.run_s_per_turn * costs.COMPILED.record)
    assert est["belady"] == pytest.approx(turns * costs.REFERENCE.run_s_per_turn * costs.REFERENCE.policy["belady"])
    assert est["truncation"] == pytest.approx(turns * costs.COMPILED.run_s_per_turn)  # lru, unrecorded
    monkeypatch.setattr(native, "engine", lambda: None)  # not built, stale, or KVVIZ_ENGINE=python
    est = dict(mechanisms()[sc.kind].estimate(sc).parts)
    assert est["lru"] == pytest.approx(turns * costs.REFERENCE.run_s_per_turn * costs.REFERENCE.record)


def test_the_app_charges_no_pool_start_where_its_child_keeps_workers(monkeypatch):
    import kvviz.calibration as calibration
    from app import worker
    cal = calibration_from(2 * REFERENCE_PROBE_US_PER_TURN)
    monkeypatch.setattr(worker, "machine", lambda: cal)
    monkeypatch.setattr(calibration, "others_running", lambda samples=5: 0.0)
    monkeypatch.setenv("KVVIZ_WORKERS", "2")
    sc = load_scenario(FLAGSHIP)
    est = mechanisms()[sc.kind].estimate(sc)
    got = worker.SimulationRunner._estimate(None, sc, {})
    warm = worker.keeps_pool(2)
    assert got.seconds == pytest.approx(wall_seconds(est, 2.0, 2, (), 0, os.cpu_count() or 1, warm=warm))
    if warm:  # Linux, macOS: the parts go to the kept workers, no start paid
        assert got.seconds < calibrated(est, cal, 2, others=0).seconds


def test_the_cli_says_the_calibrated_time_of_what_its_cache_lacks(monkeypatch, capsys, tmp_path):
    import kvviz.calibration as calibration
    import kvviz.cli as cli
    from kvviz.runs import disk_cache
    SLOW = 16  # a machine this many times slower than the reference: the flagship takes ~20 s
    monkeypatch.setattr(calibration, "machine", lambda: calibration_from(SLOW * REFERENCE_PROBE_US_PER_TURN))
    monkeypatch.setattr(calibration, "others_running", lambda samples=5: 0.0)
    monkeypatch.setattr(cli, "simulate", lambda *a, **k: "ran")  # the estimate is what is tested, not the run
    monkeypatch.setenv("KVVIZ_WORKERS", "1")
    sc = load_scenario(FLAGSHIP)
    est = mechanisms()[sc.kind].estimate(sc)
    assert cli._simulate(sc, "flag.toml") == "ran"
    said = capsys.readouterr().err
    assert 10 <= SLOW * est.seconds < 120  # one process, SLOW× the reference: said in seconds
    assert f"flag.toml: simulating, about 0.3 GB of memory and {SLOW * est.seconds:.0f} s (estimated)" in said
    cache = disk_cache(str(tmp_path))
    p = plan(sc)
    for part in p.parts:
        if part.name != "workload":
            cache.put(part.key, "kept")
    cli._simulate(sc, "flag.toml", cache_dir=str(tmp_path))
    before = est.seconds - sum(s for _, s in est.parts)
    assert SLOW * (before + dict(est.parts)["workload"]) < 10  # only the workload's figures left: said nothing
    assert capsys.readouterr().err == ""
