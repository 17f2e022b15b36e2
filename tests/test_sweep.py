"""Sweeps over one and two axes, value parsing, and bad input."""
import json

import pytest

from kvviz import ScenarioError
from kvviz.cli import main
from kvviz.metric_paths import metric_value
from kvviz.scenario_data import read_toml
from kvviz.sweep import Axis, parse_values, run_sweep

from .conftest import SCENARIOS

SEED = str(SCENARIOS / "rope_prefetch_16.toml")


def test_parse_values():
    assert parse_values("1,2,3") == (1, 2, 3)
    assert parse_values("0:10:5") == (0, 5, 10)
    assert parse_values("1:3") == (1, 2, 3)
    assert parse_values("0.5:1.5:0.5") == (0.5, 1.0, 1.5)
    assert parse_values("lazy,outside_window") == ("lazy", "outside_window")
    assert parse_values("[4, 8]") == (4, 8)  # a TOML array, its commas its own
    assert parse_values("[[8, 12], [8, 13]]") == ([8, 12], [8, 13])
    with pytest.raises(ScenarioError):
        parse_values("5:1")


def test_one_axis_matches_single_runs():
    # Latency scales both stalls alike, so the speedup stays 8.0 while nothing overlaps.
    res = run_sweep(read_toml(SEED), [Axis("storage.latency_us", (5, 10, 25))], "naive_stall_us", workers=1)
    assert res.values == [80.0, 160.0, 400.0]


def test_two_axes_grid_shape_and_parallel_equals_serial():
    axes = [Axis("cache.slots", (1, 4, 8)), Axis("prefetch.window", (0, 1, 2, 3))]
    serial = run_sweep(read_toml(SEED), axes, "prefetch_stall_us", workers=1)
    parallel = run_sweep(read_toml(SEED), axes, "prefetch_stall_us", workers=2)
    assert serial.values == parallel.values
    assert len(serial.values) == 3 and all(len(r) == 4 for r in serial.values)
    # With the seed's full cache and window the stall is the seed's 50 µs.
    assert serial.values[2][3] == 50.0


def test_nested_metric_path():
    assert metric_value({"a": [{"b": 3}]}, "a.0.b") == 3
    with pytest.raises(KeyError):
        metric_value({"a": 1}, "b")


def test_cli_sweep_json_and_csv(capsys):
    assert main(["sweep", SEED, "--param", "cache.slots", "--values", "4,8", "--metric", "positions_fetched",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["params"][0]["values"] == [4, 8] and out["values"][1] == 11
    assert main(["sweep", SEED, "--param", "cache.slots", "--values", "4,8", "--param", "prefetch.window",
                 "--values", "1,3", "--metric", "hits", "--csv"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "cache.slots \\ prefetch.window,1,3" and len(lines) == 3


@pytest.mark.parametrize("args, field", [
    (["--param", "cache.slots", "--values", "0,1", "--metric", "hits"], "cache.slots"),
    (["--param", "cache.slots", "--values", "1,2", "--metric", "nope"], "--metric"),
    (["--param", "cache.nope", "--values", "1", "--metric", "hits"], "cache.nope"),
    (["--param", "cache.slots", "--values", "1:200", "--param", "prefetch.window", "--values", "1:200",
      "--metric", "hits"], "--values"),   # 40,000 points: refused before anything runs
    (["--param", "cache.slots", "--values", "1,2", "--metric", "hits", "--executor", "carrier-pigeon"],
     "--executor"),
])
def test_cli_sweep_bad_input(args, field, capsys):
    assert main(["sweep", SEED, *args]) == 2
    assert f": {field}: " in capsys.readouterr().err


@pytest.mark.slow  # a sweep in a child process, interrupted once it has run a while with its pool
def test_ctrl_c_stops_cleanly():
    import signal
    import subprocess
    import sys
    import time
    cmd = [sys.executable, "-m", "kvviz", "sweep", SEED, "--set", "sequence.length=400000",
           "--param", "storage.latency_us", "--values", "1:200", "--metric", "speedup"]
    # As from a terminal: Ctrl-C at its default. A child inherits an ignored or blocked SIGINT
    # from this process, and once in the whole suite SIGINT never reached the sweep (exit 0
    # after all 200 runs).
    inherited = (signal.getsignal(signal.SIGINT), signal.pthread_sigmask(signal.SIG_BLOCK, []))

    def as_from_a_terminal():
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=as_from_a_terminal)
    deadline = time.monotonic() + 60
    seen = ""
    while "sweep:" not in seen and time.monotonic() < deadline and p.poll() is None:
        seen += p.stderr.read(1)  # progress appears once the sweep has run for a second
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, (inherited, err[-2000:])
    assert "interrupted" in err and "Traceback" not in err


def test_metric_paths_round_trip_through_metric_value():
    from kvviz.metric_paths import metric_paths, metric_value
    m = {"speedup": 8.0, "policies": {"lru": {"hit_rate": 0.5, "dram_hit_share": None}},
         "rungs": [{"pct": 72}, {"pct": 80}], "ladder": [1, 2]}
    paths = metric_paths(m)
    assert list(paths) == ["speedup", "policies.lru.hit_rate", "policies.lru.dram_hit_share",
                           "rungs.0.pct", "rungs.1.pct", "ladder.0", "ladder.1"]
    assert all(metric_value(m, p) == v for p, v in paths.items())


def test_wildcard_metric_one_series_per_match(capsys):
    from kvviz.cli import main
    from kvviz.metric_paths import metric_family
    m = {"policies": {"recompute": {"hit_rate": 0.0}, "lru": {"hit_rate": 0.8}, "odd": {}}, "q": [{"s": 1}, {"s": 2}]}
    assert metric_family(m, "policies.*.hit_rate") == {"recompute": 0.0, "lru": 0.8}  # `odd` has none
    assert metric_family(m, "q.*.s") == {"0": 1, "1": 2}
    # each query of the worked example waits one round trip: its stall is the latency
    assert main(["sweep", "rope_prefetch_16", "--param", "storage.latency_us", "--values", "10,25",
                 "--metric", "queries.*.stall_us", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["series"] == ["0", "1"] and out["values"] == [[10.0, 10.0], [25.0, 25.0]]
    assert main(["sweep", "rope_prefetch_16", "--param", "storage.latency_us", "--values", "10,25",
                 "--param", "cache.slots", "--values", "8,16", "--metric", "queries.*.stall_us"]) == 2
    assert "one --param axis" in capsys.readouterr().err


def test_several_metrics_one_column_each(capsys):
    # one run per point, both metrics of it: the naive stall scales with latency (test_one_axis),
    # the prefetch stall is 20 and 40 µs (test_each_grid_point_runs_once)
    assert main(["sweep", "rope_prefetch_16", "--param", "storage.latency_us", "--values", "10,20",
                 "--metric", "naive_stall_us", "--metric", "prefetch_stall_us", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metrics"] == out["series"] == ["naive_stall_us", "prefetch_stall_us"]
    assert out["values"] == [[160.0, 20.0], [320.0, 40.0]]
    # nested paths print without the segments they share
    assert main(["sweep", "rope_prefetch_16", "--param", "storage.latency_us", "--values", "10",
                 "--metric", "queries.0.stall_us", "--metric", "queries.1.stall_us"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "queries:" and lines[1].split() == ["storage.latency_us", "0.stall_us", "1.stall_us"]
    for bad in (["--metric", "queries.*.stall_us"], ["--metric", "naive_stall_us"],
                ["--metric", "prefetch_stall_us", "--param", "cache.slots", "--values", "8"]):
        assert main(["sweep", "rope_prefetch_16", "--param", "storage.latency_us", "--values", "10",
                     "--metric", "naive_stall_us", *bad]) == 2
        assert "several --metric take one --param axis" in capsys.readouterr().err
    assert main(["sweep", "rope_prefetch_16", "--param", "storage.latency_us", "--values", "10",
                 "--metric", "naive_stall_us", "--metric", "nope"]) == 2
    assert "unknown metric 'nope'" in capsys.readouterr().err


def test_family_skips_tables_and_csv_quotes(capsys):
    from kvviz.cli import main
    assert main(["sweep", "rope_prefetch_16", "--param", "storage.latency_us", "--values", "10",
                 "--metric", "queries.0.*", "--csv"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "window" not in head and head.startswith("storage.latency_us,position")  # a list is not a value
    from kvviz.sweep import Axis, SweepResult
    csv_text = SweepResult((Axis("p", (1,)),), "m", ["a,b"]).to_csv()
    assert csv_text == 'p,m\n1,"a,b"\n'
    assert main(["sweep", "rope_prefetch_16", "--param", "storage.latency_us", "--values", "10",
                 "--metric", "queries*.stall_us"]) == 2
    assert "whole path segment" in capsys.readouterr().err


def test_each_grid_point_runs_once(monkeypatch):
    # the metric is checked on the first point's run, which is then the grid's first value
    import kvviz.sweep
    calls = []
    real = kvviz.sweep.simulate
    monkeypatch.setattr(kvviz.sweep, "simulate", lambda sc, *limit: calls.append(sc) or real(sc, *limit))
    res = run_sweep(read_toml(SCENARIOS / "rope_prefetch_16.toml"), [Axis("storage.latency_us", (10, 20, 25))],
                    "prefetch_stall_us", workers=1)
    assert res.values == [20.0, 40.0, 50.0] and len(calls) == 3  # two batched trips while they land before 26 µs


def test_cancel_acts_at_once_on_a_large_grid(monkeypatch):
    # points are validated as they are run, not all first: a Cancel (progress raising) after
    # two results leaves the other 4,997 points never validated, never run
    import kvviz.sweep
    validated, ran = [], []
    real_parse = kvviz.sweep.parse_scenario
    monkeypatch.setattr(kvviz.sweep, "parse_scenario", lambda *a: validated.append(1) or real_parse(*a))
    monkeypatch.setattr(kvviz.sweep, "simulate", lambda *a: ran.append(1) or type("R", (), {
        "metrics_dict": lambda self: {"speedup": 1.0}})())

    class Stop(Exception):
        pass

    calls = []

    def progress(done, total):
        calls.append((done, total))
        if len(calls) == 3:
            raise Stop

    with pytest.raises(Stop):
        run_sweep(read_toml(SCENARIOS / "rope_prefetch_16.toml"),
                  [Axis("storage.latency_us", tuple(range(1, 5001)))], "speedup", workers=1, progress=progress)
    assert calls == [(1, 5000), (2, 5000), (3, 5000)] and len(validated) == 3 and len(ran) == 3


