import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"


@pytest.fixture
def seed16():
    from kvviz import load_scenario
    return load_scenario(SCENARIOS / "rope_prefetch_16.toml")


def park_mouse(qtbot, plot, scene_pos) -> None:
    """Put the mouse over `scene_pos` of a pyqtgraph `plot` and leave it there, the move it made
    delivered (or skip where the platform does not move the cursor): for a view that then
    moves under a still mouse."""
    from PySide6.QtGui import QCursor
    QCursor.setPos(plot.mapToGlobal(plot.mapFromScene(scene_pos)))
    if not plot.rect().contains(plot.mapFromGlobal(QCursor.pos())):
        pytest.skip("this platform does not move the cursor")
    qtbot.wait(50)  # the move the cursor made is delivered now, not after the view moves
