"""`kvviz operating-point` (issue 31 item 6): each model's headline claims at every load, the
prefill-share bound, the per-model figure and the README block."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvviz.cli import main
from kvviz.operating_point import (
    GPU,
    PREFILL,
    SATURATED,
    TTFT,
    ModelPoints,
    Point,
    conclusion,
    evaluate,
    headline_claims,
    point_overrides,
)
from kvviz.scenario import Claim, validate

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
SMALL = ("workload.conversations=150",)


def _claim(metric, paper, **kw):
    return validate(Claim, {"seed": "003", "claim": "c", "paper": paper, "scale": "ratio" if metric != TTFT else "share",
                            "basis": "simulated", "metric": metric, **kw}, "<t>")


def test_the_paper_pairs_imply_a_prefill_share():
    claims = {TTFT: _claim(TTFT, 0.61), PREFILL: _claim(PREFILL, 2.6), GPU: _claim(GPU, 1.9)}
    mp = ModelPoints("llama-65b", claims, [])
    assert mp.implied_share == pytest.approx((1 - 1 / 1.9) / (1 - 1 / 2.6))  # 0.770: the 77%
    assert mp.needed_share == pytest.approx((1 - 1 / 1.45) / (1 - 1 / 2.6))  # S at half the paper's effect
    mp.bound = 0.40
    assert conclusion(mp).startswith("no load: the paper's GPU-time speedup needs recompute's prefill")
    mp.bound = 0.60
    steady = Point(1.0, (), {TTFT: 0.6, PREFILL: 2.6, GPU: 1.0}, {TTFT: "reproduced", PREFILL: "reproduced",
                                                                  GPU: "not_reproduced"}, queue_len_mid=1)
    flat = Point(SATURATED, (), {GPU: 1.8}, {TTFT: "same_shape", PREFILL: "same_shape", GPU: "reproduced"},
                 queue_len_mid=4000, recompute_ttft_s=900.0)
    mp.points = [steady, flat]
    assert steady.steady and not steady.holds and not flat.steady and flat.all_pass and not flat.holds
    assert conclusion(mp).startswith("no steady load: all three pass only at λ = saturated")
    steady.verdicts[GPU] = "same_shape"
    assert steady.holds and conclusion(mp) == "hold together at λ = 1 turns/s"


def test_headline_claims_are_the_files_rows_with_only_a_model_preset():
    from kvviz.loading import parse_scenario
    from kvviz.scenario_data import read_toml
    data = read_toml(SCENARIOS / "attention_store_sharegpt.toml")
    by_model = headline_claims(parse_scenario(data, "f"), data)
    assert list(by_model) == ["llama-13b", "llama-65b", "llama-70b", "falcon-40b"]
    assert all(set(m) == {TTFT, PREFILL, GPU} for m in by_model.values())
    assert by_model["llama-65b"][GPU].paper == 1.9 and not by_model["llama-65b"][GPU].set
    assert "store.lookahead=waiting_queue" in point_overrides("llama-65b", SATURATED)  # the job list needs release times


def test_operating_point_runs_each_load_and_writes_figure_and_readme(tmp_path, capsys):
    f = str(SCENARIOS / "attention_store_sharegpt.toml")
    models = evaluate(f, SMALL, (0.5, SATURATED), ["llama-70b"])
    (mp,) = models
    assert [p.rate for p in mp.points] == [0.5, SATURATED] and not any(p.error for p in mp.points)
    low, flat = mp.points
    assert set(low.verdicts) == {TTFT, PREFILL, GPU} and low.steady and not flat.steady
    # flat out the prefill share is higher than at a low load, and never above the decode floor's bound
    assert low.recompute_prefill_share < flat.recompute_prefill_share <= mp.bound + 0.02
    readme = tmp_path / "README.md"
    readme.write_text("# x\n<!-- operating-point:begin attention_store_sharegpt -->\nold\n<!-- operating-point:end -->\n")
    assert main(["operating-point", f, "--set", SMALL[0], "--rates", "0.5", "--model", "llama-70b", "--svg-dir",
                 str(tmp_path), "--readme", str(readme), "--quiet"]) == 0
    svg = (tmp_path / "attention_store_sharegpt_llama-70b.svg").read_text()
    assert svg.startswith("<svg") and "p_max, the decode floor: " in svg
    text = readme.read_text()
    assert "old" not in text and "| llama-70b |" in text and "**llama-70b**" in text
    assert main(["operating-point", f, "--set", SMALL[0], "--rates", "0.5", "--model", "llama-70b", "--json",
                 "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out[0]["model"] == "llama-70b" and [p["rate"] for p in out[0]["points"]] == [0.5, "saturated"]
    assert main(["operating-point", f, "--model", "gpt-5", "--quiet"]) == 2
