"""The Performance page's figures come from benchmark records, never typed: benchmarks/record.py
keeps a benchmark's output verbatim with its machine, load, commit and date (a failed run keeps
the previous record), and docs/_gen/generate.py renders every record in benchmarks/results/ and
refuses one that does not say what machine it ran on. No benchmark is run here."""
import importlib.util
import os
import re

import pytest

from .conftest import ROOT


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def gen():
    return _load("docs_generate", ROOT / "docs" / "_gen" / "generate.py")


@pytest.fixture(scope="module")
def rec():
    return _load("bench_record", ROOT / "benchmarks" / "record.py")


def test_the_figures_page_renders_every_committed_record(gen, rec):
    records = sorted((ROOT / "benchmarks" / "results").glob("*.txt"))
    assert records, "benchmarks/results/ holds no record: run `make bench`"
    page = gen.performance_figures()
    for path in records:
        header, output = rec.read_record(path)
        assert path.stem == header["benchmark"]
        assert f"## `{header['benchmark']}`" in page
        assert f"`{header['command']}`" in page and gen._md(header["machine"]) in page
        for line in output.strip().splitlines():
            assert line in page, (path.name, line)
    # user-facing: what a benchmark prints names its target, not the issue that asked for it
    assert not re.search(r"\bissue \d", page, re.I)
    # every benchmark without a record is listed as such, and no recorded one is
    missing = page.partition("## No record yet")[2]
    for script in (ROOT / "benchmarks").glob("bench_*.py"):
        assert (f"- `{script.stem}`:" in missing) != (ROOT / "benchmarks" / "results" / f"{script.stem}.txt").exists()


def _bench_dir(tmp_path, **scripts):
    for name, body in scripts.items():
        (tmp_path / f"{name}.py").write_text(body)
    return tmp_path


def test_a_record_without_a_machine_line_is_refused(gen, rec, tmp_path):
    d = _bench_dir(tmp_path, bench_x="print(1)\n")
    (d / "results").mkdir()
    good = rec.render({"benchmark": "bench_x", "command": "python benchmarks/bench_x.py", "machine": "2 cores",
                       "load before": "1.00", "load after": "1.00", "commit": "abc", "date": "2026-12-02"}, "42\n")
    (d / "results" / "bench_x.txt").write_text(good)
    assert "42" in gen.performance_figures(d)
    (d / "results" / "bench_x.txt").write_text(good.replace("machine: 2 cores\n", ""))
    with pytest.raises(SystemExit, match=r"bench_x\.txt: no machine line"):
        gen.performance_figures(d)
    (d / "results" / "bench_x.txt").write_text("42\n")
    with pytest.raises(SystemExit, match=r"bench_x\.txt: .*not a benchmark record"):
        gen.performance_figures(d)


def test_record_keeps_the_output_verbatim_and_a_failed_run_keeps_the_previous_record(gen, rec, tmp_path, capsys):
    printed = "figure: 1.5 s ```fenced``` | a pipe\n\n  indented line\n"
    d = _bench_dir(tmp_path, bench_ok=f"import sys; sys.stdout.write({printed!r})\n",
                   bench_bad="print('half'); raise SystemExit(3)\n")
    assert rec.record("bench_ok", ["--flag", "a b"], bench_dir=d, results=d / "results") == 0
    header, output = rec.read_record(d / "results" / "bench_ok.txt")
    assert output == printed
    assert header["command"].endswith("python benchmarks/bench_ok.py --flag 'a b'")
    assert header["machine"].startswith(f"{os.cpu_count()} cores")
    assert header["load before"] and header["load after"] and header["date"].endswith("UTC")
    assert "````text\n" + printed.rstrip() + "\n````\n" in gen.performance_figures(d)  # a fence longer than the output's

    before = (d / "results" / "bench_ok.txt").read_text()
    (d / "bench_ok.py").write_text("print('new'); raise SystemExit(1)\n")
    assert rec.record("bench_ok", [], bench_dir=d, results=d / "results") == 1
    assert (d / "results" / "bench_ok.txt").read_text() == before
    assert rec.record("bench_bad", [], bench_dir=d, results=d / "results") == 3
    assert sorted(p.name for p in (d / "results").iterdir()) == ["bench_ok.txt"]  # no temp file left
    assert rec.record("nope", [], bench_dir=d, results=d / "results") == 2
    assert "no benchmark 'nope'" in capsys.readouterr().err


def test_make_bench_records(rec):
    assert "benchmarks/run_all.py --record" in (ROOT / "Makefile").read_text()


def test_a_changed_record_is_not_a_change_to_the_code_measured(rec, tmp_path):
    """A record written earlier in a run of several (benchmarks/results/, first in git's status)
    marked every later record "with uncommitted changes to its code": the status line's leading
    space was stripped with the output's, cutting the path's first letter."""
    import subprocess

    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                       capture_output=True)
    (tmp_path / "benchmarks" / "results").mkdir(parents=True)
    (tmp_path / "benchmarks" / "results" / "a.txt").write_text("old\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "one")
    (tmp_path / "benchmarks" / "results" / "a.txt").write_text("new\n")
    assert not rec._commit(tmp_path).endswith("uncommitted changes to its code")
    (tmp_path / "code.py").write_text("x = 2\n")
    assert rec._commit(tmp_path).endswith("with uncommitted changes to its code")
