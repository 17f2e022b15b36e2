"""Runs too large for memory are refused before they start, with the estimate (issue 12,
"Sizes refused before memory runs out")."""
import pytest

from kvviz import ScenarioError, load_scenario, simulate
from kvviz.bundled import bundled_scenarios
from kvviz.cli import main as cli
from kvviz.mechanisms import mechanisms
from kvviz.size_guard import DEFAULT_MAX_MEMORY_GB


def estimate(sc):
    return mechanisms()[sc.kind].estimate(sc)


def _error(capsys, argv) -> str:
    assert cli(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_a_huge_sequence_is_refused_with_its_estimate(capsys):
    line = _error(capsys, ["run", "rope_prefetch_16", "--set", "sequence.length=19000000"])
    assert "sequence.length: too large to simulate: about 5.7 GB of memory" in line
    assert f"beyond the {DEFAULT_MAX_MEMORY_GB:g} GB limit" in line and "--max-memory-gb" in line


def test_many_conversations_are_refused_before_the_workload_is_built(capsys):
    line = _error(capsys, ["run", "attention_store_sharegpt", "--set", "workload.conversations=515000"])
    assert "workload.conversations: too large to simulate" in line


def test_the_limit_can_be_lowered_and_raised_deliberately(capsys):
    argv = ["run", "rope_prefetch_16", "--set", "sequence.length=200000"]
    assert "beyond the 0.01 GB limit" in _error(capsys, argv + ["--max-memory-gb", "0.01"])
    assert cli(argv + ["--max-memory-gb", "0.2"]) == 0
    sc = load_scenario("scenarios/rope_prefetch_16.toml", ["sequence.length=19000000"])
    with pytest.raises(ScenarioError, match="too large"):
        simulate(sc)
    assert estimate(sc).bytes < 10e9  # so 10 GB would let it run (not run here: a minute, 5 GB)


def test_the_estimate_covers_the_trace_it_predicts(capsys):
    for name, sets in (("rope_prefetch_16", ["sequence.length=200000"]),
                       ("engram_qwen3_32b_cxl", ["decode.steps=40"]),
                       ("attention_store_sharegpt", ["workload.conversations=300"])):
        sc = load_scenario(f"scenarios/{name}.toml", sets)
        tr = simulate(sc).trace
        held = sum(a.nbytes for a in (tr.spans, tr.instants, tr.counters, tr.residency))
        assert held <= estimate(sc).bytes, name


def test_every_bundled_scenario_is_estimated():
    # a mechanism's record must estimate (a kind without an estimate would run unguarded), a
    # trace-driven run too (from its file's size and lines)
    for path in bundled_scenarios():
        est = estimate(load_scenario(path))
        assert est is not None and est.bytes >= 0 and est.seconds >= 0 and est.field, path.name


@pytest.mark.parametrize("values", ["0:1:1e-9", "1:1000000"])
def test_sweeps_too_long_are_refused_before_any_list_is_built(capsys, values):
    line = _error(capsys, ["sweep", "rope_prefetch_16", "--param", "storage.latency_us", "--values", values,
                           "--metric", "speedup"])
    assert "a sweep runs at most 20,000 points" in line


def test_a_sweep_point_too_large_fails_the_sweep_before_it_runs(capsys):
    line = _error(capsys, ["sweep", "rope_prefetch_16", "--param", "sequence.length", "--values", "16,19000000",
                           "--metric", "speedup"])
    assert "sequence.length: too large to simulate" in line
