"""The app's cache-replay tab (app/replay_view.py), headless: the curve is kvviz.replay's."""
import pytest

pytest.importorskip("PySide6")
pytestmark = pytest.mark.gui

from app.views.replay import ReplayView  # noqa: E402

from .test_replay import GOLDEN  # noqa: E402


@pytest.fixture
def view(qtbot):
    v = ReplayView()
    qtbot.addWidget(v)
    v.resize(900, 600)
    v.show()
    yield v
    v.shutdown()


def golden_in(view, tmp_path, policies):
    """The hand-checked golden trace chosen, at capacities 8 and 10 B, with these policies ticked."""
    p = tmp_path / "golden.csv"
    p.write_text(GOLDEN)
    view.path.setText(str(p))
    view.capacities.setText("8, 10")
    view.tick(policies)


def run(view, qtbot):
    with qtbot.waitSignal(view.stopped, timeout=30_000):
        view.run()


def test_curve_per_policy_with_hand_checked_counts(view, qtbot, tmp_path):
    golden_in(view, tmp_path, ["lru", "fifo", "belady"])
    run(view, qtbot)
    got = {(r.policy, r.capacity): r.misses for r in view.results}
    # the same hand-checked counts as tests/test_replay.py
    assert got == {("lru", 8): 7, ("lru", 10): 8, ("fifo", 8): 6, ("fifo", 10): 7, ("belady", 8): 6, ("belady", 10): 7}
    assert sorted(view.curves) == ["belady", "fifo", "lru"]
    assert view.curves["lru"].yData.tolist() == [7 / 9, 8 / 9]
    view.ratio_box.setCurrentText("byte miss ratio")
    assert view.curves["lru"].yData.tolist() == [33 / 41, 37 / 41]
    lines = view.csv_text().splitlines()
    assert lines[0] == "policy,capacity,requests,misses,request_miss_ratio,byte_miss_ratio,engine" and len(lines) == 7
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
    view.tick([])
    view.run()
    assert view.job is None and "at least one policy" in view.status.text()


def test_bundled_sample_auto_capacities(view, qtbot):
    assert view.path.text().endswith("zipf_20k.csv")
    view.tick(["lru", "fifo"])
    run(view, qtbot)
    lru = [r for r in view.results if r.policy == "lru"]
    assert len(lru) == 12 and lru[-1].capacity == max(r.capacity for r in view.results)
    ratios = [r.request_miss_ratio for r in lru]
    assert ratios == sorted(ratios, reverse=True)  # LRU is a stack algorithm: more room never misses more


def test_cancel_stops_between_replays(view, qtbot):
    from PySide6.QtCore import Qt
    view.capacities.setText("auto")  # 36 replays of the 20,000-request sample
    view.tick(["lru", "fifo", "belady"])
    arrived = []

    def cancel_at_14(i, r):  # in the worker thread, as the 14th point is delivered: no race with the run
        arrived.append(i)
        if len(arrived) == 14:
            view.job.cancelled = True
    view.point.connect(cancel_at_14, Qt.DirectConnection)
    run(view, qtbot)
    # the points computed before Cancel stay drawn (each is final); the rest never come
    done = [r for r in view.results if r is not None]
    assert len(done) == 14 and view.status.text() == "⚠ replay cancelled" and view.job is None
    assert sum(len(c.xData) for c in view.curves.values()) == 14 and not view.save_btn.isEnabled()


def test_points_drawn_as_they_arrive(view, qtbot):
    """Each replay's point reaches the plot before the run ends (one-pass LRU first, then one
    at a time)."""
    view.tick(["lru", "fifo"])
    view.engine_box.setCurrentText("python")
    drawn = []
    view.point.connect(lambda i, r: drawn.append((sum(len(c.xData) for c in view.curves.values()),
                                                  view.job is not None)))
    run(view, qtbot)
    assert drawn == [(n, True) for n in range(1, 25)]  # one more point on the plot each time, mid-run
    assert sum(len(c.xData) for c in view.curves.values()) == 24


def test_any_policy_from_the_list_with_descriptions(view, qtbot):
    pytest.importorskip("libcachesim")
    items = view.policy_boxes
    assert len(items) >= 25 and "S3-FIFO" in items["s3fifo"].toolTip() and "s3fifo  ·  " in items["s3fifo"].text()
    assert set(view.ticked()) == {"lru", "fifo", "belady", "s3fifo", "sieve"}
    view.tick(["arc", "lirs"])
    view.capacities.setText("auto")
    run(view, qtbot)
    assert sorted(view.curves) == ["arc", "lirs"] and {r.engine for r in view.results} == {"libcachesim"}


@pytest.mark.slow  # the bundled 20,000-request trace, every default policy
def test_opens_with_the_bundled_curve_drawn(qtbot):
    v = ReplayView()
    qtbot.addWidget(v)
    v.show()
    with qtbot.waitSignal(v.stopped, timeout=30_000):
        v.draw_sample_once()  # what the window does when the tab is first shown
    expect = ["belady", "fifo", "lru", "s3fifo", "sieve"] if "s3fifo" in v.policy_boxes else ["belady", "fifo", "lru"]
    assert sorted(v.curves) == expect
    assert all(len(c.xData) == 12 for c in v.curves.values())
    v.draw_sample_once()
    assert v.job is None  # once only
    v.shutdown()


def test_csv_fields_read_a_headerless_tab_separated_trace(view, qtbot, tmp_path):
    rows = [line.split(",") for line in GOLDEN.strip().splitlines()[1:]]  # time,id,size
    p = tmp_path / "golden.tsv"
    p.write_text("".join(f"{s}\t{k}\t{t}\n" for t, k, s in rows))      # size, id, time; no header
    view.path.setText(str(p))
    view.capacities.setText("8, 10")
    view.tick(["lru"])
    run(view, qtbot)
    assert view.results == [] and "line 1" in view.status.text() and "CSV fields id=N" in view.status.text()
    view.fields.setText("id=2,size=1,time=3")
    run(view, qtbot)
    assert {(r.policy, r.capacity): r.misses for r in view.results} == {("lru", 8): 7, ("lru", 10): 8}
    view.fields.setText("size=1")
    run(view, qtbot)
    assert "CSV fields: name the id field" in view.status.text()
    assert len(view.results) == 2  # the last good curve stays on screen under the message


def test_a_sampled_curve_says_so_in_the_legend(view, qtbot, tmp_path):
    golden_in(view, tmp_path, ["lru", "fifo"])
    view.sample_rate.setText("0.5")
    run(view, qtbot)
    names = [label.text for _, label in view.legend.items]
    # libCacheSim warns that an object of 9 B is larger than the 8-B cache: said beside fifo's curve
    fifo = "fifo ⚠ libCacheSim warned" if view.results[0].engine == "libcachesim" else "fifo"
    assert sorted(names) == [fifo, "lru (SHARDS R=0.5 stack distances)"]
    assert {r.engine for r in view.results if r.policy == "lru"} == {"SHARDS R=0.5 stack distances"}
    view.sample_rate.setText("2")
    run(view, qtbot)
    assert "(0, 1]" in view.status.text() and len(view.results) == 4  # the last good curves stay


def test_replays_run_where_run_on_says(view, qtbot, tmp_path):
    golden_in(view, tmp_path, ["fifo"])
    view.run_on.setCurrentText("carrier-pigeon")
    run(view, qtbot)
    assert view.results == [] and "--executor: unknown executor 'carrier-pigeon'" in view.status.text()
    view.run_on.setCurrentText("local")
    run(view, qtbot)
    assert {(r.policy, r.capacity): r.misses for r in view.results} == {("fifo", 8): 6, ("fifo", 10): 7}


def test_a_bad_input_keeps_the_last_curves_and_return_runs(view, qtbot, tmp_path):
    """A typo in the capacities emptied the plot (seen in a real window); the Sweep tab keeps its
    chart under an error, and so does this tab now."""
    golden_in(view, tmp_path, ["lru", "fifo"])
    run(view, qtbot)
    kept = [(r.policy, r.capacity, r.misses) for r in view.results]
    view.capacities.setText("abc")
    with qtbot.waitSignal(view.stopped, timeout=30_000):
        view.capacities.returnPressed.emit()
    assert "⚠" in view.status.text() and "expected a size" in view.status.text()
    assert [(r.policy, r.capacity, r.misses) for r in view.results] == kept and sorted(view.curves) == ["fifo", "lru"]
    view.capacities.setText("10")
    run(view, qtbot)  # a good run replaces them
    assert sorted((r.policy, r.capacity) for r in view.results) == [("fifo", 10), ("lru", 10)]


def test_an_edit_after_a_run_says_the_curves_are_the_last_runs(view, qtbot, tmp_path):
    """Editing the trace path after a run left the old curves with no word (seen in a real
    window), and a figure's caption named the edited, never-run trace."""
    golden_in(view, tmp_path, ["lru"])
    run(view, qtbot)
    done = view.status.text()
    assert "9 requests" in done and view.figure_note() == "miss-ratio curves of golden.csv"
    view.path.setText(str(tmp_path / "other.csv"))
    assert "edited since the curves were drawn" in view.status.text() and "golden.csv" in view.status.text()
    assert view.figure_note() == "miss-ratio curves of golden.csv" and sorted(view.curves) == ["lru"]
    view.path.setText(str(tmp_path / "golden.csv"))  # back as it was: the run's own line again
    assert view.status.text() == done
    view.tick(["lru", "fifo"])  # a policy ticked is an edit too
    assert "edited since" in view.status.text()
    run(view, qtbot)
    assert "edited since" not in view.status.text() and sorted(view.curves) == ["fifo", "lru"]
