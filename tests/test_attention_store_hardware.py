"""attention_store's GPU setup: per-model free HBM from the preset and the hardware, the
presets' hardware defaults (gpus, MFU), host links shared or not, and their validation."""
import pytest

from kvviz import parse_scenario, simulate
from kvviz.cli import main
from kvviz.serving.kv_source import HIT_DRAM
from kvviz.serving.model_presets import HARDWARE, MFU_PAPER, PRESETS

from .conftest import SCENARIOS


def scenario(**sections):
    return parse_scenario({"kind": "attention_store", **sections})


# --- free HBM --------------------------------------------------------------------------------------

def test_free_hbm_of_65b_on_four_a100_by_hand():
    # 4 × 80 GB − 65.2e9 params × 2 B (FP16) = 320 − 130.4 = 189.6 GB: the paper's "190 GB" (§2.4).
    h = scenario(model={"preset": "llama-65b"}).hardware
    assert h.gpus == 4 and h.hbm_gb_per_gpu == 80 and h.hbm_reserve_gb_per_gpu == 0
    assert h.hbm_free_gb == pytest.approx(189.6, abs=1e-9)
    # A reserve of 8 GB per GPU (vLLM's 10%): 4 × 72 − 130.4 = 157.6 GB.
    h = scenario(model={"preset": "llama-65b"}, hardware={"hbm_reserve_gb_per_gpu": 8}).hardware
    assert h.hbm_free_gb == pytest.approx(157.6, abs=1e-9)
    # Given: used as given, whatever the model.
    assert scenario(model={"preset": "llama-65b"}, hardware={"hbm_free_gb": 190}).hardware.hbm_free_gb == 190


def test_every_preset_has_its_own_free_hbm():
    # gpus × 80 − 2 × params: 13B 320 − 26 = 294; 70B 320 − 138 = 182; Falcon 320 − 83.6 = 236.4;
    # Mistral on one GPU 80 − 14.48 = 65.52; Qwen3-32B on two 160 − 65.6 = 94.4.
    want = {"llama-13b": 294.0, "llama-65b": 189.6, "llama-70b": 182.0, "falcon-40b": 236.4, "mistral-7b": 65.52,
            "qwen3-32b": 94.4}
    assert set(want) == set(PRESETS) == set(HARDWARE)
    for p, gb in want.items():
        assert scenario(model={"preset": p}).hardware.hbm_free_gb == pytest.approx(gb, abs=1e-9), p
    # a preset's numbers follow an override of the model's size, and of the GPU count
    h = scenario(model={"preset": "llama-65b", "params_b": 60.0}, hardware={"gpus": 8}).hardware
    assert h.hbm_free_gb == pytest.approx(8 * 80 - 120.0)


def test_metrics_report_the_gpu_setup():
    sc = scenario(model={"preset": "llama-70b"}, workload={"conversations": 20, "seed": 2},
                  policies=["recompute"], trace_policy="recompute", serving={"compare_truncation": False},
                  hardware={"gpus_per_host_link": 2})
    g = simulate(sc).metrics_dict()["gpu"]
    assert g["hbm_free_gb"] == g["hbm_free_computed_gb"] == pytest.approx(182.0)
    assert (g["gpus"], g["weights_gb"], g["host_link_gbps"], g["host_links"], g["host_bw_gbps"]) == \
        (4, 138.0, 26.0, 2, 52.0)
    assert g["mfu"] == MFU_PAPER


def test_mistral_7b_preset():
    # Mistral 7B (Jiang et al. 2023, Table 1): 32 layers, 8 KV heads × 128, context 8,192; 7.24B
    # params; served on one A100 (the paper's Figure 4).
    sc = scenario(model={"preset": "mistral-7b"}, workload={"conversations": 30, "seed": 4},
                  policies=["recompute", "scheduler_aware"], serving={"compare_truncation": False})
    m, h = sc.model, sc.hardware
    assert (m.layers, m.context_window, m.kv_bytes_per_token) == (32, 8192, 2 * 32 * 8 * 128 * 2) == \
        (32, 8192, 131_072)
    assert (h.gpus, h.host_bw_gbps) == (1, 26.0)
    assert h.hbm_free_gb == pytest.approx(80 - 14.48)
    met = simulate(sc).metrics_dict()
    assert met["gpu"]["gpus"] == 1 and met["policies"]["scheduler_aware"]["hit_rate"] > 0
    # the file's (or --set's) value wins over the preset's
    assert scenario(model={"preset": "mistral-7b"}, hardware={"gpus": 2}).hardware.hbm_free_gb == \
        pytest.approx(160 - 14.48)


# --- host links ------------------------------------------------------------------------------------

@pytest.mark.parametrize("per_link, links", [(1, 4), (2, 2), (4, 1)])
def test_shared_host_links_one_job_load_time(tmp_path, per_link, links):
    # LLaMA-13B (819,200 B of KV per token, 40 layers) on 4 GPUs: one conversation, turn 2 a DRAM
    # hit on 64 history tokens (turn 1: 60 in + 4 out), the GPU idle, no read buffer.
    # The aggregate is gpus / gpus_per_host_link links × 26 GB/s: 104, 52, 26 B/ns. Per layer
    # 64 × 819,200 / 40 = 1,310,720 B: at 104 B/ns 12,603 ns (truncated), at 52 25,206, at 26
    # 50,412; the 40 layers' load span is 40 × that: 504,120 / 1,008,240 / 2,016,480 ns.
    from kvviz.mechanisms.attention_store import workload_of
    from kvviz.mechanisms.attention_store.serving import Prepared, Run
    p = tmp_path / "two.csv"
    p.write_text("conversation,turn,arrival_s,input_tokens,output_tokens\na,1,0,60,4\na,2,10,60,4\n")
    sc = scenario(policies=["lru"], trace_policy="lru", workload={"trace_file": str(p)},
                  hardware={"gpus": 4, "gpus_per_host_link": per_link},
                  serving={"arrivals": "recorded", "compare_truncation": False})
    assert sc.model.kv_bytes_per_token == 819_200 and sc.hardware.host_link_gbps == 26
    run = Run(sc, Prepared(sc, workload_of(sc)), "lru", "decoupled", record=True).run()
    assert run.batcher.pcie == sc.hardware.host_bw_gbps == 26 * links
    assert run.batcher.outcome[1] == HIT_DRAM
    load = run.tb.build().spans_of("PCIe · load DRAM→HBM")
    assert len(load) == 1
    per_layer = {4: 12_603, 2: 25_206, 1: 50_412}[links]
    assert int(load["end"][0] - load["start"][0]) == 40 * per_layer == 2_016_480 // links


# --- bad values --------------------------------------------------------------------------------------

BAD = {
    "links do not divide gpus": (["hardware.gpus_per_host_link=3"], "hardware.gpus_per_host_link",
                                 "3 does not divide hardware.gpus (4)"),
    "shared by more than the group": (["hardware.gpus=2", "hardware.gpus_per_host_link=4"],
                                      "hardware.gpus_per_host_link", "does not divide hardware.gpus (2)"),
    "zero links": (["hardware.gpus_per_host_link=0"], "hardware.gpus_per_host_link", "greater than or equal to 1"),
    "weights do not fit": (["hardware.gpus=1"], "hardware.gpus", "the weights (130.4 GB) leave no HBM for KV"),
    "reserve all of HBM": (["hardware.hbm_reserve_gb_per_gpu=80"], "hardware.hbm_reserve_gb_per_gpu",
                           "leaves nothing of hbm_gb_per_gpu (80 GB)"),
    "no HBM": (["hardware.hbm_gb_per_gpu=0"], "hardware.hbm_gb_per_gpu", "greater than 0"),
    "given free HBM too small": (["hardware.hbm_free_gb=5"], "hardware.hbm_free_gb", "cannot hold one running session"),
    "old link name": (["hardware.pcie_gbps=26"], "hardware.pcie_gbps", "unknown field"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_hardware_exit_2_naming_field(case, tmp_path, capsys):
    sets, field, expect = BAD[case]
    out = tmp_path / "never.json"
    args = [a for s in sets for a in ("--set", s)]
    assert main(["run", str(SCENARIOS / "attention_store_sharegpt.toml"), "--json-out", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert f": {field}: " in err and expect in err, err
    assert not out.exists()
