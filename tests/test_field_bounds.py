"""Issue 29: scenario fields with no physical upper bound ran on nonsense (attention.radius =
1e30 printed "±1000000000000000000000000000000"; gpu_peak_tflops = 1e300 ended in a division by
zero naming no field). Each is refused at its field, and its bound still runs."""
import pytest

from kvviz.cli import main

BOUNDED = [
    ("rope_prefetch_16", "attention.radius", "1000000000000000000000000000000", "50000000"),
    ("rope_prefetch_16", "prefetch.priority_scale", "1e300", "1e9"),
    ("attention_store_sharegpt", "hardware.gpu_peak_tflops", "1e300", "1000000000"),
    ("attention_store_sharegpt", "workload.max_turn_tokens", "1000000000000", "100000000"),
    ("attention_store_sharegpt", "workload.input_tokens_mean", "1e30", "100000000"),
    ("attention_store_sharegpt", "workload.output_tokens_mean", "1e30", "100000000"),
    ("attention_store_sharegpt", "model.context_window", "1000000000000", "100000000"),
    ("attention_store_sharegpt", "hardware.block_tokens", "1000000000000", "100000000"),
]


@pytest.mark.parametrize("scenario, field, bad, top", BOUNDED)
def test_a_value_past_its_bound_is_refused_at_its_field(capsys, scenario, field, bad, top):
    assert main(["validate", scenario, "--set", f"{field}={bad}"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f": {field}: Input should be less than or equal to" in err, err
    main(["validate", scenario, "--set", f"{field}={top}"])  # other rules may refuse the whole (a 100M-token
    assert "less than or equal" not in capsys.readouterr().err  # window's session outgrows DRAM); not the bound


def test_radius_at_its_bound_runs(capsys):
    assert main(["run", "rope_prefetch_16", "--set", "attention.radius=50000000"]) == 0
    assert "±50000000" in capsys.readouterr().out


def test_the_fastest_gpu_allowed_runs(capsys):
    argv = ["run", "attention_store_sharegpt", "--set", "hardware.gpu_peak_tflops=1e9",
            "--set", "workload.conversations=30", "--json"]
    assert main(argv) in (0, 1)  # 1: the scenario's checks, meant for 9,000 conversations
    assert "error" not in capsys.readouterr().err
