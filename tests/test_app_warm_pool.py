"""The app's simulation child keeps its worker processes from edit to edit (started with the
child, before any request), and Cancel still ends the child and every worker it started."""
from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from kvviz import load_scenario
from kvviz.executor import worth_a_pool
from kvviz.mechanisms import mechanisms

from .conftest import wait_new_result

pytestmark = pytest.mark.gui

FLAGSHIP = Path(__file__).resolve().parent.parent / "scenarios" / "attention_store_sharegpt.toml"
# worth the child's warm pool (kvviz.executor.worth_a_pool): the flagship's seven parts, so the
# same choice as the flagship's at any size (every cost is per turn), on 10,520 turns
POOLED = ["workload.conversations=1800"]


@pytest.fixture
def two_workers(monkeypatch):
    """Before `window`: the runner gives its child as many workers as KVVIZ_WORKERS says."""
    monkeypatch.setenv("KVVIZ_WORKERS", "2")


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _workers(child: int) -> set[int]:
    try:
        return {p.pid for p in psutil.Process(child).children(recursive=True) if _alive(p.pid)}
    except psutil.NoSuchProcess:
        return set()


def _cpu(pids) -> float:
    return sum(sum(psutil.Process(p).cpu_times()[:2]) for p in pids)


def test_successive_runs_are_served_by_the_same_workers(two_workers, window, qtbot):
    runner = window.runner
    child = runner._proc.pid
    qtbot.waitUntil(lambda: len(_workers(child)) == 2, timeout=10_000)  # at the child's start
    pids = _workers(child)
    first = load_scenario(FLAGSHIP, POOLED)
    est = mechanisms()[first.kind].estimate(first)
    assert worth_a_pool([s for _, s in est.parts], 2, True, est.dispatch)  # else the parts would run in the child
    old = window.result
    for ratio in (0.5, 0.4):  # the second edit changes what every part reads: all seven run again
        before, before_child = _cpu(pids), _cpu([child])
        ran = runner.parts_run
        runner.submit(load_scenario(FLAGSHIP, [*POOLED, f"serving.truncation_ratio={ratio}"]))
        old = wait_new_result(qtbot, window, old)
        assert runner.parts_run == ran + 7 and runner._proc.pid == child
        assert _workers(child) == pids  # no pool started for the run, none left over
        assert _cpu(pids) - before > _cpu([child]) - before_child  # the parts ran there
    runner.shutdown()  # closing the window: the workers end with the child
    qtbot.waitUntil(lambda: not any(_alive(p) for p in {child, *pids}), timeout=10_000)


def test_cancel_ends_the_child_and_its_workers(two_workers, window, qtbot):
    runner = window.runner
    child = runner._proc.pid
    qtbot.waitUntil(lambda: len(_workers(child)) == 2, timeout=10_000)
    stopped = {child, *_workers(child)}
    idle = _cpu(stopped - {child})
    # 20,000 conversations (~3 s of parts): with 1,800 the whole run took 0.7 s and could end
    # between the workers' first CPU tick and the cancel, which would then have nothing to stop
    runner.submit(load_scenario(FLAGSHIP, ["workload.conversations=20000"]))
    qtbot.waitUntil(lambda: _cpu(stopped - {child}) > idle, timeout=30_000)  # the workers are running parts
    assert runner.busy()  # else the cancel below tests nothing
    runner.cancel()
    assert not runner.busy()
    qtbot.waitUntil(lambda: not any(_alive(p) for p in stopped), timeout=10_000)
    # the fresh child starts in the background (the GUI thread never waits for a fork)
    qtbot.waitUntil(lambda: runner._proc is not None and runner._proc.pid is not None, timeout=10_000)
    fresh = runner._proc.pid
    assert fresh != child
    qtbot.waitUntil(lambda: len(_workers(fresh)) == 2, timeout=10_000)  # a fresh pool, before any request
    assert not _workers(fresh) & stopped


def test_an_edit_during_a_run_goes_to_the_spare_child_whose_workers_are_up(two_workers, window, qtbot):
    """Issue 33, item 8: a run ends, a spare child starts (its workers with it); an edit that
    cancels the next run is served by that spare, not by a child started then; closing ends
    the spare and its workers too."""
    runner = window.runner
    qtbot.waitUntil(lambda: runner._spare is not None and runner._spare[0].pid is not None, timeout=10_000)
    spare = runner._spare[0].pid
    qtbot.waitUntil(lambda: len(_workers(spare)) == 2, timeout=10_000)  # up before any request
    spare_workers = _workers(spare)
    old = window.result
    runner.submit(load_scenario(FLAGSHIP, ["workload.conversations=1800"]))
    first = runner._proc.pid
    assert runner.busy() and first != spare
    runner.submit(load_scenario(FLAGSHIP, ["workload.conversations=1700"]))  # cancels the run in flight
    assert runner._proc.pid == spare  # taken at once: no child started for it
    qtbot.waitUntil(lambda: not _alive(first), timeout=10_000)
    wait_new_result(qtbot, window, old)
    assert window.result.metrics["conversations"] == 1700
    qtbot.waitUntil(lambda: runner._spare is not None and runner._spare[0].pid is not None, timeout=10_000)
    again = runner._spare[0].pid
    assert again not in (spare, first)
    runner.shutdown()
    qtbot.waitUntil(lambda: not any(_alive(p) for p in {spare, again, *spare_workers}), timeout=10_000)


def test_cores_short_when_the_workers_would_share_the_cores(monkeypatch):
    import kvviz.calibration as calibration
    from app.worker import cores_short
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    monkeypatch.setattr(calibration, "others_running", lambda samples=5: 0.0)
    assert not cores_short(2) and not cores_short(1)  # idle cores: every part at once
    monkeypatch.setattr(calibration, "others_running", lambda samples=5: 1.0)  # one busy core
    assert cores_short(2) and not cores_short(1)  # one worker runs them in order anyway


def test_needed_first_draws_the_recorded_policy_alone_before_the_others(two_workers, window, qtbot):
    """With the needed parts alone first, the first partial result holds the recorded policy's
    run and no other (none had started); the whole run still ends as the CLI's."""
    from kvviz import simulate
    partials = []
    window.runner.partial.connect(lambda r, done, total: partials.append(list(r.metrics["policies"])))
    window.runner.needed_first = True
    sc = load_scenario(FLAGSHIP, [*POOLED, "serving.compare_truncation=true"])
    old = window.result
    window.runner.submit(sc)
    final = wait_new_result(qtbot, window, old)
    assert partials and partials[0] == [sc.trace_policy]
    assert final.to_json() == simulate(sc).to_json()
