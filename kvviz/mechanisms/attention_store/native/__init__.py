"""The compiled engine (Cython: `_engine.pyx` and the files it includes, built by setup.py at
install, or in place by `make native`) and the choice between it and the pure-Python reference
engine (batching.py, store.py, ...), which stays the definition: tests hold the two to identical
metrics and traces.

`engine()` is the compiled module, or None where the reference runs: KVVIZ_ENGINE=python asks for
it, or the module is missing (no C compiler at install), incomplete (a cut copy: loading it would
kill the process), or built from other sources than the ones beside it (a checkout moved on, a
build copied in: it would run other rules than the source says). `note()` says which and why in
one line, for the CLI and the app to show once; `refusal()` is what the CLI refuses to run under.

KVVIZ_ENGINE: auto (also unset or empty), native or python, in any case, spaces ignored. Anything
else, or native where the compiled engine cannot run, is refused by the CLI (exit 2: a benchmark
must not time the other engine unawares) and noted by the app, which runs as under auto.
"""
from __future__ import annotations

import os
from functools import cache
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path
from types import ModuleType

from ....serving.native import whole
from .sources import source_files, source_hash

ENV = "KVVIZ_ENGINE"
CHOICES = ("auto", "native", "python")
HERE = Path(__file__).parent
REBUILD = "`make native` rebuilds it"


def choice() -> str | None:
    """KVVIZ_ENGINE as one of CHOICES, or None where it is none of them."""
    asked = os.environ.get(ENV, "").strip().lower() or "auto"
    return asked if asked in CHOICES else None


def _bad_choice() -> str:
    return f"{os.environ.get(ENV)!r} is not auto, native or python (in any case)"


@cache
def _load() -> tuple[ModuleType | None, str]:
    asked = choice()
    if asked == "python":
        return None, f"{ENV}=python: the Python reference engine runs"
    module, why = _built()
    if asked is None:
        return module, f"{ENV}: {_bad_choice()}: ignored" + (f"; {why}" if why else ", the compiled engine runs")
    if asked == "native" and why:
        return None, f"{ENV}=native, but {why}"
    return module, why


@cache
def _built() -> tuple[ModuleType | None, str]:
    """(the compiled module, "") where it can run, else (None, why not)."""
    spec = find_spec(f"{__name__}._engine")
    if spec is None or not spec.origin:
        return None, ("the compiled engine is not built (`make setup` builds it; it needs a C compiler): "
                      "the Python reference engine runs, several times slower")
    if not _whole(Path(spec.origin)):
        return None, f"the compiled engine's file is cut short ({REBUILD}): the Python reference engine runs"
    try:
        # a ModuleType, deliberately: its classes are the reference engine's twins, held equal to it by
        # tests (tests/test_native_engine.py), not typed one by one
        _engine = import_module(f"{__name__}._engine")
    except Exception as e:  # ImportError mostly; a module's init can raise anything (a numpy ABI change)
        why = (str(e).splitlines() or [type(e).__name__])[0]
        return None, f"the compiled engine does not load ({why}; {REBUILD}): the Python reference engine runs"
    if source_files(HERE) and getattr(_engine, "SOURCE_HASH", "") != source_hash(HERE):  # a wheel has none
        return None, (f"the compiled engine was built from other sources than the ones beside it ({REBUILD}): "
                      "the Python reference engine runs")
    return _engine, ""


def _whole(path: Path) -> bool:
    """kvviz.serving.native.whole: False for an ELF file cut short."""
    return whole(path)


def engine() -> ModuleType | None:
    """The compiled engine's module, or None: run the reference."""
    return _load()[0]


def note() -> str:
    """One line on why the reference engine runs (or why KVVIZ_ENGINE was ignored), or "" when
    the compiled one runs as asked."""
    return _load()[1]


def refusal() -> str:
    """Why the CLI refuses to run under this KVVIZ_ENGINE (exit 2), or "": a value none of CHOICES,
    or native where the compiled engine cannot run."""
    asked = choice()
    if asked is None:
        return f"{ENV}: {_bad_choice()}"
    return f"{ENV}=native, but {_built()[1]}" if asked == "native" and _built()[0] is None else ""
