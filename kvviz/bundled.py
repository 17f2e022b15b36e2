"""The bundled worked examples: where they are, and a bundled scenario by its name
(`kvviz run rope_prefetch_16`, `kvviz-gui ladder_seed`)."""
from __future__ import annotations

import os
from pathlib import Path


def scenarios_dir() -> Path:
    """The bundled worked examples (override with KVVIZ_SCENARIOS)."""
    env = os.environ.get("KVVIZ_SCENARIOS")
    return Path(env) if env else Path(__file__).resolve().parents[1] / "scenarios"


def bundled_scenarios() -> list[Path]:
    return sorted(scenarios_dir().glob("*.toml"))


def resolve_scenario(file: str) -> str:
    """A path, or the stem of a bundled scenario (`kvviz run rope_prefetch_16`)."""
    p = Path(file)
    if not p.exists() and not p.suffix:
        bundled = scenarios_dir() / f"{file}.toml"
        if bundled.exists():
            return str(bundled)
    return file
