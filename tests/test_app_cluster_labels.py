"""The Cluster tab's heat maps say what their rows are: the left axis read "queue (peak)" over
ticks 0, 1, 2, 3 (instance numbers), which a user reads as queue lengths; the colour bar names
what the colour shows. The run's summary stands apart from the Gantt selector beside it."""
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytestmark = pytest.mark.gui

from .conftest import shown  # noqa: E402

ROUTING = Path(__file__).resolve().parents[1] / "scenarios" / "cluster_mooncake_routing.toml"
SETS = ["workload.max_requests=200", "cluster.instances=4", "cluster.prefill_instances=2"]


def test_heat_maps_name_their_rows_and_their_colours(qtbot):
    from app.views.cluster import ClusterView
    from kvviz import load_scenario, simulate
    view = shown(qtbot, ClusterView(), 1000, 650, simulate(load_scenario(ROUTING, SETS)))
    for strip, colour in ((view.queue, "peak queue"), (view.cache, "cache full")):
        assert strip.getPlotItem().getAxis("left").labelText == "instance"
        assert strip.bar.axis.labelText == colour
    pick, summary = view.pick.geometry(), view.summary.geometry()
    assert summary.left() - pick.right() >= 10, (pick, summary)
