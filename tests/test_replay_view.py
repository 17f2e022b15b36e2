"""The app's cache-replay tab (app/replay_view.py), headless: the curve is kvviz.replay's."""
import pytest

pytest.importorskip("PySide6")

from app.replay_view import ReplayView  # noqa: E402

from .test_replay import GOLDEN  # noqa: E402


@pytest.fixture
def view(qtbot):
    v = ReplayView()
    qtbot.addWidget(v)
    v.resize(900, 600)
    v.show()
    yield v
    v.shutdown()


def run(view, qtbot):
    with qtbot.waitSignal(view.stopped, timeout=30_000):
        view.run()


def test_curve_per_policy_with_hand_checked_counts(view, qtbot, tmp_path):
    p = tmp_path / "golden.csv"
    p.write_text(GOLDEN)
    view.path.setText(str(p))
    view.capacities.setText("8, 10")
    run(view, qtbot)
    got = {(r.policy, r.capacity): r.misses for r in view.results}
    # the same hand-checked counts as tests/test_replay.py
    assert got == {("lru", 8): 7, ("lru", 10): 8, ("fifo", 8): 6, ("fifo", 10): 7, ("belady", 8): 6, ("belady", 10): 7}
    assert sorted(view.curves) == ["belady", "fifo", "lru"]
    assert view.curves["lru"].yData.tolist() == [7 / 9, 8 / 9]
    view.ratio_box.setCurrentText("byte miss ratio")
    assert view.curves["lru"].yData.tolist() == [33 / 41, 37 / 41]
    lines = view.csv_text().splitlines()
    assert lines[0] == "policy,capacity,requests,misses,request_miss_ratio,byte_miss_ratio" and len(lines) == 7
    assert "9 requests" in view.status.text() and view.save_btn.isEnabled()


def test_bad_trace_is_a_message_with_the_line(view, qtbot, tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("time,id,size\n1,a,4\n2,b,x\n")
    view.path.setText(str(p))
    run(view, qtbot)
    assert view.results == [] and f"{p}: line 3: size: expected a number" in view.status.text()
    view.capacities.setText("ten")
    p.write_text(GOLDEN)
    run(view, qtbot)
    assert view.results == [] and "expected a size" in view.status.text()


def test_no_policy_ticked_runs_nothing(view):
    for box in view.policy_boxes.values():
        box.setChecked(False)
    view.run()
    assert view.job is None and "at least one policy" in view.status.text()


def test_bundled_sample_auto_capacities(view, qtbot):
    assert view.path.text().endswith("zipf_20k.csv")
    view.policy_boxes["belady"].setChecked(False)
    run(view, qtbot)
    lru = [r for r in view.results if r.policy == "lru"]
    assert len(lru) == 12 and lru[-1].capacity == max(r.capacity for r in view.results)
    ratios = [r.request_miss_ratio for r in lru]
    assert ratios == sorted(ratios, reverse=True)  # LRU is a stack algorithm: more room never misses more


def test_cancel_stops_between_replays(view, qtbot):
    view.capacities.setText("auto")  # 36 replays of the 20,000-request sample
    with qtbot.waitSignal(view.stopped, timeout=60_000):
        view.run()
        qtbot.waitUntil(lambda: "/36 replays" in view.status.text(), timeout=30_000)
        view.cancel()
    assert view.results == [] and view.status.text() == "⚠ replay cancelled" and view.job is None
