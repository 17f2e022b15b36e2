"""The command line: output formats and every bad-input case (exit 2, one message, nothing written)."""
import json
import subprocess
import sys

import pytest

from kvviz.cli import main

from .conftest import SCENARIOS

SEED = str(SCENARIOS / "rope_prefetch_16.toml")


def test_run_json(capsys):
    assert main(["run", SEED, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "rope_window" and out["name"].startswith("RoPE prefetch")
    assert out["metrics"]["speedup"] == 8.0 and out["metrics"]["naive_stall_us"] == 400


def test_run_human_summary_and_bundled_name(capsys):
    assert main(["run", "rope_prefetch_16"]) == 0
    out = capsys.readouterr().out
    assert "speedup" in out and "naive_stall_us" in out and "400" in out


def test_set_override_changes_result(capsys):
    assert main(["run", SEED, "--json", "--set", "storage.latency_us=10"]) == 0
    m = json.loads(capsys.readouterr().out)["metrics"]
    assert m["naive_stall_us"] == 160 and m["prefetch_stall_us"] == 20


def test_writes_svg_and_json(tmp_path, capsys):
    svg, js = tmp_path / "t.svg", tmp_path / "m.json"
    assert main(["run", SEED, "--svg", str(svg), "--json-out", str(js)]) == 0
    assert svg.read_text().startswith("<svg") and json.loads(js.read_text())["metrics"]["hits"] == 4


def test_list_and_schema(capsys):
    assert main(["list"]) == 0
    assert "rope_prefetch_16" in capsys.readouterr().out
    assert main(["schema", "rope_window"]) == 0
    schema = json.loads(capsys.readouterr().out)
    slots = schema["$defs"]["Cache"]["properties"]["slots"]
    assert slots["minimum"] == 1 and slots["unit"] == "slots" and slots["description"]


def _write(tmp_path, text):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    return str(p)


GOOD = (SCENARIOS / "rope_prefetch_16.toml").read_text()

BAD_CASES = {
    "unknown key": (["--set", "cache.colour=3"], "cache.colour", "unknown field"),
    "wrong type": (["--set", "cache.slots=\"eight\""], "cache.slots", "integer"),
    "out of range": (["--set", "cache.slots=0"], "cache.slots", "greater than or equal to 1"),
    "query outside sequence": (["--set", "sequence.queries=[8,16]"], "sequence.queries[1]", "outside the sequence"),
    "times out of order": (["--set", "sequence.query_times_us=[50,0]"], "sequence.query_times_us[1]", "non-decreasing"),
    "one time per query": (["--set", "sequence.query_times_us=[0]"], "sequence.query_times_us", "one time per query"),
    "read outside sequence": (["--set", "reads=[{t_us=1, positions=[99]}]"], "reads[0].positions[0]", "outside"),
    "bad eviction": (["--set", "prefetch.eviction=random"], "prefetch.eviction", "outside_window"),
    "unknown kind": (["--set", "kind=warp_drive"], "kind", "unknown kind"),
    "negative latency": (["--set", "storage.latency_us=-1"], "storage.latency_us", "greater than 0"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_input_exits_2_naming_file_and_field(case, tmp_path, capsys):
    extra, field, expect = BAD_CASES[case]
    out_svg = tmp_path / "never.svg"
    assert main(["run", SEED, "--svg", str(out_svg), *extra]) == 2
    err = capsys.readouterr().err
    assert SEED in err and f": {field}: " in err and expect in err, err
    assert not out_svg.exists()


def test_malformed_toml(tmp_path, capsys):
    bad = _write(tmp_path, GOOD.replace("slots = 8", "slots = = 8"))
    assert main(["run", bad]) == 2
    err = capsys.readouterr().err
    assert bad in err and "malformed TOML" in err and "line" in err


def test_missing_file(capsys):
    assert main(["run", "/nonexistent/x.toml"]) == 2
    assert "/nonexistent/x.toml: file not found" in capsys.readouterr().err


def test_missing_kind(tmp_path, capsys):
    bad = _write(tmp_path, GOOD.replace('kind = "rope_window"', ""))
    assert main(["validate", bad]) == 2
    assert ": kind: required field is missing" in capsys.readouterr().err


def test_set_without_equals(capsys):
    assert main(["run", SEED, "--set", "cache.slots"]) == 2
    assert "PATH=VALUE" in capsys.readouterr().err


def test_usage_error_exit_2():
    p = subprocess.run([sys.executable, "-m", "kvviz", "frobnicate"], capture_output=True, text=True)
    assert p.returncode == 2 and "invalid choice" in p.stderr and "Traceback" not in p.stderr
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("error: kvviz: ")  # one line, no usage above it


def test_too_large_is_refused_with_estimate(tmp_path, capsys):
    assert main(["run", SEED, "--set", "sequence.length=30000000"]) == 2
    err = capsys.readouterr().err
    assert "too large to simulate: about 9.0 GB of memory" in err and f"{SEED}: sequence.length" in err
    assert main(["run", SEED, "--set", "sequence.length=3000000", "--set", "prefetch.window=1000000",
                 "--set", "sequence.queries=[8,12,13,14,15,16,17,18,19,20]",
                 "--set", "sequence.query_times_us=[0,1,2,3,4,5,6,7,8,9]"]) == 2
    assert "reduce prefetch.window" in capsys.readouterr().err
