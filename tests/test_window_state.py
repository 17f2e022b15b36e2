"""The window keeps what the user made: rung overrides across a Ladder edit, the timeline's
zoom across re-runs, the docks' widths under a long hover line; and it never shows one
scenario's leftovers beside another's parameters (issue 12, "data loss and broken layout")."""
import pytest

pytest.importorskip("PySide6")
pytestmark = pytest.mark.gui

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402

from .conftest import SCENARIOS, exported, wait_new_result  # noqa: E402

SMALL_STORE = ('kind = "attention_store"\npolicies = ["recompute", "scheduler_aware"]\n'
               '[workload]\nconversations = {n}\n[serving]\ncompare_truncation = false\n')


def _open(window, qtbot, path):
    old = window.result
    assert window.open(str(path))
    return wait_new_result(qtbot, window, old)


def test_ladder_drag_keeps_every_rungs_overrides(window, qtbot, tmp_path):
    first = _open(window, qtbot, SCENARIOS / "ladder_simulated.toml")
    overrides = [r["overrides"] for r in window.panel.data()["rungs"]]
    assert any(overrides)
    window.show_view("ladder")
    window.tab("ladder").ladder.drag_rung(0, 52.5, finish=True)
    r = wait_new_result(qtbot, window, first)
    rungs = window.panel.data()["rungs"]
    assert [x["overrides"] for x in rungs] == overrides
    assert rungs[0]["hbm_hit_pct"] == 52.5 and [x["hbm_hit_pct"] for x in rungs[1:]] == [80, 87, 93, 97]
    # the simulated rungs still differ from each other (they collapsed to one value before)
    assert len({m["simulated"]["hbm_hit_pct"] for m in r.metrics["rungs"]}) == 5
    window.panel.save(str(tmp_path / "saved.toml"))
    assert (tmp_path / "saved.toml").read_text().count("overrides = [") == 5


def test_a_long_hover_line_never_squeezes_the_docks(window, qtbot):
    params = window.findChild(type(window.metrics_dock), "dock-parameters")
    qtbot.wait(50)
    before = (params.width(), window.metrics_dock.width(), window.width())
    window.view("timeline").info.setText("GPU · prefill + decode: compute 1.0–2.0 s — " + "conversation 123 turn 4; " * 40)
    window.status.setText("⚠ " + "a very long message " * 40)
    qtbot.wait(50)
    assert (params.width(), window.metrics_dock.width(), window.width()) == before
    assert window.view("timeline").info.toolTip()  # the whole line stays readable


def test_reset_layout_restores_the_default_dock_widths(window, qtbot):
    params = window.findChild(type(window.metrics_dock), "dock-parameters")
    qtbot.wait(50)
    default = params.width()
    window.resizeDocks([params], [window.panel.minimumWidth()], Qt.Horizontal)
    qtbot.wait(50)
    assert params.width() < default - 20
    params.hide()
    window.act_reset_layout.trigger()
    qtbot.wait(50)
    assert params.isVisible() and abs(params.width() - default) <= 2


def test_docks_get_their_width_back_when_the_window_grows_again(window, qtbot):
    """In a real window: made 900 px wide and 1400 again, the docks stayed squeezed (Qt gives a
    growing window's room to the centre) and that layout came back on the next launch."""
    params = window.findChild(type(window.metrics_dock), "dock-parameters")
    qtbot.wait(50)
    before = (params.width(), window.metrics_dock.width())
    window.resize(900, 600)  # (or its minimum width)
    qtbot.wait(100)
    assert params.width() + window.metrics_dock.width() < sum(before) - 20  # squeezed
    window.resize(1280, 800)
    qtbot.waitUntil(lambda: abs(params.width() - before[0]) <= 2 and abs(window.metrics_dock.width() - before[1]) <= 2,
                    timeout=2000)
    # a width the user drags to is the one it returns to
    window.resizeDocks([params], [before[0] + 60], Qt.Horizontal)
    qtbot.wait(50)
    dragged = params.width()
    window.resize(900, 600)
    qtbot.wait(50)
    window.resize(1280, 800)
    qtbot.waitUntil(lambda: abs(params.width() - dragged) <= 2, timeout=2000)


def test_the_metrics_dock_narrows_again_after_a_kind_with_wide_tables(window, qtbot, tmp_path):
    qtbot.wait(50)
    narrow = window.metrics_dock.width()
    store = tmp_path / "store.toml"
    store.write_text(SMALL_STORE.format(n=20))
    _open(window, qtbot, store)
    qtbot.wait(50)
    wide = window.metrics_dock.width()
    _open(window, qtbot, SCENARIOS / "rope_prefetch_16.toml")
    qtbot.waitUntil(lambda: abs(window.metrics_dock.width() - narrow) <= 2, timeout=2000)
    assert wide >= narrow  # (wider when the kind's tables need it)


def test_timeline_zoom_survives_an_edit_but_not_a_new_scenario(window, qtbot):
    vb = window.view("timeline").plot.getPlotItem().getViewBox()
    vb.setXRange(100.0, 150.0, padding=0)  # µs, in the 16-token example's 0-400 µs run
    old = window.result
    window.panel.set_value("storage.latency_us", 30)
    window.panel.flush()
    r = wait_new_result(qtbot, window, old)
    assert r.metrics["naive_stall_us"] == 480.0
    assert vb.viewRange()[0] == pytest.approx([100.0, 150.0])
    window.show_view("occupancy")  # the linked view, drawn now, keeps it too
    assert vb.viewRange()[0] == pytest.approx([100.0, 150.0])
    window.show_view("timeline")
    _open(window, qtbot, SCENARIOS / "ladder_simulated.toml")
    lo, hi = vb.viewRange()[0]
    assert lo <= 0 and hi * window.view("timeline").scale >= window.result.trace.t_end  # the whole new run


def test_counters_follow_the_timelines_zoom_and_cursor_and_keep_their_own(window, qtbot):
    tl = window.view("timeline")
    tl.viewbox.setXRange(20.0, 60.0, padding=0)  # µs
    tl.place_cursor(26_000, snap=False)
    window.show_view("counters")
    cnt = window.view("counters")
    qtbot.wait(20)
    assert all(p.getViewBox().viewRange()[0] == pytest.approx([20.0, 60.0]) for p in cnt.plots)
    assert all(c.isVisible() and c.value() == pytest.approx(26.0) for c in cnt.cursors)
    cnt.plots[-1].setXRange(100.0, 200.0, padding=0)  # zoomed here: the timeline and the kept range follow
    assert tl.viewbox.viewRange()[0] == pytest.approx([100.0, 200.0])
    assert window.time_range.ns == pytest.approx((100_000, 200_000))
    old = window.result
    window.panel.set_value("storage.latency_us", 30)  # a re-run, drawn while Counters shows
    window.panel.flush()
    wait_new_result(qtbot, window, old)
    qtbot.wait(20)
    assert cnt.plots[0].getViewBox().viewRange()[0] == pytest.approx([100.0, 200.0])
    window.show_view("timeline")
    assert tl.viewbox.viewRange()[0] == pytest.approx([100.0, 200.0])
    window.show_view("counters")
    window.act_whole_run.trigger()  # Home on the Counters tab
    lo, hi = cnt.plots[0].getViewBox().viewRange()[0]
    assert lo <= 0 and hi >= window.result.trace.t_end / cnt.scale


def test_engram_opens_on_the_first_steps_window_and_home_shows_the_whole_run(window, qtbot):
    r = _open(window, qtbot, SCENARIOS / "engram_qwen3_32b_rdma.toml")
    vb = window.view("timeline").plot.getPlotItem().getViewBox()
    lo, hi = (v * window.view("timeline").scale for v in vb.viewRange()[0])
    fetch = r.trace.spans_of("RDMA pool → GPU (P2P) · L2 rows", "fetch")[0]
    assert lo <= 0 and fetch["end"] < hi < 400_000  # the fetch against the window, not 14 ms
    window.act_whole_run.trigger()
    lo, hi = (v * window.view("timeline").scale for v in vb.viewRange()[0])
    assert lo <= 0 and hi >= r.trace.t_end


def test_tabs_that_have_nothing_for_a_kind_are_disabled_saying_why(window, qtbot):
    _open(window, qtbot, SCENARIOS / "engram_qwen3_32b_cxl.toml")
    for name in ("ladder", "rope_bound"):
        i = window.tab_list.index(window.tab(name))
        assert not window.tabs.isTabEnabled(i) and window.tabs.tabToolTip(i)
    _open(window, qtbot, SCENARIOS / "ladder_seed.toml")
    assert all(window.tabs.isTabEnabled(window.tab_list.index(window.tab(n))) for n in ("ladder", "rope_bound"))


def test_a_pick_that_no_longer_exists_falls_back(window, qtbot, tmp_path):
    f = tmp_path / "as.toml"
    f.write_text(SMALL_STORE.format(n=40))
    _open(window, qtbot, f)
    window.show_view("timeline")  # (a policy comparison opens on the Policies tab)
    old = window.result
    from kvviz.mechanisms.attention_store import GPU_LANE
    window.view("timeline").picked.emit(GPU_LANE, 120)
    picked = wait_new_result(qtbot, window, old)
    # the pick is a view action (issue 22): the run draws job 120, the scenario is not edited
    assert "detail_job" not in window.panel.data().get("serving", {}) and picked.metrics["detail"]["turn_row"] == 120
    window.panel.set_value("workload.conversations", 5)  # far fewer than 120 turns
    window.panel.flush()
    r = wait_new_result(qtbot, window, picked)
    assert window.panel.data().get("serving", {}).get("detail_job", -1) == -1 and not window._view_values
    assert r.scenario.workload.conversations == 5
    assert "serving.detail_job" in window.status.text() and "does not exist" in window.status.text()
    lo, hi = window.view("timeline").plot.getPlotItem().getViewBox().viewRange()[0]  # not the vanished job's zoom
    assert lo <= 0 and hi * window.view("timeline").scale >= r.trace.t_end


def test_a_run_refused_at_a_field_is_marked_there(window, qtbot, tmp_path):
    f = tmp_path / "as.toml"
    f.write_text(SMALL_STORE.format(n=5) + "detail_job = 500\n")
    old = window.result
    window.open(str(f))
    qtbot.waitUntil(lambda: not window.runner.busy(), timeout=30_000)
    assert window.result is old  # nothing ran: the file's own pick is the user's to fix
    assert "does not exist" in window.panel.error_text("serving.detail_job")


def test_scenario_picker_follows_the_open_file(window, qtbot, tmp_path):
    seed = window.picker.currentText()
    assert seed == "rope_prefetch_16"
    window.panel.set_value("storage.latency_us", 30)  # unsaved
    window.ask_unsaved = lambda: QMessageBox.Cancel
    i = window.picker.findText("ladder_seed")
    window.picker.setCurrentIndex(i)
    window.picker.activated.emit(i)
    assert window.picker.currentText() == seed and window.panel.path().endswith("rope_prefetch_16.toml")
    window.ask_unsaved = lambda: QMessageBox.Discard
    mine = tmp_path / "mine.toml"
    mine.write_text((SCENARIOS / "rope_prefetch_16.toml").read_text())
    _open(window, qtbot, mine)
    assert window.picker.currentText() == "mine.toml" and window.picker.currentData() == str(mine)


def test_new_scenario_clears_the_previous_ones_leftovers(window, qtbot, tmp_path):
    window.tab("compare").pin()
    window.view("timeline").info.setText("flash · prefetch + demand: fetch 0.000–25.000 µs")
    window.view("sweep").configure([("storage.latency_us", "10,20")], "speedup")
    window.show_view("sweep")
    with qtbot.waitSignal(window.view("sweep").finished, timeout=60_000):
        window.view("sweep").run()
    assert window.view("sweep").result is not None
    window.show_view("timeline")
    f = tmp_path / "as.toml"
    f.write_text(SMALL_STORE.format(n=20))
    old = window.result
    window.open(str(f))
    # while the new run is pending, the window says the views are the previous scenario's
    assert window.stale_note.isVisible() and "rope_prefetch_16" in window.stale_note.text()
    wait_new_result(qtbot, window, old)
    assert not window.stale_note.isVisible()
    window.show_view("timeline")  # (a policy comparison opens on the Policies tab)
    assert window.view("timeline").info.text().strip() == ""
    assert window.view("compare").pinned is None  # A was another kind of run: nothing to line up
    assert window.view("sweep").result is None and not window.view("sweep").plot.getPlotItem().listDataItems()
    assert window.view("sweep").p1.currentText() != "storage.latency_us"


def test_an_invalid_file_opens_with_its_values_and_the_field_marked(window, qtbot, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('kind = "rope_window"\n[cache]\nslots = 0\n[storage]\nlatency_us = 7\n')
    assert window.open(str(bad))
    assert window.panel.path() == str(bad)
    assert window.panel.data()["storage"]["latency_us"] == 7
    assert window.panel.error_text("cache.slots")
    assert "cache.slots" in window.status.text()
    assert window.stale_note.isVisible()  # the old result is not this file's
    old = window.result
    window.panel.set_value("cache.slots", 8)  # fixed where it is shown
    window.panel.flush()
    r = wait_new_result(qtbot, window, old)
    assert r.scenario.storage.latency_us == 7 and not window.stale_note.isVisible()


@pytest.mark.slow  # the bundled 20,000-request trace, every default policy
def test_the_replay_tab_opens_with_the_bundled_curves_drawn(window, qtbot):
    with qtbot.waitSignal(window.view("replay").finished, timeout=60_000):
        window.show_view("replay")
    from app.views.replay import DEFAULT_POLICIES
    assert {r.policy for r in window.view("replay").results} == set(DEFAULT_POLICIES)
    assert window.view("replay").plot.getPlotItem().listDataItems()


def test_a_run_too_large_is_refused_at_its_field_with_the_estimate(window, qtbot):
    old = window.result
    window.panel.set_value("sequence.length", 19_000_000)
    window.panel.flush()
    qtbot.waitUntil(lambda: "too large" in window.panel.error_text("sequence.length"), timeout=30_000)
    assert "GB of memory" in window.panel.error_text("sequence.length") and window.result is old


def test_compare_lines_up_a_and_b_when_their_lane_names_differ(window, qtbot):
    _open(window, qtbot, SCENARIOS / "ladder_seed.toml")
    window.tab("compare").pin()
    _open(window, qtbot, SCENARIOS / "ladder_simulated.toml")  # same kind: A stays pinned
    window.show_view("compare")
    qtbot.wait(50)
    a, b = window.view("compare").a, window.view("compare").b
    assert window.view("compare").pinned is not None
    assert a.result.trace.lanes["name"].tolist() != b.result.trace.lanes["name"].tolist()
    def plot_left(view):  # where the time axis starts, in window coordinates
        corner = view.plot.getPlotItem().getViewBox().sceneBoundingRect().topLeft()
        return view.plot.mapTo(window, view.plot.mapFromScene(corner)).x()
    assert plot_left(a) == plot_left(b)
    # and the names fit: the column was once taken from a hidden axis's stale 35 px, and empty
    from PySide6.QtGui import QFontMetrics
    fm = QFontMetrics(a.lane_axis.font())
    longest = max(fm.horizontalAdvance(n) for v in (a, b) for n in v.lane_axis.names)
    assert a.lane_axis.width() == b.lane_axis.width() >= min(longest, 120)  # (at most 30% of the plot)
    shown = a.lane_axis.tickStrings(range(len(a.lane_axis.names)), 1, 1)
    assert all(shown) and all(fm.horizontalAdvance(t) <= a.lane_axis.width() for t in shown)


def test_an_edit_after_save_as_is_no_new_scenario(window, qtbot, tmp_path):
    window.view("sweep").configure([("storage.latency_us", "10,20")], "speedup")
    window.show_view("sweep")
    with qtbot.waitSignal(window.view("sweep").finished, timeout=60_000):
        window.view("sweep").run()
    window.show_view("timeline")
    window.panel.save(str(tmp_path / "copy.toml"))  # as Save As does
    old = window.result
    window.panel.set_value("storage.latency_us", 30)
    window.panel.flush()
    wait_new_result(qtbot, window, old)
    assert window.view("sweep").result is not None and window.view("sweep").p1.currentText() == "storage.latency_us"


def test_a_long_run_says_its_estimate_while_it_runs(window, qtbot, tmp_path, monkeypatch):
    import app.worker
    from kvviz.calibration import REFERENCE_PROBE_US_PER_TURN, calibration_from
    # a machine 5× slower than the reference: with the compiled engine this run (~230K turns,
    # ~2.5 s at the reference) is long on any machine, so the test does not hang on this one's speed
    monkeypatch.setattr(app.worker, "machine", lambda: calibration_from(5 * REFERENCE_PROBE_US_PER_TURN))
    f = tmp_path / "big.toml"
    f.write_text(SMALL_STORE.format(n=40000))
    window.open(str(f))
    assert window.runner.busy()
    assert "simulating… (about" in window.status.text() and "estimated" in window.status.text()
    window.runner.cancel()


def test_the_window_never_opens_larger_than_the_screen(qtbot, settings):
    """The 1440 x 860 default on a smaller screen (offscreen's is 800 x 800) is fitted to it, and
    so is a layout saved on a bigger monitor: no dock beyond the screen's edge."""
    from app.shell.window import MainWindow
    first = MainWindow(None, settings=settings)  # no saved layout
    qtbot.addWidget(first)
    room = first.screen().availableGeometry()
    assert room.width() < 1440 or room.height() < 860  # else this test shows nothing
    assert first.width() <= room.width() and first.height() <= room.height()
    first.resize(room.width() + 900, room.height() + 700)
    settings.setValue("geometry", first.saveGeometry())
    settings.sync()
    first.runner.shutdown()
    again = MainWindow(None, settings=settings)
    qtbot.addWidget(again)
    assert again.width() <= room.width() and again.height() <= room.height()
    again.runner.shutdown()


def test_a_new_scenario_leaves_no_sweep_axes_behind(window, qtbot):
    """After a heat map, another scenario's Sweep tab still showed the old axes' names and ticks,
    with the same field picked as first and second parameter (real window)."""
    sw = window.view("sweep")
    window.show_view("sweep")
    sw.configure([("cache.slots", "2,4"), ("storage.latency_us", "10,20")], "speedup")
    with qtbot.waitSignal(sw.finished, timeout=60_000):
        sw.run()
    pi = sw.plot.getPlotItem()
    assert pi.getAxis("bottom").labelText == "storage.latency_us"
    _open(window, qtbot, SCENARIOS / "engram_qwen3_32b_cxl.toml")
    assert pi.getAxis("bottom").labelText == "" and pi.getAxis("left").labelText == ""
    assert pi.getAxis("bottom")._tickLevels is None  # pyqtgraph's own ticks again
    assert sw.p1.currentText() != sw.p2.currentText() and not sw.use2.isChecked()
    sw.use2.setChecked(True)
    sw.p2.setCurrentText(sw.p1.currentText())
    sw.v1.setText("1,2")
    sw.v2.setText("1,2")
    sw.run()
    assert sw.status.text().startswith(f"⚠ {sw.p1.currentText()} is swept twice") and sw.job is None


def test_save_as_names_the_new_file_in_the_scenario_box(window, qtbot, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog
    out = tmp_path / "copy.toml"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(out), "")))
    assert window.save_as()
    assert window.picker.currentText() == "copy.toml" and window.settings.value("recent")[0] == str(out.resolve())


def test_the_toolbar_export_writes_what_the_current_tab_shows(window, qtbot, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog
    asked = []

    def save_as(*a, **k):
        asked.append(a[2])  # the suggested name says which figure is being written
        return str(tmp_path / f"{len(asked)}.svg"), ""
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(save_as))
    exported(qtbot, window, lambda: (window.act_export.trigger(), True)[1])  # written in the background
    window.show_view("counters")
    exported(qtbot, window, lambda: (window.act_export.trigger(), True)[1])
    assert asked[0].endswith("rope_prefetch_16.svg") and asked[1].endswith("rope_prefetch_16_counters.svg")
    timeline, counters = ((tmp_path / f"{i}.svg").read_text() for i in (1, 2))
    # the timeline figure (kvviz's own SVG: spans grouped per kind), then the Counters view's plots
    assert 'id="spans-' in timeline and 'id="spans-' not in counters and "<svg" in counters


def test_docks_squeezed_by_a_wide_tab_get_their_width_back_on_the_next(window, qtbot):
    params = window.findChild(type(window.metrics_dock), "dock-parameters")
    qtbot.wait(50)
    before = params.width()
    window.docks.fit([params], [before - 80])  # as Qt squeezes it for a tab, not as the user drags it
    qtbot.wait(20)
    assert params.width() < before - 40
    window.show_view("counters")
    qtbot.waitUntil(lambda: abs(params.width() - before) <= 2, timeout=2000)


def test_reset_asks_before_it_drops_edits(window, qtbot):
    window.panel.set_value("cache.slots", 4)
    window.panel.flush()
    asked = []
    window.ask_reset = lambda: asked.append(1) or QMessageBox.Cancel
    window.reset_to_file()
    assert asked and window.panel.value("cache.slots") == 4 and window.panel.is_dirty()
    window.ask_reset = lambda: QMessageBox.Discard
    window.reset_to_file()
    assert window.panel.value("cache.slots") == 8 and not window.panel.is_dirty()
    window.ask_reset = lambda: asked.append(2) or QMessageBox.Cancel
    window.reset_to_file()  # nothing to drop: no question
    assert asked == [1]


def test_an_edit_still_debouncing_when_the_window_closes_runs_nowhere(window, qtbot):
    window.panel.set_value("cache.slots", 4)  # the edit waits in the panel's debounce
    window.ask_unsaved = lambda: QMessageBox.Discard
    window.close()
    window.panel.flush()  # what the debounce sends after the close: no runner to take it
    assert window.runner._proc is None and not window.runner.busy()
