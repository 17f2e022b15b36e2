"""The app draws a run made of parts as they end (the recorded policy's first), keeps the parts
in memory and re-runs only those an edit changed (counted on the runner)."""
from __future__ import annotations

from pathlib import Path

import pytest

from kvviz import load_scenario, simulate

from .conftest import wait_new_result

pytestmark = pytest.mark.gui

FLAGSHIP = Path(__file__).resolve().parent.parent / "scenarios" / "attention_store_sharegpt.toml"
SMALL = ["workload.conversations=150", "serving.compare_truncation=true"]


def test_partials_start_with_the_recorded_policy_and_end_as_the_whole_run(window, qtbot):
    partials = []
    window.runner.partial.connect(lambda r, done, total: partials.append((r, done, total, window.status.text())))
    sc = load_scenario(FLAGSHIP, SMALL)
    old = window.result
    window.runner.submit(sc)
    final = wait_new_result(qtbot, window, old)
    assert partials, "no partial result reached the window"
    first, done, total, _ = partials[0]
    assert sc.trace_policy in first.metrics["policies"] and len(first.trace.spans) > 0
    assert total == 7 and done < total  # the workload, five policies, the truncation run
    assert [p[1] for p in partials] == sorted(p[1] for p in partials)
    assert window.status.text() != partials[-1][3]  # the final status replaced "k of n parts done"
    assert final.to_json() == simulate(sc).to_json()  # as the CLI computes it, checks included


def test_a_display_only_edit_runs_nothing_and_a_one_policy_edit_runs_one(window, qtbot):
    base = ["workload.conversations=120", "serving.arrivals=conversation_poisson", "store.lookahead=job_list",
            "serving.compare_truncation=false", "trace_policy=lru"]
    runner = window.runner
    old = window.result
    runner.submit(load_scenario(FLAGSHIP, base))
    old = wait_new_result(qtbot, window, old)
    count = runner.parts_run
    runner.submit(load_scenario(FLAGSHIP, [*base, 'name="renamed"']))
    r = wait_new_result(qtbot, window, old)
    assert runner.parts_run == count and r.scenario.name == "renamed" and runner.last_reused == 7 - 1
    assert "reused (6 parts)" in window.status.text() and "simulated in" not in window.status.text()
    runner.submit(load_scenario(FLAGSHIP, [*base, "store.lookahead_horizon_s=900"]))
    r2 = wait_new_result(qtbot, window, r)
    assert runner.parts_run == count + 2  # scheduler_aware and belady read the look-ahead horizon
    runner.submit(load_scenario(FLAGSHIP, [*base, "store.lookahead_horizon_s=900", "serving.detail_job=4"]))
    wait_new_result(qtbot, window, r2)
    assert runner.parts_run == count + 3  # only the recorded run draws the picked job


def test_cancel_after_a_partial_says_what_is_shown(window, qtbot):
    # The cancel is made in the first partial's own slot, as a user clicking at once would: the
    # test waited for the signal and cancelled after it before, and lost the race on a fast
    # machine when the other parts' arrivals were handled in the same turn of the event loop.
    # A partial is only sent while parts are missing, so the run is still going when it lands.
    sc = load_scenario(FLAGSHIP, ["workload.conversations=400"])
    cancelled = []

    def cancel_once(result, done, total):
        if not cancelled:
            cancelled.append((done, total))
            window.runner.cancel()

    window.runner.partial.connect(cancel_once)
    try:
        window.runner.submit(sc)
        qtbot.waitUntil(lambda: bool(cancelled), timeout=60_000)
    finally:
        window.runner.partial.disconnect(cancel_once)
    done, total = cancelled[0]
    assert done < total and not window.runner.busy()
    assert window.status.text() == f"⚠ cancelled: the {done} of {total} parts that had ended are shown"
    qtbot.wait(300)  # anything the child sent before it stopped is dropped, not shown
    assert window.status.text().startswith("⚠ cancelled: the ")


def test_the_estimate_counts_only_the_parts_sent(window, qtbot, monkeypatch):
    import app.worker as worker
    import kvviz.calibration as calibration
    from kvviz.mechanisms import mechanisms
    monkeypatch.setattr(worker, "machine", lambda: calibration.calibration_from(calibration.REFERENCE_PROBE_US_PER_TURN))
    monkeypatch.setattr(calibration, "others_running", lambda samples=3: 0.0)  # no other load: fixed figures
    base = ["workload.conversations=120", "serving.arrivals=conversation_poisson", "store.lookahead=job_list",
            "serving.compare_truncation=false", "trace_policy=lru"]
    runner = window.runner
    sc = load_scenario(FLAGSHIP, base)
    runner.submit(sc)
    whole = runner.estimate.seconds
    assert whole == pytest.approx(mechanisms()[sc.kind].estimate(sc).seconds)  # small: one process, all of it
    assert window.status.text().startswith("simulating…")
    old = wait_new_result(qtbot, window, window.result)
    sc2 = load_scenario(FLAGSHIP, [*base, "store.lookahead_horizon_s=900"])
    runner.submit(sc2)
    assert window.status.text().startswith("simulating 2 of 6 parts (the others unchanged)…")
    est = mechanisms()[sc.kind].estimate(sc2)
    parts = dict(est.parts)
    before = est.seconds - sum(parts.values())  # making the workload, in the child before its parts
    assert runner.estimate.seconds == pytest.approx(before + parts["scheduler_aware"] + parts["belady"])
    assert runner.estimate.seconds < whole
    wait_new_result(qtbot, window, old)
