"""Package list for the wheel; the rest of the build is declared in pyproject.toml.

resources/ and scenarios/ stay at the top of the repository (the project's layout) and are
mapped into the wheel as kvviz.resources and kvviz.scenarios (pyproject's package-dir), which a
search of kvviz/ cannot find: they are added here, so a new package under kvviz/ or app/ is found
without a line anywhere.
"""
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent
DATA = ["kvviz.scenarios", "kvviz.resources"] + [
    f"kvviz.resources.{d.name}" for d in sorted((HERE / "resources").iterdir())
    if d.is_dir() and d.name != "screenshots"]  # README figures stay out of the wheel

setup(packages=find_packages(include=["kvviz", "kvviz.*", "app", "app.*"]) + DATA)
