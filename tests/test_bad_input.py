"""Input that once ended in a traceback (issue 12, "Tracebacks"): every case must exit 2 with
one line `error: FILE: path: message`, and `validate` must refuse what `run` cannot simulate."""
import subprocess
import sys

import pytest

from kvviz.cli import main as cli
from kvviz.limits import nesting_depth, unrepresentable

SMALL_STORE = ["--set", "workload.conversations=20"]


def _one_error_line(capsys, argv) -> str:
    rc = cli(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2, err
    assert len(err) == 1 and err[0].startswith("error: ") and "Traceback" not in err[0], err
    return err[0]


@pytest.mark.parametrize("kind", ['["rope_window"]', "{a=1}"])
def test_a_kind_that_is_not_a_string(tmp_path, capsys, kind):
    f = tmp_path / "k.toml"
    f.write_text(f"kind = {kind}\n")
    for cmd in ("run", "validate"):
        line = _one_error_line(capsys, [cmd, str(f)])
        assert f"{f}: kind: must be a string" in line


def test_arrays_nested_hundreds_deep(tmp_path, capsys):
    f = tmp_path / "deep.toml"
    f.write_text('kind = "rope_window"\nx = ' + "[" * 600 + "]" * 600 + "\n")
    assert "nested too deep" in _one_error_line(capsys, ["run", str(f)])
    assert "nested too deep" in _one_error_line(capsys, ["run", "rope_prefetch_16", "--set",
                                                          "sequence.queries=" + "[" * 600 + "]" * 600])


@pytest.mark.parametrize("argv, where", [
    (["attention_store_sharegpt", *SMALL_STORE, "--set", "hardware.dram_gb=inf"], "hardware.dram_gb: "),
    (["attention_store_sharegpt", *SMALL_STORE, "--set", "hardware.dram_gb=1e300"], "hardware.dram_gb: "),
    (["attention_store_sharegpt", *SMALL_STORE, "--set", "workload.think_time_mean_s=1e18"],
     "workload.think_time_mean_s: "),
    (["engram_qwen3_32b_cxl", "--set", "model.step_time_us=1e-5"], "model.step_time_us: "),
    (["engram_qwen3_32b_cxl", "--set", "model.step_time_us=0.01"], "model.step_time_us: "),  # 0 ns per layer
    (["rope_prefetch_16", "--set", "sequence.query_times_us=[0,nan]"], "sequence.query_times_us[1]: "),
    (["rope_prefetch_16", "--set", "sequence.query_times_us=[0,inf]"], "sequence.query_times_us[1]: "),
    (["rope_prefetch_16", "--set", "sequence.query_times_us=[0,1e16]"], "sequence.query_times_us[1]: "),
    (["rope_prefetch_16", "--set", "reads.0.t_us=1e16"], "reads[0].t_us: "),
    # exponential think times of this mean would not fit 64-bit ns (the field is bounded)
    (["attention_store_sharegpt", *SMALL_STORE, "--set", "serving.arrivals=closed_loop", "--set",
      "store.lookahead=waiting_queue", "--set", "workload.think_time_mean_s=3e9"], "workload.think_time_mean_s: "),
])
def test_values_the_simulation_cannot_represent_are_refused_at_their_field(capsys, argv, where):
    for cmd in ("run", "validate"):
        line = _one_error_line(capsys, [cmd, *argv])
        assert f".toml: {where}" in line


@pytest.mark.parametrize("argv", [
    # 20 conversations' ~120 turns, one every 10^9 s on average: their times sum past int64 ns
    ["attention_store_sharegpt", *SMALL_STORE, "--set", "workload.arrival_rate_per_s=1e-9"],
])
def test_values_that_only_overflow_together_end_in_one_message(capsys, argv):
    line = _one_error_line(capsys, ["run", *argv])
    assert ".toml: " in line and "beyond what the simulation can represent" in line


def test_replay_sizes_beyond_int64(tmp_path, capsys):
    big = tmp_path / "big.csv"
    big.write_text("time,id,size\n0,1," + "1" + "0" * 26 + "\n1,2,5\n")
    assert f"{big}: line 2: size: beyond" in _one_error_line(capsys, ["replay", str(big), "--policy", "lru",
                                                                       "--capacity", "10"])
    ok = tmp_path / "ok.csv"
    ok.write_text("time,id,size\n0,1,10\n1,2,5\n")
    assert "--capacity: capacity is beyond" in _one_error_line(capsys, ["replay", str(ok), "--policy", "lru",
                                                                         "--capacity", "1e400"])


@pytest.mark.parametrize("values", ["1:inf", "nan:5", "0:1:nan"])
def test_sweep_ranges_must_be_finite(capsys, values):
    line = _one_error_line(capsys, ["sweep", "rope_prefetch_16", "--param", "storage.latency_us",
                                    "--values", values, "--metric", "speedup"])
    assert "must be finite numbers" in line


@pytest.mark.gui
def test_gui_refuses_a_bad_kind_and_bad_sizes_with_exit_2(tmp_path):
    f = tmp_path / "k.toml"
    f.write_text('kind = ["rope_window"]\n')
    for args in ([str(f)], ["rope_prefetch_16", "--size", "99999x99999"], ["rope_prefetch_16", "--size", "0x0"]):
        p = subprocess.run([sys.executable, "-m", "app.main", *args, "--screenshot", str(tmp_path / "x.png")],
                           capture_output=True, text=True, timeout=120, env={"QT_QPA_PLATFORM": "offscreen",
                                                                             "PATH": "/usr/bin:/bin"})
        err = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(err) == 1 and err[0].startswith("error: "), (args, p.stderr)
    assert not (tmp_path / "x.png").exists()


@pytest.mark.gui
def test_the_panel_opens_a_file_whose_kind_is_a_list(tmp_path, qtbot):
    from app.params import ParameterPanel
    from kvviz import ScenarioError
    f = tmp_path / "k.toml"
    f.write_text('kind = ["rope_window"]\n')
    panel = ParameterPanel()
    qtbot.addWidget(panel)
    with pytest.raises(ScenarioError, match="kind: must be a string"):
        panel.load(str(f), strict=False)


def test_limits():
    assert unrepresentable(1e16, "µs") and unrepresentable(1e-5, "µs") and unrepresentable(1e300, "GB")
    assert unrepresentable(1e-12, "GB/s") and unrepresentable(1e-11, "1/s")
    assert unrepresentable(4e6, "s") is None and unrepresentable(0, "µs") is None and unrepresentable(1, "ns") is None
    assert unrepresentable(1e300, "tokens") is None  # counts are the size guard's business
    assert nesting_depth(1) == 0 and nesting_depth({"a": [[1]]}) == 3
    assert nesting_depth([[[[]]]] * 3) == 4


# --- wrong types: a TOML file is typed (issue 12, "Wrong types silently accepted") ----------

@pytest.mark.parametrize("assignment, where", [
    ("cache.slots=true", "cache.slots: Input should be a valid integer"),
    ('attention.causal="off"', "attention.causal: Input should be a valid boolean"),
    ('cache.slots="8"', "cache.slots: Input should be a valid integer"),
    ('storage.latency_us="25"', "storage.latency_us: Input should be a valid number"),
    ('sequence.queries=["8","12"]', "sequence.queries[0]: Input should be a valid integer"),
    ('prefetch.priority_scale="inf"', "prefetch.priority_scale: Input should be a valid number"),
    ("cache.slots=8.0", "cache.slots: Input should be a valid integer"),
])
def test_values_of_the_wrong_type_are_refused(capsys, assignment, where):
    assert cli(["validate", "rope_prefetch_16", "--set", assignment]) == 2
    err = capsys.readouterr().err.strip().splitlines()  # one line per wrong value
    assert all(line.startswith("error: ") for line in err) and where in err[0], err


def test_a_toml_integer_fills_a_float_field(capsys):
    assert cli(["validate", "rope_prefetch_16", "--set", "storage.latency_us=25"]) == 0


def test_a_byte_order_mark_is_accepted(tmp_path, capsys):
    toml = tmp_path / "bom.toml"
    toml.write_bytes(b"\xef\xbb\xbf" + b'kind = "rope_window"\n')
    assert cli(["validate", str(toml)]) == 0
    trace = tmp_path / "bom.csv"
    trace.write_bytes(b"\xef\xbb\xbf" + b"time,id,size\n0,1,10\n1,2,10\n")
    assert cli(["replay", str(trace), "--capacity", "10"]) == 0


def test_an_empty_path_segment_and_a_repeated_param_are_refused(capsys):
    assert "empty segment" in _one_error_line(capsys, ["run", "rope_prefetch_16", "--set", "cache..slots=4"])
    line = _one_error_line(capsys, ["sweep", "rope_prefetch_16", "--param", "cache.slots", "--values", "4,8",
                                    "--param", "cache.slots", "--values", "4,8", "--metric", "speedup"])
    assert "the same parameter twice" in line


@pytest.mark.parametrize("time", ["nan", "inf", "-1"])
def test_replay_refuses_times_that_are_not_finite_or_negative(tmp_path, capsys, time):
    trace = tmp_path / "t.csv"
    trace.write_text(f"time,id,size\n0,1,10\n{time},2,10\n")
    assert f"{trace}: line 3: time: must be a finite number >= 0" in _one_error_line(
        capsys, ["replay", str(trace), "--capacity", "10"])


def test_replay_refuses_an_empty_capacity_entry(tmp_path, capsys):
    trace = tmp_path / "t.csv"
    trace.write_text("time,id,size\n0,1,10\n")
    assert "an empty entry" in _one_error_line(capsys, ["replay", str(trace), "--capacities", "10,,20"])


@pytest.mark.gui
def test_a_panel_field_typed_hundreds_deep_is_marked_not_raised(qtbot):
    from app.params.values import _ParseError, field_spec, parse_text
    from kvviz.mechanisms.ladder import LadderScenario
    spec = field_spec("base", LadderScenario.model_fields["base"])  # a free TOML value
    with pytest.raises(_ParseError, match="nested too deep"):
        parse_text(spec, "[" * 600 + "]" * 600)


@pytest.mark.parametrize("args, flag", [
    (["--from-us", "nan"], "--from-us"), (["--from-us", "inf"], "--from-us"), (["--to-us", "1e300"], "--to-us"),
    (["--from-us", "-5"], "--from-us"), (["--width", "100000000"], "--width"), (["--height", "100000000"], "--height"),
])
def test_figure_arguments_out_of_range_write_nothing(tmp_path, capsys, args, flag):
    svg = tmp_path / "t.svg"
    assert f"kvviz run: {flag}: " in _one_error_line(capsys, ["run", "rope_prefetch_16", "--svg", str(svg), *args])
    assert not svg.exists()


def test_a_png_too_many_pixels_wide_is_refused_before_rendering(tmp_path, capsys):
    png = tmp_path / "t.png"
    line = _one_error_line(capsys, ["run", "rope_prefetch_16", "--png", str(png), "--width", "20000"])
    assert "62,500 pixels wide" in line and not png.exists()


@pytest.mark.parametrize("workers", ["0", "-3", "100000", "x"])
def test_sweep_worker_counts_are_bounded(capsys, workers):
    with pytest.raises(SystemExit) as e:
        cli(["sweep", "rope_prefetch_16", "--param", "cache.slots", "--values", "1,2", "--metric", "speedup",
             "--workers", workers])
    assert e.value.code == 2 and "--workers" in capsys.readouterr().err


def test_a_missing_trace_file_is_refused_at_its_field(tmp_path, capsys):
    """Named at workload.trace_file when the scenario is read, so the app marks that field (a
    run failing later left the app showing the previous scenario, with nothing marked)."""
    f = tmp_path / "s.toml"
    f.write_text('kind = "attention_store"\n[workload]\ntrace_file = "nope.jsonl"\n')
    line = _one_error_line(capsys, ["run", str(f)])
    assert f"workload.trace_file: trace file not found: {tmp_path / 'nope.jsonl'}" in line
