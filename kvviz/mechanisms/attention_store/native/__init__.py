"""The compiled engine (Cython: `_engine.pyx` and the files it includes, built by setup.py at
install, or in place by `make native`) and the choice between it and the pure-Python reference
engine (batching.py, store.py, ...), which stays the definition: tests hold the two to identical
metrics and traces.

`engine()` is the compiled module, or None where the reference runs: `KVVIZ_ENGINE=python`
asks for it, or the module is missing (no C compiler at install) or older than its source (a
checkout moved on: a stale build would run other rules than the source says). `note()` says
which and why in one line, for the CLI and the app to show once.
"""
from __future__ import annotations

import os
from functools import cache
from pathlib import Path

ENV = "KVVIZ_ENGINE"  # "python": the reference engine even where the compiled one is built
HERE = Path(__file__).parent
SOURCES = (".pyx", ".pxi", ".pxd")


@cache
def _load():
    if os.environ.get(ENV, "").strip().lower() == "python":
        return None, f"{ENV}=python: the Python reference engine runs"
    try:
        from . import _engine
    except ImportError:
        return None, ("the compiled engine is not built (`make setup` builds it; it needs a C compiler): "
                      "the Python reference engine runs, several times slower")
    built = Path(_engine.__file__).stat().st_mtime
    if any(p.stat().st_mtime > built for p in HERE.iterdir() if p.suffix in SOURCES):
        return None, ("the compiled engine is older than its source (`make native` rebuilds it): "
                      "the Python reference engine runs")
    return _engine, ""


def engine():
    """The compiled engine's module, or None: run the reference."""
    return _load()[0]


def note() -> str:
    """One line on why the reference engine runs, or "" when the compiled one does."""
    return _load()[1]
