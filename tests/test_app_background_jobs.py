"""Every tab's background job in the window's status bar (issue 33, item 2): what runs and how
far, a Cancel that works from any tab, and a cancelled job leaves its view as it was."""
from __future__ import annotations

import time

import pytest
from PySide6.QtCore import Qt

from .test_app_scenario_switch import THREE, TIERED, _open

pytestmark = pytest.mark.gui


def _waits_for_cancel(base, axes, metric, source, progress, on_value, ctx):
    """A surface's fill that draws one cell, then runs until it is cancelled."""
    on_value(0, 0.5)
    while True:
        progress(1, 4)  # raises Cancelled once Cancel is asked
        time.sleep(0.02)


def test_a_surface_shows_in_the_status_bar_and_cancels_from_another_tab(window, qtbot, tmp_path):
    path = tmp_path / "three_tiers.toml"
    path.write_text(TIERED.format(name="three", tiers=THREE), encoding="utf-8")
    _open(qtbot, window, path)
    window.show_view("tiers")
    tiers = window.tab("tiers")
    tiers.show_page("surface")
    surface = tiers.surface
    surface.configure("hbm", "2,6", "ssd", "10,40", "policies.lru.token_hit_rate")
    with qtbot.waitSignal(surface.finished, timeout=120_000):
        surface.run()
    qtbot.wait(20)
    bar, cancel = window.job_status.bar, window.job_status.cancel_btn
    assert not bar.isVisible() and not cancel.isVisible()  # nothing runs: nothing shown
    assert "capacity surface: 4 runs done" in window.status.text()
    before, command = surface.data_rows(), surface.command()

    surface.runs.fill = _waits_for_cancel
    surface.configure("hbm", "1,3", "ssd", "5,20", "policies.fifo.token_hit_rate")
    surface.run()
    qtbot.waitUntil(lambda: "1/4 runs" in window.status.text(), timeout=10_000)
    assert bar.isVisible() and cancel.isVisible() and cancel.text() == "Cancel capacity surface"
    assert (bar.value(), bar.maximum()) == (1, 4)
    qtbot.waitUntil(lambda: surface.data_rows() != before, timeout=10_000)  # the new grid's first cell drawn
    window.show_view("timeline")  # the job goes on, and is still in the status bar
    assert cancel.isVisible()
    with qtbot.waitSignal(surface.stopped, timeout=10_000):
        qtbot.mouseClick(cancel, Qt.LeftButton)
    qtbot.wait(20)
    assert not bar.isVisible() and not cancel.isVisible()
    assert surface.data_rows() == before and surface.command() == command  # as before the run
    assert "capacity surface: cancelled" in window.status.text()


def test_a_cancelled_sweep_leaves_its_chart_as_it_was(window, qtbot):
    sweep = window.view("sweep")
    window.show_view("sweep")
    sweep.configure([("cache.slots", "4,8")], "speedup")
    with qtbot.waitSignal(sweep.finished, timeout=60_000):
        sweep.run()
    before = sweep.data_rows()
    import app.views.sweep as sweep_module
    real = sweep_module.run_sweep

    def slow(data, axes, metric, on_result=None, progress=None, **_):
        on_result(0, 123.0)  # a point of the new sweep drawn, then no more
        while True:
            progress(1, 3)
            time.sleep(0.02)
    sweep_module.run_sweep = slow
    try:
        sweep.configure([("cache.slots", "2,4,6")], "speedup")
        sweep.run()
        qtbot.waitUntil(lambda: sweep._shown is not None and sweep._shown.axes[0].values == (2, 4, 6), timeout=10_000)
        with qtbot.waitSignal(sweep.stopped, timeout=10_000):
            window.job_status.cancel()
    finally:
        sweep_module.run_sweep = real
    assert sweep.data_rows() == before and sweep._shown.axes[0].values == (4, 8)
    assert "cancelled" in sweep.status.text()
