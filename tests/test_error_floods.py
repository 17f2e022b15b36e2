"""Errors are one line or a short list (issue 23): at most 20 validation messages, then
"… and N more"; a million wrong-typed items in an array print 21 lines, and listing them costs
no more than validating them (pydantic's own list of a million errors took 5 s, formatting it 40)."""
import subprocess
import sys

import pytest

from kvviz import parse_scenario
from kvviz.errors import MAX_MESSAGES, ScenarioError
from kvviz.scenario_data import read_toml

from .conftest import ROOT, SCENARIOS


def _engram(ids):
    data = read_toml(SCENARIOS / "engram_qwen3_32b_cxl.toml")
    data["tokens"]["source"] = "inline"
    data["tokens"]["ids"] = ids
    return data


def test_a_million_wrong_items_print_at_most_21_lines(tmp_path):
    f = tmp_path / "flood.toml"
    text = (SCENARIOS / "engram_qwen3_32b_cxl.toml").read_text().replace('source = "zipf"', 'source = "inline"', 1)
    f.write_text(text.replace("[tokens]\n", "[tokens]\nids = [" + '"x",' * 1_000_000 + "]\n", 1))
    p = subprocess.run([sys.executable, "-m", "kvviz", "validate", str(f)], capture_output=True, text=True, cwd=ROOT,
                       timeout=300)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == MAX_MESSAGES + 1, p.stderr[-3000:]
    assert lines[0].endswith("tokens.ids[0]: Input should be a valid list (got 'x')")
    assert lines[-1] == "error: … and 999,980 more"


def test_the_count_is_exact_and_the_first_problems_are_listed():
    with pytest.raises(ScenarioError) as e:
        parse_scenario(_engram(["x"] * 25), "f.toml")
    lines = e.value.all_messages()
    assert len(lines) == 21 and lines[0].endswith("tokens.ids[0]: Input should be a valid list (got 'x')")
    assert lines[-1] == "… and 5 more"  # 25 problems, 20 listed
    with pytest.raises(ScenarioError) as e:
        parse_scenario(_engram(["x"] * 3), "f.toml")
    assert len(e.value.all_messages()) == 3  # no count line when everything is listed


def test_problems_beyond_the_first_items_are_counted_in_one_line():
    with pytest.raises(ScenarioError) as e:
        parse_scenario(_engram([[1, 2, 3]] * 30 + ["x"] * 40), "f.toml")
    lines = e.value.all_messages()
    assert len(lines) == 1 and "40 values are invalid" in lines[0]


def test_a_long_value_is_quoted_short():
    data = read_toml(SCENARIOS / "rope_prefetch_16.toml")
    data["name"] = 5
    data["kind"] = "rope_window"
    data["cache"]["slots"] = "y" * 10_000
    with pytest.raises(ScenarioError) as e:
        parse_scenario(data, "f.toml")
    assert all(len(line) < 300 for line in e.value.all_messages())
