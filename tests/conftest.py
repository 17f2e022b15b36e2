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
