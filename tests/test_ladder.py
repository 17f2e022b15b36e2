"""Hit-rate ladders (issue 7): the seed's modeled ladder against hand computation, the
simulated ladder, bad input, and the RoPE bound."""
from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from kvviz import load_scenario, parse_scenario, simulate
from kvviz.attention_profile import calibrate_decay
from kvviz.cli import main
from kvviz.mechanisms.ladder import ACCESSES_SHOWN, LadderScenario, Tiers, arrival_hit_shares, ladder_figures
from kvviz.mechanisms.rope_window.rope_bound import (
    bound_vs_assumption,
    rope_envelope,
    rope_frequencies,
    rope_relative_bound,
    scenario_profile,
)
from kvviz.scenario_data import read_toml
from kvviz.trace import SPAN_KINDS

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
SEED = SCENARIOS / "ladder_seed.toml"
SIM = SCENARIOS / "ladder_simulated.toml"
ROPE16 = SCENARIOS / "rope_prefetch_16.toml"

# Seed 000 by hand. h = HBM hit rate; the misses 1-h go 0.9 to CXL (200 ns) and 0.1 to
# flash (25,000 ns); HBM is 100 ns.
#   72%: 0.72*100 = 72 | 0.28*0.9*200 = 50.4 | 0.28*0.1*25000 = 0.028*25000 = 700 | 822.4
#   80%: 0.80*100 = 80 | 0.20*0.9*200 = 36   | 0.20*0.1*25000 = 0.020*25000 = 500 | 616
#   87%: 0.87*100 = 87 | 0.13*0.9*200 = 23.4 | 0.13*0.1*25000 = 0.013*25000 = 325 | 435.4
#   93%: 0.93*100 = 93 | 0.07*0.9*200 = 12.6 | 0.07*0.1*25000 = 0.007*25000 = 175 | 280.6
#   97%: 0.97*100 = 97 | 0.03*0.9*200 = 5.4  | 0.03*0.1*25000 = 0.003*25000 = 75  | 177.4
HAND = [  # (hit %, hbm ns, cxl ns, flash ns, mean ns)
    (72, 72, 50.4, 700, 822.4),
    (80, 80, 36, 500, 616),
    (87, 87, 23.4, 325, 435.4),
    (93, 93, 12.6, 175, 280.6),
    (97, 97, 5.4, 75, 177.4),
]


def _q(x) -> Fraction:
    return Fraction(str(x))


# --- modeled ladder ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def seed():
    return simulate(load_scenario(SEED))


def test_seed_rungs_match_hand_computation(seed):
    rungs = seed.metrics_dict()["rungs"]
    assert [r["hbm_hit_pct"] for r in rungs] == [72, 80, 87, 93, 97]
    for r, (_, hbm, cxl, flash, mean) in zip(rungs, HAND):
        # Exact fractions inside, so these are equalities, not approximations.
        assert r["contrib_ns"] == {"hbm": hbm, "cxl": cxl, "flash": flash}
        assert hbm + cxl + flash == pytest.approx(mean, abs=1e-12)
        assert r["mean_latency_ns"] == mean


def test_seed_speedups_and_increments(seed):
    rungs = seed.metrics_dict()["rungs"]
    means = [_q(m) for *_, m in HAND]
    # 822.4/822.4 = 1; 822.4/616 = 1.3351; 822.4/435.4 = 1.8888; 822.4/280.6 = 2.9309;
    # 822.4/177.4 = 4.6359
    assert [r["speedup_vs_first"] for r in rungs] == [float(means[0] / m) for m in means]
    assert rungs[-1]["speedup_vs_first"] == pytest.approx(4.6359, abs=1e-4)
    assert [r["increment_pts"] for r in rungs] == [None, 8, 7, 6, 4]  # the last: seed's "+4 pts"


def test_seed_flash_tail_summary(seed):
    m = seed.metrics_dict()
    # At 97%: 0.3% of accesses reach flash, and they are 75 of 177.4 ns = 42.3% of the mean.
    assert m["flash_share_of_accesses"] == pytest.approx(0.003, abs=1e-15)
    assert m["flash_share_of_latency"] == float(Fraction(75) / _q(177.4))
    assert m["non_hbm_share_of_latency"] == pytest.approx((5.4 + 75) / 177.4)
    assert m["last_mean_latency_ns"] == 177.4
    # At every earlier rung flash is the largest single part of the mean.
    for r in m["rungs"][:-1]:
        assert r["contrib_ns"]["flash"] > r["contrib_ns"]["hbm"] + r["contrib_ns"]["cxl"]


def test_seed_trace_stacks_tiers_per_rung(seed):
    tr = seed.trace
    assert len(tr.lanes) == 5
    for i, (_, hbm, cxl, flash, mean) in enumerate(HAND):
        s = tr.spans[tr.spans["lane"] == i]
        assert [SPAN_KINDS[k] for k in s["kind"]] == ["load", "fetch", "stall"]  # HBM, CXL, flash
        # Back to back from 0, each tier's summed latency over 1,000 accesses.
        assert s["start"][0] == 0 and list(s["start"][1:]) == list(s["end"][:-1])
        assert list(s["end"] - s["start"]) == [round(x * ACCESSES_SHOWN) for x in (hbm, cxl, flash)]
        assert s["end"][-1] == round(mean * ACCESSES_SHOWN)
    assert set(tr.spans_of(tr.lanes["name"][4], "stall")["end"]) == {177_400}


def test_ladder_figures_helper_is_live_editable():
    # What an app does on every edit: recompute a ladder without a simulation.
    figs = ladder_figures([50, None, 100], Tiers())
    assert figs[0]["mean_latency_ns"] == 50 + 0.5 * 0.9 * 200 + 0.5 * 0.1 * 25000
    assert figs[1]["mean_latency_ns"] is None and figs[2]["increment_pts"] is None
    assert figs[2]["contrib_ns"] == {"hbm": 100, "cxl": 0, "flash": 0}


def test_cli_prints_seed_ladder(capsys):
    assert main(["run", str(SEED)]) == 0
    out = capsys.readouterr().out
    assert "822.4 → 616 → 435.4 → 280.6 → 177.4" in out
    assert main(["run", str(SEED), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["kind"] == "ladder" and len(data["metrics"]["rungs"]) == 5


# --- simulated ladder ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def sim():
    return simulate(load_scenario(SIM))


def test_simulated_overrides_are_cumulative():
    runs = load_scenario(SIM).rung_scenarios()
    assert [(r.cache.slots, r.prefetch.window) for r in runs] == [(8, 0), (16, 0), (16, 3), (16, 6), (32, 12)]


def test_simulated_ladder_climbs_and_is_compared(sim):
    rungs = sim.metrics_dict()["rungs"]
    hits = [r["simulated"]["hbm_hit_pct"] for r in rungs]
    # Each rung only adds slots or widens the window, with slots to spare: never worse.
    assert all(b >= a for a, b in zip(hits, hits[1:])), hits
    assert hits[2] - hits[1] > 20  # prefetching ahead is what moves the needle here
    for r in rungs:
        s = r["simulated"]
        assert r["disagreement_pts"] == pytest.approx(s["hbm_hit_pct"] - r["hbm_hit_pct"], abs=1e-3)
        assert s["queries_measured"] == 56 - 16
    # Without prefetch a query waits for its own position, so at service more mass is
    # resident than at arrival (with prefetch the two differ both ways: evictions happen
    # as the query arrives, its new window lands after it is served).
    assert rungs[0]["simulated"]["mass_covered_at_serve_pct"] > hits[0]
    lanes = list(sim.trace.lanes["group"])
    assert lanes.count("Modeled · 1,000 accesses") == 5 and lanes.count("Simulated · 1,000 accesses") == 5


def test_arrival_hit_share_by_hand():
    """rope_prefetch_16: q=8 arrives to an empty cache; q=12 arrives at 50 µs to positions
    5..11 (landed at 25 µs, evicted by q=12 only as it arrives)."""
    res = simulate(load_scenario(ROPE16))
    r = calibrate_decay(12, 3, 3, 0.72)  # q=12 attends 0..15: 12 left, 3 right
    total = 1 + sum(r**d for d in range(1, 13)) + sum(r**d for d in range(1, 4))
    on_5_to_11 = sum(r**d for d in range(1, 8))  # distances 7..1
    assert arrival_hit_shares(res) == pytest.approx([0.0, on_5_to_11 / total])


def _ladder_file(tmp_path: Path, base_line: str, rungs: str) -> Path:
    (tmp_path / "bases").mkdir()
    (tmp_path / "bases" / "rope.toml").write_text(ROPE16.read_text())
    f = tmp_path / "lad.toml"
    f.write_text(f'kind = "ladder"\n{base_line}\n{rungs}')
    return f


def test_base_from_file_relative_to_ladder(tmp_path, monkeypatch):
    f = _ladder_file(tmp_path, 'base = "bases/rope.toml"',
                     '[[rungs]]\nlabel = "as is"\n[[rungs]]\nlabel = "more slots"\n'
                     'overrides = ["cache.slots=16"]\n')
    # With the ladder's path in the validation context, from any cwd...
    sc = LadderScenario.model_validate(read_toml(f), context={"source": str(f)})
    assert sc.base == str((tmp_path / "bases" / "rope.toml").resolve())
    assert [r.cache.slots for r in sc.rung_scenarios()] == [8, 16]
    # ...and from the CLI, run beside the file.
    monkeypatch.chdir(tmp_path)
    res = simulate(load_scenario("lad.toml"))
    assert res.metrics["rungs"][0]["simulated"]["hbm_hit_pct"] == pytest.approx(
        100 * np.mean(arrival_hit_shares(simulate(load_scenario(ROPE16)))), abs=1e-4)
    assert res.metrics["rungs"][0]["disagreement_pts"] is None  # no modeled value given


# --- bad input -----------------------------------------------------------------------------

@pytest.mark.parametrize("file, assignment, path", [
    (SEED, "rungs.2.hbm_hit_pct=120", "rungs[2].hbm_hit_pct"),
    (SEED, "rungs.0.hbm_hit_pct=-0.5", "rungs[0].hbm_hit_pct"),
    (SEED, "tiers.hbm_ns=-1", "tiers.hbm_ns"),
    (SEED, "tiers.cxl_ns=-200", "tiers.cxl_ns"),
    (SEED, "tiers.flash_ns=-25000", "tiers.flash_ns"),
    (SEED, "tiers.flash_share_of_misses=1.5", "tiers.flash_share_of_misses"),
    (SEED, "tiers.flash_share_of_misses=-0.1", "tiers.flash_share_of_misses"),
    (SEED, 'rungs.1.overrides=["cache.slots=16"]', "rungs[1].overrides"),
    (SIM, 'rungs.2.overrides=["cache.slotz=4"]', "rungs[2].overrides[0]"),
    (SIM, 'rungs.1.overrides=["prefetch.window=2", "prefetch.window.x=3"]', "rungs[1].overrides[1]"),
    (SIM, 'rungs.3.overrides=["kind=ladder"]', "rungs[3].overrides[0]"),
    (SIM, 'rungs.1.overrides=["cache.slots=0"]', "rungs[1].overrides[0]"),
    (SIM, 'rungs.0.overrides=["window"]', "rungs[0].overrides[0]"),
    (SIM, "base.cache.slots=0", "base.cache.slots"),
    (SIM, "base.kind=ladder", "base.kind"),
    (SIM, "base=no_such_file.toml", "base"),
    (SIM, "warmup_queries=56", "warmup_queries"),
    # Refused by rope_window at run time (too large): still blamed on the rung.
    (SIM, 'rungs.4.overrides=["prefetch.window=300000"]', "rungs[4].overrides"),
])
def test_bad_input_exits_2_naming_the_field(tmp_path, capsys, file, assignment, path):
    out = tmp_path / "out.json"
    assert main(["run", str(file), "--set", assignment, "--json-out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{file}: {path}:" in err, err
    assert not out.exists()


def test_override_error_names_rung_and_field(capsys):
    main(["run", str(SIM), "--set", 'rungs.2.overrides=["cache.slotz=4"]'])
    err = capsys.readouterr().err
    assert "rungs[2].overrides[0]" in err and "'cache.slotz'" in err and "cache has: slots" in err


def test_modeled_rung_needs_a_hit_rate():
    with pytest.raises(Exception, match=r"rungs\[0\]\.hbm_hit_pct"):
        parse_scenario({"kind": "ladder", "rungs": [{"label": "x"}]})


# --- the RoPE bound ------------------------------------------------------------------------

@pytest.mark.parametrize("head_dim", [16, 64, 128])
def test_rope_bound_is_1_at_0_and_its_envelope_never_rises(head_dim):
    d, b, env = rope_envelope(4096, head_dim)
    assert b[0] == pytest.approx(1.0) and env[0] == pytest.approx(1.0)
    assert np.all(np.diff(env) <= 0) and np.all(env >= b) and np.all(b <= 1 + 1e-12)
    assert np.any(np.diff(b) > 0)  # the raw bound oscillates: that is why an envelope
    # Unnormalised, B(0) = (1/(d/2)) * sum_{j=1}^{d/2} j = (d/2 + 1) / 2.
    assert rope_relative_bound([0], head_dim, normalize=False)[0] == pytest.approx((head_dim // 2 + 1) / 2)


def test_rope_bound_holds_for_random_vectors():
    """|<R_m q, R_n k>| <= max_j |h_{j+1} - h_j| * (d/2) * B_raw(m - n) (RoFormer §3.4.3)."""
    rng = np.random.default_rng(7)
    d = 32
    theta = rope_frequencies(d)
    for r in [0, 1, 5, 40, 300, 2000]:
        q, k = rng.normal(size=d), rng.normal(size=d)
        h = (q[0::2] + 1j * q[1::2]) * np.conj(k[0::2] + 1j * k[1::2])
        lhs = abs(np.sum(h * np.exp(1j * r * theta)))
        rhs = np.max(np.abs(np.diff(np.append(h, 0)))) * (d // 2) * rope_relative_bound([r], d, normalize=False)[0]
        assert lhs <= rhs + 1e-9


def test_rope_bound_rejects_odd_head_dim():
    with pytest.raises(ValueError, match="head_dim"):
        rope_frequencies(63)


def test_scenario_profile_is_the_assumed_72_percent():
    sc = load_scenario(ROPE16)  # query 8 attends 0..15: 8 positions left, 7 right
    w = scenario_profile(sc, np.arange(9))
    assert w[0] == 1.0 and np.all(np.diff(w) < 0)
    near = w[0] + 2 * w[1:4].sum()
    total = w[0] + w[1:9].sum() + w[1:8].sum()
    assert near / total == pytest.approx(0.72, abs=1e-9)


def test_bound_vs_assumption_for_each_kind_of_scenario():
    for file, source in [(SEED, "the RoPE walkthrough's stated assumption"), (SIM, "query 8"), (ROPE16, "query 8")]:
        out = bound_vs_assumption(load_scenario(file), max_distance=32, head_dim=64)
        assert len(out["distance"]) == len(out["bound"]) == len(out["envelope"]) == len(out["assumed"]) == 33
        assert out["envelope"][0] == pytest.approx(1.0) and out["assumed"][0] == 1.0
        assert source in out["assumption"] and "72% of mass within ±3" in out["assumption"]
