"""engram_window (seed 001): the bundled figures, CXL vs RDMA, path A vs B, the MoE baseline,
coalescing on a hand-made batch, several Engram layers, determinism and bad input."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from kvviz import load_scenario, parse_scenario, simulate
from kvviz.cli import main
from kvviz.mechanisms.engram.queue import fifo_link, fifo_link_loop
from kvviz.mechanisms.engram.window import step_rows

ROOT = Path(__file__).resolve().parents[1]
CXL = str(ROOT / "scenarios" / "engram_qwen3_32b_cxl.toml")
RDMA = str(ROOT / "scenarios" / "engram_qwen3_32b_rdma.toml")
METRICS = ("step_time_us", "window_us", "fetch_us", "slack_us", "stall_us", "feasible", "overhead_pct",
           "moe_stall_us", "reads_issued", "reads_coalesced", "bytes_fetched")


def run(path: str, *overrides: str):
    return simulate(load_scenario(path, list(overrides)))


@pytest.fixture(scope="module")
def cxl():
    return run(CXL)


@pytest.fixture(scope="module")
def rdma():
    return run(RDMA)


def spans(result, lane: str, kind: str):
    return result.trace.spans_of(lane, kind)


# --- the seed's figures ------------------------------------------------------------------

@pytest.mark.parametrize("path", [CXL, RDMA])
def test_bundled_window_is_one_layer_of_the_seed(path):
    m = run(path).metrics
    for name in METRICS:
        assert name in m, name
    # 3.6 ms / 64 layers, Engram at layer 2, window = Σ t(i), i = 1..1: exactly one layer.
    assert m["window_us"] == 56.25
    assert m["slack_us"] == pytest.approx(m["window_us"] - m["fetch_us"], abs=1e-9)
    assert len(m["layers"]) == 1 and m["layers"][0]["layer"] == 2
    assert m["bytes_fetched"] == m["reads_issued"] * 160
    # Every step needs batch x orders x heads lookups; each is issued or coalesced.
    assert m["reads_issued"] + m["reads_coalesced"] == 4 * 32 * 2 * 8


def test_cxl_fits_the_window(cxl):
    m = cxl.metrics
    assert m["feasible"] is True
    assert m["slack_us"] > 0 and m["stall_us"] == 0
    assert m["overhead_pct"] == 0 and m["step_time_us"] == 3600.0
    assert len(spans(cxl, "GPU · layers", "stall")) == 0


def test_rdma_misses_the_window_and_the_timeline_shows_why(rdma, cxl):
    m = rdma.metrics
    assert m["feasible"] is False and m["slack_us"] < 0
    # The reads leave when the window opens, so the GPU waits exactly the shortfall.
    assert m["stall_us"] == pytest.approx(-m["slack_us"], abs=1e-9)
    assert m["overhead_pct"] > 0 and m["step_time_us"] > 3600
    stall = spans(rdma, "GPU · layers", "stall")
    assert len(stall) == 4  # one per decode step, at layer 2
    assert (stall["ref"] == 2).all()
    assert (stall["end"] - stall["start"]).max() == round(m["stall_us"] * 1000)
    # Why: never more than 16 reads in flight, and the queue drains in waves of 3 µs reads.
    in_flight = rdma.trace.counter("RDMA pool in flight")["value"]
    assert in_flight.max() == 16
    assert rdma.trace.counter("RDMA pool queued")["value"].max() > 400
    fetch = spans(rdma, "RDMA pool → GPU (P2P) · L2 rows", "fetch")
    window = spans(rdma, "GPU · window for L2", "prefetch")
    assert (fetch["end"] > window["end"]).all()
    # Same reads on CXL: all fit, well inside the window.
    assert cxl.metrics["reads_issued"] == m["reads_issued"]
    assert (spans(cxl, "CXL pool → GPU (P2P) · L2 rows", "fetch")["end"]
            < spans(cxl, "GPU · window for L2", "prefetch")["end"]).all()


def test_path_a_adds_the_pcie_hop(cxl):
    a = run(CXL, "transfer.path=A")
    assert a.metrics["fetch_us"] > cxl.metrics["fetch_us"]
    assert a.metrics["reads_issued"] == cxl.metrics["reads_issued"]
    copies = spans(a, "PCIe · bounce copies host → GPU", "copy")
    per_step = [math.ceil(n / 64) for n in (len(r[0]) for r in step_rows(a.scenario)[0])]
    assert len(copies) == sum(per_step)
    assert (copies["start"][1:] >= copies["end"][:-1]).all()  # one stream: copies in a row
    bounce = a.trace.counter("host bounce rows")["value"]
    assert bounce.max() > 0 and bounce[-1] == 0
    with pytest.raises(KeyError):
        cxl.trace.lane_index("PCIe · bounce copies host → GPU")


def test_moe_baseline_stalls(cxl, rdma):
    for r in (cxl, rdma):
        m = r.metrics
        # No window: the MoE router's reads wait for layer 1 to end, then the GPU waits for them.
        assert m["moe_stall_us"] > 0
        assert m["moe_stall_us"] >= m["stall_us"]
        assert len(spans(r, "MoE · GPU layers", "stall")) == 4
    assert rdma.metrics["moe_stall_us"] > cxl.metrics["moe_stall_us"]


def test_staging_buffer_fills_and_drains(cxl):
    fill = cxl.trace.counter("staging rows")["value"]
    per_step = [len(r[0]) for r in step_rows(cxl.scenario)[0]]
    assert fill.max() == max(per_step) and fill[-1] == 0
    res = cxl.trace.residency
    assert len(res) == cxl.metrics["reads_issued"] and (res["end"] > res["start"]).all()


# --- coalescing on a hand-made batch -------------------------------------------------------

def _inline(ids, **engram):
    data = {"kind": "engram_window", "model": {"layers": 8, "step_time_us": 800, "batch_size": len(ids),
                                               "reference_batch": len(ids)},
            "engram": {"layer": 2, "orders": [2, 3], "heads": 2, **engram},
            "tokens": {"source": "inline", "ids": ids}, "decode": {"steps": 2}}
    return parse_scenario(data)


def test_coalescing_counts_on_repeated_ngrams():
    # Two context tokens, then one new token per step.
    ids = [[5, 7, 9, 11],
           [4, 7, 9, 11],
           [5, 7, 9, 12]]
    # Step 0 (new token 9): bigrams {7 9} x3 -> 1 distinct; trigrams {5 7 9, 4 7 9, 5 7 9} -> 2.
    #   3 distinct n-grams x 2 heads = 6 reads for 3 seqs x 2 orders x 2 heads = 12 lookups.
    # Step 1 (11, 11, 12): bigrams {9 11, 9 12} -> 2; trigrams {7 9 11, 7 9 12} -> 2.
    #   4 x 2 heads = 8 reads for 12 lookups.
    # The same n-gram in two heads is two rows of two tables: never coalesced.
    sc = _inline(ids)
    rows, lookups = step_rows(sc)
    assert lookups == 12
    assert [len(step[0]) for step in rows] == [6, 8]
    m = simulate(sc).metrics
    assert m["reads_issued"] == 14
    assert m["reads_coalesced"] == 10
    assert m["bytes_fetched"] == 14 * 160
    assert m["layers"][0]["reads_coalesced"] == 10


def test_token_file_matches_inline(tmp_path):
    ids = [[5, 7, 9, 11], [4, 7, 9, 11], [5, 7, 9, 12]]
    f = tmp_path / "tokens.txt"
    f.write_text("# one sequence per line\n5 7 9 11\n4, 7, 9, 11\n\n5 7 9 12  # trailing comment\n")
    data = parse_scenario({"kind": "engram_window", "model": {"layers": 8, "step_time_us": 800, "batch_size": 3,
                                                              "reference_batch": 3},
                           "engram": {"layer": 2, "orders": [2, 3], "heads": 2},
                           "tokens": {"source": "file", "file": str(f)}, "decode": {"steps": 2}})
    assert simulate(data).trace.fingerprint() == simulate(_inline(ids)).trace.fingerprint()


def test_relative_token_file_is_next_to_the_scenario(tmp_path, monkeypatch):
    from kvviz import load_scenario
    (tmp_path / "tokens.txt").write_text("5 7 9 11\n")
    (tmp_path / "s.toml").write_text('kind = "engram_window"\n[tokens]\nsource = "file"\nfile = "tokens.txt"\n'
                                     '[engram]\nlayer = 2\n[decode]\nsteps = 1\n')
    monkeypatch.chdir("/")
    assert simulate(load_scenario(tmp_path / "s.toml")).metrics["reads_issued"] > 0


# --- several Engram layers -----------------------------------------------------------------

def test_several_engram_layers(tmp_path):
    text = Path(RDMA).read_text().replace("\nlayer = 2 ", "\nlayers = [2, 15] ")
    multi = tmp_path / "multi.toml"
    multi.write_text(text)
    r = run(str(multi))
    m = r.metrics
    assert [x["layer"] for x in m["layers"]] == [2, 15]
    l2, l15 = m["layers"]
    assert l2["window_us"] == 56.25 and l15["window_us"] == 14 * 56.25
    # Layer 15's reads queue behind layer 2's on the same pool, but its window is far wider.
    assert l15["fetch_us"] > l2["fetch_us"] and l15["feasible"] and not l2["feasible"]
    assert m["worst_layer"] == 2
    for name in ("window_us", "fetch_us", "slack_us", "stall_us", "feasible", "moe_stall_us"):
        assert m[name] == l2[name]
    assert m["reads_issued"] == l2["reads_issued"] + l15["reads_issued"]
    assert m["reads_coalesced"] == l2["reads_coalesced"] + l15["reads_coalesced"]
    assert len(spans(r, "GPU · window for L15", "prefetch")) == 4
    # `--set engram.layer=...` on this file is ambiguous: a clear error, not a guess.
    assert main(["validate", str(multi), "--set", "engram.layer=10"]) == 2


# --- conventions and scaling -----------------------------------------------------------------

def test_window_can_count_from_layer_zero(cxl):
    m = run(CXL, "engram.window_from_layer=0").metrics
    assert m["window_us"] == 112.5
    # The reads now leave as the CPU posts them: fetch includes the CPU's hash and issue time.
    assert m["fetch_us"] > cxl.metrics["fetch_us"]


def test_engram_layer_moves_the_window():
    assert run(RDMA, "engram.layer=10").metrics["window_us"] == 9 * 56.25
    assert run(RDMA, "engram.layer=10").metrics["feasible"] is True


def test_bigger_batch_widens_the_window(cxl):
    m = run(CXL, "model.batch_size=64").metrics
    # 30% of each layer grows with the batch: 56.25 µs x (0.7 + 0.3 x 64/32).
    assert m["window_us"] == 73.125 and m["step_time_us"] == 64 * 73.125
    assert m["reads_issued"] + m["reads_coalesced"] == 4 * 64 * 2 * 8


def test_explicit_layer_times():
    times = ",".join(["10"] * 63 + ["20"])
    m = run(CXL, f"model.layer_times_us=[{times}]").metrics
    assert m["window_us"] == 10.0 and m["step_time_us"] == 63 * 10 + 20


# --- determinism -----------------------------------------------------------------------------

def test_deterministic(cxl):
    again = run(CXL)
    assert again.trace.fingerprint() == cxl.trace.fingerprint()
    assert again.metrics_dict() == cxl.metrics_dict()
    other = run(CXL, "tokens.seed=1")
    assert other.trace.fingerprint() != cxl.trace.fingerprint()


def test_queue_closed_form_matches_the_loop():
    rng = np.random.default_rng(7)
    for _ in range(500):
        n = int(rng.integers(0, 80))
        release = np.sort(rng.integers(0, 20_000, n))
        lat, xfer, limit = int(rng.integers(0, 5_000)), int(rng.integers(0, 600)), int(rng.integers(1, 24))
        got, want = fifo_link(release, lat, xfer, limit), fifo_link_loop(release, lat, xfer, limit)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


# --- the CLI: metrics out, bad input exits 2 ----------------------------------------------------

def test_cli_prints_metrics_json(capsys):
    assert main(["run", CXL, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "engram_window"
    assert out["metrics"]["window_us"] == 56.25
    for name in METRICS:
        assert name in out["metrics"]


@pytest.mark.parametrize("override, field", [
    ("engram.layer=99", "engram.layer"),
    ("engram.layer=1", "engram.layer"),          # seed convention: window i = 1..0 holds no layers
    ("engram.layer=0", "engram.layer"),
    ("pool.bandwidth_GBps=0", "pool.bandwidth_GBps"),
    ("pcie.bandwidth_GBps=0", "pcie.bandwidth_GBps"),
    ("pool.latency_us=-1", "pool.latency_us"),
    ("pcie.copy_latency_us=-0.5", "pcie.copy_latency_us"),
    ("engram.orders=[2,2]", "engram.orders"),
    ("model.layer_times_us=[1,2]", "model.layer_times_us"),
])
def test_bad_input_exits_2(override, field, capsys):
    assert main(["run", CXL, "--set", override]) == 2
    err = capsys.readouterr().err
    assert f"{CXL}: {field}" in err


def test_window_from_layer_zero_allows_layer_one():
    assert run(CXL, "engram.layer=1", "engram.window_from_layer=0").metrics["window_us"] == 56.25


def test_bad_token_file_exits_2(tmp_path, capsys):
    f = tmp_path / "tokens.txt"
    f.write_text("1 2 3 4 5 6\n1 2 x3 4\n")
    assert main(["run", CXL, "--set", "tokens.source=file", "--set", f"tokens.file=\"{f}\""]) == 2
    err = capsys.readouterr().err
    assert "tokens.file" in err and "line 2" in err and "item 3" in err and "x3" not in err  # the file's content is never quoted


def test_bad_inline_tokens_exit_2(capsys):
    base = ["run", CXL, "--set", "tokens.source=inline", "--set", "model.batch_size=1",
            "--set", "model.reference_batch=1"]
    # Too short for 4 steps with trigrams (needs 2 + 4 tokens).
    assert main(base + ["--set", "tokens.ids=[[1,2,3]]"]) == 2
    assert "tokens.ids[0]" in capsys.readouterr().err
    # Outside the vocabulary.
    assert main(base + ["--set", "tokens.ids=[[1,2,3,4,5,151936]]"]) == 2
    assert "tokens.ids[0][5]" in capsys.readouterr().err
    # One sequence per batch entry.
    assert main(base + ["--set", "tokens.ids=[[1,2,3,4,5,6],[1,2,3,4,5,6]]"]) == 2
    assert "tokens.ids" in capsys.readouterr().err
