"""[[expect]] checks: validated like any field, evaluated after the run, gating only `kvviz check`."""
import pytest

from kvviz import load_scenario, simulate
from kvviz.checks import evaluate
from kvviz.cli import main
from kvviz.errors import ScenarioError
from kvviz.scenario import Expectation

from .conftest import SCENARIOS

ROPE = str(SCENARIOS / "rope_prefetch_16.toml")


def test_bounds_and_tolerance():
    m = {"speedup": 8.0, "feasible": True, "mode": "B", "bad": float("nan"), "nested": {"rates": [0.5, 0.9]}}
    exp = [Expectation(metric="speedup", equals=8.0),
           Expectation(metric="speedup", equals=8.001, rel_tol=1e-3),
           Expectation(metric="speedup", equals=8.001),                 # outside the default tolerance
           Expectation(metric="feasible", equals=True),
           Expectation(metric="mode", equals="A"),
           Expectation(metric="nested.rates.1", min=0.8, max=1.0),
           Expectation(metric="nested.rates.0", min=0.8),
           Expectation(metric="bad", min=0.0),                           # NaN passes no bound
           Expectation(metric="missing", equals=1)]
    rows = evaluate(exp, m)
    assert [r["ok"] for r in rows] == [True, True, False, True, False, True, False, False, False]
    assert rows[-1]["actual"] == "no such metric" and rows[5]["expect"] == "≥ 0.8 and ≤ 1.0"
    assert rows[1]["expect"] == "= 8.001 (±0.001 relative)" and rows[4]["expect"] == '= "A"'
    assert rows[4]["actual"] == '"B"'
    # a bool is not a number and a string is not a bool, whichever side it is on
    kinds = {"t": True, "one": 1, "zero": 0.0, "yes": "yes"}
    pairs = [("t", 1), ("one", True), ("zero", False), ("yes", True), ("t", "yes")]
    assert [Expectation(metric=k, equals=e).holds(kinds[k]) for k, e in pairs] == [False] * 5
    assert Expectation(metric="n", equals=100, rel_tol=0.05).wanted() == "= 100 (±0.05 relative)"


@pytest.mark.parametrize("bad,field,msg", [
    ({"metric": "x"}, "expect[0].equals", "give equals, min, max, greater_than or at_least"),
    ({"metric": "x", "equals": 1, "min": 0}, "expect[0].equals", "not both"),
    ({"metric": "x", "min": 2, "max": 1}, "expect[0].min", "above max"),
    ({"metric": "x", "equals": [1, 2]}, "expect[0].equals", "must be a number, true/false or a string"),
    ({"metric": "x", "min": float("nan")}, "expect[0].min", "finite"),
])
def test_bad_expectations_name_the_field(tmp_path, capsys, bad, field, msg):
    f = tmp_path / "s.toml"
    body = "\n".join(f"{k} = {v!r}".replace("'", '"') for k, v in bad.items())
    f.write_text(f'kind = "rope_window"\n[[expect]]\n{body}\n')
    with pytest.raises(ScenarioError):
        load_scenario(f)
    assert main(["check", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"{field}: " in err and msg in err


def test_results_carry_the_checks_and_run_is_unchanged():
    sc = load_scenario(ROPE)
    r = simulate(sc)
    assert len(r.metrics["checks"]) == len(sc.expect) == 7 and all(c["ok"] for c in r.metrics["checks"])
    bare = simulate(sc.model_copy(update={"expect": []}))
    assert "checks" not in bare.metrics
    assert {k: v for k, v in r.metrics_dict().items() if k != "checks"} == bare.metrics_dict()


def test_check_command_gates_and_run_only_reports(capsys):
    assert main(["check", ROPE, "engram_qwen3_32b_rdma"]) == 0
    assert "8 of 8 checks passed" in capsys.readouterr().out
    assert main(["check", ROPE, "--set", "storage.latency_us=10"]) == 1  # 160 µs vs the seed's 400
    out = capsys.readouterr().out
    assert "FAIL" in out and "naive_stall_us = 160.0, expected = 400.0" in out and "2 failed" in out
    assert main(["run", ROPE, "--set", "storage.latency_us=10"]) == 0   # exploring is not failing
    assert "check failed" in capsys.readouterr().err
