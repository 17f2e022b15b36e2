"""Bugs found while typing kvviz/ for mypy --strict (issue 35, build item 3), each held by a test
that fails on the code before the fix."""
from __future__ import annotations

import io

from kvviz.cli import main
from kvviz.sweep import StderrProgress


def test_a_kind_that_is_no_string_is_bad_input_to_sweep(tmp_path, capsys):
    # engine_note_once looked the kind up in a set before checking it was a name: a TOML array
    # (unhashable) ended `kvviz sweep` in a TypeError traceback instead of one line and exit 2
    f = tmp_path / "bad.toml"
    f.write_text('kind = [1]\nname = "x"\n', encoding="utf-8")
    assert main(["sweep", str(f), "--param", "a", "--values", "1,2", "--metric", "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "kind: must be a string" in err and "Traceback" not in err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_sweep_progress_redraws_in_place_on_a_terminal_stderr(monkeypatch):
    # the default stream (stderr) was never asked whether it is a terminal (the argument, None,
    # was): the progress printed a line per 10% on a terminal instead of redrawing one line
    monkeypatch.setattr("sys.stderr", _Terminal())
    assert StderrProgress().tty
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert not StderrProgress().tty
