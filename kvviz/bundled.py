"""What ships with kvviz: `resources/` (the palette, sample traces) and `scenarios/` (the worked
examples), and a bundled scenario by its name (`kvviz run rope_prefetch_16`).

Both folders stand at the top of the repository; a built wheel maps them into the package as
kvviz/resources and kvviz/scenarios (pyproject.toml's package-dir), side by side as in the tree,
so a scenario's relative path to a trace (`../resources/traces/...`) holds in both.
"""
from __future__ import annotations

import os
from pathlib import Path


def data_dir(name: str) -> Path:
    """`resources` or `scenarios`: inside the installed package, else the source tree's folder
    (a checkout on PYTHONPATH or an editable install, where they stay at the top level)."""
    from importlib.resources import files  # imported here: a command that reads no resource skips it
    installed = files("kvviz") / name
    if installed.is_dir():
        return Path(str(installed))
    return Path(__file__).resolve().parents[1] / name


def resources_dir() -> Path:
    return data_dir("resources")


def scenarios_dir() -> Path:
    """The bundled worked examples (override with KVVIZ_SCENARIOS)."""
    env = os.environ.get("KVVIZ_SCENARIOS")
    return Path(env) if env else data_dir("scenarios")


def bundled_scenarios() -> list[Path]:
    return sorted(scenarios_dir().glob("*.toml"))


def resolve_scenario(file: str) -> str:
    """A path, or the stem of a bundled scenario (`kvviz run rope_prefetch_16`)."""
    # os.path.exists: False for a name too long to look up too (Path.exists raised it, a
    # traceback); reading the file then says what is wrong with it
    if not os.path.exists(file) and not Path(file).suffix:
        bundled = scenarios_dir() / f"{file}.toml"
        if os.path.exists(bundled):
            return str(bundled)
    return file


def scenario_arg(file: str) -> str:
    """How a command line names `file`: a bundled scenario by its name, any other by its path."""
    path = Path(file)
    try:
        bundled = path.resolve().parent == scenarios_dir().resolve() and path.suffix == ".toml"
    except OSError:
        bundled = False
    return path.stem if bundled else file
