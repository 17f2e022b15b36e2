"""The Counters tab's rows keep the tick labels at their values' ends: a counter that holds one
value all run (a cluster instance's one-block HBM cache) showed only a "0.5" tick under its line,
its own value unreadable, because pyqtgraph drops a label that would cross the plot's edge."""
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytestmark = pytest.mark.gui

from .conftest import shown  # noqa: E402

GLOBAL_CACHE = Path(__file__).resolve().parents[1] / "scenarios" / "cluster_mooncake_global_cache.toml"


def _labels(axis) -> list[str]:
    from PySide6.QtGui import QImage, QPainter
    image = QImage(8, 8, QImage.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [text for _rect, _flags, text in specs[2]] if specs else []


def test_a_flat_counter_and_zero_keep_their_tick_labels(qtbot):
    from app.views.counters import CountersView
    from kvviz import load_scenario, simulate
    result = simulate(load_scenario(GLOBAL_CACHE, ["workload.max_requests=200", "cluster.instances=2"]))
    view = shown(qtbot, CountersView(), 900, 700, result)
    rows = {pi.titleLabel.text: pi for pi in view.plots}
    hbm = rows["instance 0 HBM cache"]
    values = result.trace.counters["value"][result.trace.counters["name"]
                                            == result.trace.counter_names.index("instance 0 HBM cache")]
    assert set(values[1:]) == {1.0}  # one block, held the whole run (after the empty start)
    labels = _labels(hbm.getAxis("left"))
    assert {"0", "1.0"} <= set(labels) or {"0", "1"} <= set(labels), labels
    for title, pi in rows.items():  # every row starts at an empty cache or queue: its 0 is labelled
        assert "0" in _labels(pi.getAxis("left")), title
