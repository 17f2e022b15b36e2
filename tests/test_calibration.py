"""The time estimate's arithmetic (kvviz.calibration) on fixed figures: parts scheduled over
worker processes as a pool takes them, kept parts left out, the probe's factor and the cores'
contention; and the AttentionStore estimate held to its plan. No wall-clock assertions."""
from __future__ import annotations

from pathlib import Path

import pytest

from kvviz import load_scenario
from kvviz.calibration import (
    POOL_START_S,
    REFERENCE_PROBE_US_PER_TURN,
    calibrated,
    calibration_from,
    contention,
    makespan,
    others_running,
    probe_us_per_turn,
    wall_seconds,
)
from kvviz.mechanisms import mechanisms
from kvviz.mechanisms.attention_store.parts import RECORD_COST, plan
from kvviz.size_guard import Estimate

FLAGSHIP = Path(__file__).resolve().parent.parent / "scenarios" / "attention_store_sharegpt.toml"
PARTS = Estimate(1e6, 10.0, "f", parts=(("a", 4.0), ("b", 3.0), ("c", 2.0)), parallel=True)  # 1 s before them


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
    assert secs[sc.trace_policy] / secs["truncation"] == pytest.approx(RECORD_COST)  # same policy, recorded
    assert est.parallel and est.seconds > sum(secs.values())  # the workload is made before the parts
    small = mechanisms()[sc.kind].estimate(load_scenario(FLAGSHIP, ["workload.conversations=100"]))
    assert not small.parallel  # below PARALLEL_TURNS the parts run in the child itself


def test_the_cli_says_the_calibrated_time_of_what_its_cache_lacks(monkeypatch, capsys, tmp_path):
    import kvviz.calibration as calibration
    import kvviz.cli as cli
    from kvviz.runs import disk_cache
    monkeypatch.setattr(calibration, "machine", lambda: calibration_from(4 * REFERENCE_PROBE_US_PER_TURN))
    monkeypatch.setattr(calibration, "others_running", lambda samples=5: 0.0)
    monkeypatch.setattr(cli, "simulate", lambda *a, **k: "ran")  # the estimate is what is tested, not the run
    monkeypatch.setenv("KVVIZ_WORKERS", "1")
    sc = load_scenario(FLAGSHIP)
    est = mechanisms()[sc.kind].estimate(sc)
    assert cli._simulate(sc, "flag.toml") == "ran"
    said = capsys.readouterr().err
    assert 10 <= 4 * est.seconds < 120  # one process, 4× the reference: said in seconds
    assert f"flag.toml: simulating, about 0.3 GB of memory and {4 * est.seconds:.0f} s (estimated)" in said
    cache = disk_cache(str(tmp_path))
    p = plan(sc)
    for part in p.parts:
        if part.name != "workload":
            cache.put(part.key, "kept")
    cli._simulate(sc, "flag.toml", cache_dir=str(tmp_path))
    before = est.seconds - sum(s for _, s in est.parts)
    assert 4 * (before + dict(est.parts)["workload"]) < 10  # only the workload's figures left: said nothing
    assert capsys.readouterr().err == ""
