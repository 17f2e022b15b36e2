"""A fixed, seeded sample of tests/newest_surfaces_fuzz.py's cases on each of the newest input
surfaces (`kvviz replay --prefix` in every format, cluster scenarios under --set, the run's output
flags): each ends in a run with sound numbers or a refusal naming a file or flag of the case, with
nothing changed but what it was asked to write. A few seconds in all; for thousands of fresh
cases: `python -m tests.newest_surfaces_fuzz prefix 1000` (or cluster, output)."""
import json

import pytest

from .newest_surfaces_fuzz import Case, _why, draw, run_case

SAMPLE = {"prefix": 150, "cluster": 120, "output": 40}


@pytest.mark.parametrize("surface", sorted(SAMPLE))
def test_a_fixed_sample_of_each_surface_runs_soundly_or_is_refused(surface, tmp_path):
    codes = set()
    for seed in range(SAMPLE[surface]):
        folder = tmp_path / str(seed)
        folder.mkdir()
        case = draw(surface, seed, folder)
        code, why = run_case(case)
        assert why is None, f"{surface} case {seed}: {why}; argv {case.argv}"
        codes.add(code)
    assert codes == {0, 2}  # a sample that only ever ran, or was only ever refused, would test little


def test_the_checks_do_catch_what_they_look_for(tmp_path):
    """A fuzz whose checks could not fail would test nothing: each one, given the defect it is
    for, says so."""
    case = Case(["replay"], tmp_path, {str(tmp_path / "t.jsonl"), "--capacity"}, {str(tmp_path / "o.json")},
                kind="cluster")
    assert "traceback" in _why(case, 2, "Traceback (most recent call last):\n", "", set())
    assert "exit 1" in _why(case, 1, "error: x\n", "", set())
    assert "names no file" in _why(case, 2, "error: something went wrong\n", "", set())
    assert "refused, yet changed" in _why(case, 2, f"error: {tmp_path}/t.jsonl: bad\n", "", {"x"})
    assert "not asked to write" in _why(case, 0, "", "", {str(tmp_path / "o.json"), "other"})
    assert "without writing" in _why(case, 0, "", "", set())
    negative = json.dumps({"metrics": {"mean_ttft_ms": -1248.0, "e2e_mean_ms": 5.0}})
    assert _why(case, 0, "", negative, {str(tmp_path / "o.json")}) == "mean_ttft_ms = -1248.0"
    prefix = Case(["replay"], tmp_path, {"--capacity"}, kind="prefix")
    assert "block_hit_ratio" in _why(prefix, 0, "", json.dumps([{"block_hit_ratio": 1.5, "request_hit_ratio": 0}]),
                                     set())
    assert _why(prefix, 2, "error: --capacity: no\n", "", set()) is None


def test_a_case_is_drawn_the_same_every_time(tmp_path):
    """Case N of a surface is its own seeded stream: a failure is replayed alone by its number."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = draw("prefix", 17, tmp_path / "a"), draw("prefix", 17, tmp_path / "b")
    assert [x.replace(str(tmp_path / "a"), "") for x in a.argv] == [x.replace(str(tmp_path / "b"), "") for x in b.argv]
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == sorted(p.name for p in (tmp_path / "b").iterdir())
    for p in (tmp_path / "a").iterdir():
        if p.is_file():
            assert p.read_bytes() == (tmp_path / "b" / p.name).read_bytes()
