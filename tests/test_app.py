"""The desktop window, headless (pytest-qt)."""
import json

import numpy as np
import pytest

pytest.importorskip("PySide6")

from app.main import main as gui_main  # noqa: E402
from app.metrics import metric_rows  # noqa: E402
from app.timeline import SpanLayer, merge_runs  # noqa: E402
from app.window import MainWindow  # noqa: E402

from .conftest import SCENARIOS  # noqa: E402

SEED = str(SCENARIOS / "rope_prefetch_16.toml")


@pytest.fixture
def window(qtbot):
    win = MainWindow(SEED)
    qtbot.addWidget(win)
    win.resize(1280, 800)
    win.show()
    qtbot.waitUntil(lambda: win.result is not None, timeout=10_000)
    yield win
    win.close()
    assert not win.runner.busy()


def test_window_shows_seed_result(window):
    assert window.result.metrics["speedup"] == 8.0
    rows = {r[0]: r[1:] for r in metric_rows(window.result.metrics_dict())}
    assert rows["stall_us"] == ("400.0", "50.0") and rows["round_trips"] == ("16", "2")
    names = [window.timeline.plot.getPlotItem().getAxis("left").tickStrings([i], 1, 1)[0] for i in range(3)]
    assert names == ["GPU · attention", "flash · prefetch + demand", "naive · serial demand fetch"]


def test_hover_describes_span(window):
    text = window.timeline.describe(10.0, 1.0)  # 10 µs on the flash lane
    assert "fetch 0.000–25.000 µs" in text and "5–11 (7)" in text


def test_bad_scenario_shows_message_not_traceback(window, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('kind = "rope_window"\n[cache]\nslots = 0\n')
    window.open(str(bad))
    assert "cache.slots" in window.status.text() and window.result.metrics["speedup"] == 8.0


def test_screenshot_is_not_blank(window, tmp_path):
    img = window.grab().toImage()
    px = np.array([[img.pixelColor(x, y).name() for x in range(0, img.width(), 16)]
                   for y in range(0, img.height(), 16)])
    colours = set(px.ravel().tolist())
    assert "#e69f00" in colours and "#d55e00" in colours  # fetch and stall bars are drawn


def test_span_layer_culls_and_merges():
    n = 1_000_000
    x0 = np.arange(n, dtype=float)
    layer = SpanLayer("#000", np.zeros(n, dtype=np.int64), x0, x0 + 0.5)
    assert len(layer.visible_rects(0, n, n / 1000)) <= 1001   # zoomed out: per pixel column
    assert len(layer.visible_rects(100, 110, 0.01)) == 11      # zoomed in: only what is visible


def test_merge_runs():
    a, b = merge_runs(np.array([0., 1, 5, 6]), np.array([2., 3, 6, 9]))
    assert a.tolist() == [0, 5] and b.tolist() == [3, 9]


def test_cli_screenshot_and_bad_input(tmp_path, capsys):
    out = tmp_path / "shot.png"
    assert gui_main([SEED, "--screenshot", str(out), "--size", "900x600"]) == 0
    from PySide6.QtGui import QImage
    assert QImage(str(out)).size().width() == 900
    assert gui_main([str(tmp_path / "missing.toml"), "--screenshot", str(tmp_path / "x.png")]) == 2
    assert "file not found" in capsys.readouterr().err and not (tmp_path / "x.png").exists()


def test_headless_job_writes_figure_and_metrics(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    assert gui_main(["--out", str(tmp_path)]) == 0
    assert "no display" in capsys.readouterr().out
    assert (tmp_path / "rope_prefetch_16.svg").read_text().startswith("<svg")
    assert json.loads((tmp_path / "rope_prefetch_16.json").read_text())["metrics"]["speedup"] == 8.0
    assert (tmp_path / "rope_prefetch_16.png").stat().st_size > 1000
