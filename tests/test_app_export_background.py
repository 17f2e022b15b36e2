"""File → Export runs in the background (app.export_job): the window's event loop keeps
running meanwhile, a progress bar and Cancel Export show, and a cancelled export writes nothing
(a previous file stays as it was)."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from .conftest import exported, wait_new_result
from .export_helpers import never_done

pytestmark = pytest.mark.gui

FLAGSHIP = Path(__file__).resolve().parent.parent / "scenarios" / "attention_store_sharegpt.toml"


def _ticking(qtbot):
    """A 10 ms timer and the moments it fired: the event loop's turns."""
    from PySide6.QtCore import QTimer
    ticks: list[float] = []
    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start()
    return timer, ticks


def test_a_cancelled_export_leaves_the_previous_file_and_the_window_runs_meanwhile(window, qtbot, tmp_path):
    out = tmp_path / "trace.json"
    out.write_text("the previous export\n")
    window.exports.target = never_done  # a render that only Cancel ends
    timer, ticks = _ticking(qtbot)
    assert window.export("perfetto", str(out))
    assert window.exports.busy() and window.export_progress.isVisible() and window.export_cancel.isVisible()
    assert "exporting" in window.status.text()
    qtbot.waitUntil(lambda: len(ticks) >= 10)  # the event loop turns while the export runs
    assert window.exports.busy()
    assert not window.export("csv", str(tmp_path / "other.csv"))  # one at a time, said
    assert "already" in window.status.text()
    with qtbot.waitSignal(window.export_finished, timeout=30_000) as ended:
        window.export_cancel.click()
    timer.stop()
    assert ended.args == [False]
    assert "cancelled: trace.json left as it was" in window.status.text()
    assert out.read_text() == "the previous export\n"
    assert [n for n in os.listdir(tmp_path) if n != "kvviz.ini"] == ["trace.json"]  # no temporary file left
    assert not window.export_progress.isVisible() and not window.export_cancel.isVisible()
    window.exports.target = type(window.exports).target  # the real render again
    assert exported(qtbot, window, lambda: window.export("perfetto", str(out)))
    assert json.loads(out.read_text())["traceEvents"]


def test_a_refused_target_is_said_at_once_and_starts_nothing(window, tmp_path):
    scenario = window.panel.path()
    assert not window.export("perfetto", scenario)  # the scenario itself: an input of the run
    assert not window.exports.busy() and "export failed" in window.status.text()


def test_closing_the_window_during_an_export_ends_it_and_writes_nothing(window, qtbot, tmp_path):
    out = tmp_path / "t.svg"
    window.exports.target = never_done
    assert window.export("svg", str(out))
    window.close()
    assert not window.exports.busy() and not out.exists()


@pytest.mark.slow
def test_the_flagships_perfetto_export_repaints_the_window_meanwhile(window, qtbot, tmp_path):
    """The flagship's Perfetto trace (~180 MB) is built in a child process: the event loop keeps
    turning. The longest gap between two turns of a 10 ms timer is printed (not asserted: the
    machine may be busy)."""
    old = window.result
    window.open(str(FLAGSHIP))
    wait_new_result(qtbot, window, old)
    qtbot.waitUntil(lambda: not window.runner.busy(), timeout=300_000)
    out = tmp_path / "flagship.json"
    timer, ticks = _ticking(qtbot)
    t0 = time.monotonic()
    assert exported(qtbot, window, lambda: window.export("perfetto", str(out)))
    took = time.monotonic() - t0
    timer.stop()
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    print(f"\nflagship Perfetto export: {out.stat().st_size / 1e6:.1f} MB in {took:.1f} s; {len(ticks)} timer "
          f"turns, the longest gap {max(gaps) * 1000:.0f} ms")
    assert len(ticks) > 10 and out.read_bytes()[:1] == b"{"
