"""The choice of the AttentionStore engine against a hostile user and a broken build
(attention_store/native/__init__.py): KVVIZ_ENGINE's values (known ones in any case, anything else
refused by the CLI and noted by the app), a build from other sources (its compiled-in source hash),
a compiled file cut short (refused before the dynamic loader maps it: SIGBUS kills the process) or
that does not load, and every CLI command that runs scenarios saying the note once.
"""
from __future__ import annotations

import shutil
import sys
from importlib.machinery import ModuleSpec

import pytest

import kvviz.mechanisms as mechanisms_module
from kvviz.cli import main
from kvviz.errors import ScenarioError
from kvviz.mechanisms import engine_note_once
from kvviz.mechanisms.attention_store import native
from kvviz.mechanisms.attention_store.native import sources

MODULE = f"{native.__name__}._engine"
SMALL = ["--set", "workload.conversations=3", "--set", "serving.compare_truncation=false"]
BAD = "KVVIZ_ENGINE: 'pyhton' is not auto, native or python (in any case)"


@pytest.fixture
def fresh(monkeypatch):
    """The choice made again under this test's environment (it is cached for a process)."""
    monkeypatch.setattr(mechanisms_module, "_noted", set())
    monkeypatch.setenv("KVVIZ_WORKERS", "1")
    native._load.cache_clear()
    native._built.cache_clear()
    yield monkeypatch
    monkeypatch.undo()  # the environment and the loader back, then the choice made again
    native._load.cache_clear()
    native._built.cache_clear()


def built_or_skip():
    native._built.cache_clear()
    module, why = native._built()
    if module is None:
        pytest.skip(why)
    return module


@pytest.mark.parametrize("value, want", [
    (None, "auto"), ("", "auto"), ("  ", "auto"), ("auto", "auto"), ("AUTO", "auto"), ("python", "python"),
    ("PYTHON", "python"), (" Python ", "python"), ("native", "native"), ("NATIVE", "native"),
    ("pyhton", None), ("fast", None), ("0", None), ("python3", None)])
def test_engine_choice_in_any_case_and_nothing_else(monkeypatch, value, want):
    if value is None:
        monkeypatch.delenv(native.ENV, raising=False)
    else:
        monkeypatch.setenv(native.ENV, value)
    assert native.choice() == want


def test_a_misspelt_choice_is_refused_by_the_cli_with_one_line(fresh, capsys):
    fresh.setenv(native.ENV, "pyhton")
    for argv in (["run", "attention_store_sharegpt", "--json", *SMALL], ["check", "attention_store_mooncake"],
                 ["sweep", "attention_store_mooncake", "--param", "serving.max_batch", "--values", "8,16",
                  "--metric", "turns"]):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert out == "" and err == f"error: {BAD}\n"  # not blamed on the scenario file, nothing run


def test_a_misspelt_choice_is_noted_by_the_app_which_runs_as_under_auto(fresh):
    fresh.setenv(native.ENV, "pyhton")
    note = engine_note_once("attention_store")  # the app's call: never raises
    assert note.startswith("KVVIZ_ENGINE: 'pyhton' is not auto, native or python (in any case): ignored")
    assert "\n" not in note
    native._built.cache_clear()
    assert native.engine() is native._built()[0]  # auto's engine


def test_native_asked_where_it_cannot_run(fresh, capsys):
    fresh.setenv(native.ENV, "Native")
    fresh.setattr(native, "_built", lambda: (None, "the compiled engine is not built"))
    assert native.engine() is None and native.note() == "KVVIZ_ENGINE=native, but the compiled engine is not built"
    assert main(["run", "attention_store_sharegpt", "--json", *SMALL]) == 2
    assert capsys.readouterr().err == "error: KVVIZ_ENGINE=native, but the compiled engine is not built\n"
    fresh.setattr(native, "_built", lambda: (object(), ""))
    assert native.refusal() == ""


def test_python_in_any_case_runs_the_reference_with_the_note(fresh, capsys):
    fresh.setenv(native.ENV, " Python ")
    assert main(["run", "attention_store_sharegpt", "--json", *SMALL]) == 0
    err = capsys.readouterr().err
    assert err.startswith("note: KVVIZ_ENGINE=python: the Python reference engine runs\n")  # then the small run's checks


def test_sweep_and_claims_say_the_note_once(fresh, capsys):
    import kvviz.claims as claims
    fresh.setenv(native.ENV, "python")
    note = "note: KVVIZ_ENGINE=python: the Python reference engine runs\n"
    assert main(["sweep", "attention_store_mooncake", "--param", "serving.max_batch", "--values", "8,16",
                 "--metric", "turns", "--workers", "1"]) == 0
    assert capsys.readouterr().err.count(note) == 1
    fresh.setattr(mechanisms_module, "_noted", set())
    fresh.setattr(claims, "evaluate_file", lambda f, progress, robustness=False: [])  # the note comes before any run
    assert main(["claims", "attention_store_sharegpt", "attention_store_sharegpt", "--quiet"]) == 0
    assert capsys.readouterr().err.count(note) == 1


def test_the_build_carries_its_sources_hash():
    module = built_or_skip()
    assert module.SOURCE_HASH == sources.source_hash(native.HERE) != ""


def test_a_build_from_other_sources_is_not_run(fresh, tmp_path):
    module = built_or_skip()
    copy = tmp_path / "native"
    shutil.copytree(native.HERE, copy, ignore=shutil.ignore_patterns("*.so", "*.c", "__pycache__"))
    fresh.setattr(native, "HERE", copy)
    native._built.cache_clear()
    assert native._built()[0] is module  # the same sources elsewhere: current
    (copy / "store.pxi").touch()  # newer, same content: still current (a checkout back and forth)
    native._built.cache_clear()
    assert native._built()[0] is module
    with (copy / "store.pxi").open("a") as f:
        f.write("# an edit\n")
    native._built.cache_clear()
    assert native._built() == (None, "the compiled engine was built from other sources than the ones beside it "
                                     "(`make native` rebuilds it): the Python reference engine runs")


@pytest.mark.parametrize("baked", ["0123456789abcdef", "", None])
def test_a_build_without_this_hash_is_not_run(fresh, baked):
    module = built_or_skip()
    if baked is None:  # a build from before the hash: it has none
        fresh.delattr(module, "SOURCE_HASH")
    else:
        fresh.setattr(module, "SOURCE_HASH", baked)
    native._built.cache_clear()
    assert native._built()[0] is None and "built from other sources" in native._built()[1]


def test_a_cut_short_build_is_refused_before_it_is_loaded(fresh, tmp_path):
    module = built_or_skip()
    whole = open(module.__file__, "rb").read()
    cut = tmp_path / "_engine.so"
    for size in (len(whole), len(whole) - 1, len(whole) // 2, 4096, 63, 4):
        cut.write_bytes(whole[:size])
        assert native._whole(cut) == (size == len(whole)), size
    fresh.setattr(native, "find_spec", lambda name: ModuleSpec(name, None, origin=str(cut)))
    fresh.setitem(sys.modules, MODULE, None)  # were it imported, the test would fail here, not die
    fresh.delattr(native, "_engine", raising=False)
    native._built.cache_clear()
    assert native._built() == (None, "the compiled engine's file is cut short (`make native` rebuilds it): "
                                     "the Python reference engine runs")


def test_a_build_that_does_not_load_falls_back(fresh, tmp_path):
    junk = tmp_path / "_engine.so"
    junk.write_bytes(b"not an object file")
    assert native._whole(junk)  # not ELF: the import decides
    fresh.setattr(native, "find_spec", lambda name: ModuleSpec(name, None, origin=str(junk)))
    fresh.setitem(sys.modules, MODULE, None)  # the import fails as a corrupt file's does
    fresh.delattr(native, "_engine", raising=False)
    native._built.cache_clear()
    module, why = native._built()
    assert module is None and why.startswith("the compiled engine does not load (") and "\n" not in why
    with pytest.raises(ScenarioError, match="native, but the compiled engine does not load"):
        fresh.setenv(native.ENV, "native")
        native._load.cache_clear()
        engine_note_once("attention_store", strict=True)
