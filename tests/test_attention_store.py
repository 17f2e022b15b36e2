"""attention_store: the paper's formulas, the layer-wise pre-loading schedule, hand-checked
small cases (3 sessions, 2 DRAM slots), truncation modes, trace import and bad input.

The store's hand-checked cases run one job at a time (`serving.max_batch = 1`) on a GPU whose
roofline makes prefill 1 µs per token and a decode iteration of n jobs n µs (compute-bound);
test_batching.py checks the batching engine itself."""
import json

import numpy as np
import pytest

from kvviz import parse_scenario, simulate
from kvviz.cli import main
from kvviz.errors import ScenarioError
from kvviz.mechanisms.attention_store.serving import layer_schedule
from kvviz.serving.kv_source import HIT_DRAM, HIT_SSD, MISS
from kvviz.serving.layerwise_prefill import prefill_end

from .conftest import SCENARIOS


# A tiny world in which every stored session is exactly one block: 256-token blocks, a
# 256-token window, 64 tokens per turn (60 in, 4 out), 1 MB of KV per token. One session =
# 256 MB, and 0.512 GB of DRAM = exactly two session slots. No SSD: a DRAM victim is dropped.
def unit_gpu(gpus: int = 4, us_per_token: float = 1.0, params_b: float = 0.0005, weights_ns: float = 1.0) -> dict:
    """Roofline fields (model.params_b and hardware) for a prefill of `us_per_token` µs per token
    and `weights_ns` to read the weights in a decode iteration: FLOP/ns = 2·params/prefill ns;
    B/ns = 2·params/weights_ns (with gpus · peak · mfu and gpus · hbm · efficiency)."""
    flop_per_ns = 2 * params_b * 1e9 / (us_per_token * 1000)
    bytes_per_ns = 2 * params_b * 1e9 / weights_ns
    return {"params_b": params_b,
            "hw": {"gpus": gpus, "gpu_peak_tflops": flop_per_ns / gpus / 1e3, "mfu": 1.0,
                   "hbm_tbps": bytes_per_ns / gpus / 1e3, "hbm_efficiency": 1.0}}


_G = unit_gpu()  # 1 µs per prefill token; weights 1 ns, KV (1 MB/token) 1 ns per context token
TINY = {
    "kind": "attention_store",
    "model": {"preset": "custom", "kv_bytes_per_token": 1_000_000, "layers": 4, "context_window": 256,
              "params_b": _G["params_b"]},
    "hardware": {"hbm_free_gb": 10, "dram_gb": 0.512, "ssd_gb": 0, "host_link_gbps": 1000,
                 "read_buffer_gb": 0, "write_buffer_gb": 1, "block_tokens": 256, **_G["hw"]},
    "serving": {"arrivals": "recorded", "compare_truncation": False, "max_batch": 1},
    "store": {"load_if_faster": False},  # these cases test SSD traffic: every SSD hit loads
}


def write_turns(path, turns, n_in: int, n_out: int):
    """A conversation log of `turns` [(conversation, arrival_s)], in order, numbered per
    conversation, every turn `n_in` tokens in and `n_out` out. Returns the path."""
    seen: dict = {}
    lines = ["conversation,turn,arrival_s,input_tokens,output_tokens"]
    for conv, t in turns:
        seen[conv] = seen.get(conv, 0) + 1
        lines.append(f"{conv},{seen[conv]},{t},{n_in},{n_out}")
    path.write_text("\n".join(lines) + "\n")
    return path


def tiny(tmp_path, turns, **over):
    """turns: [(conversation, arrival_s)], in order; each turn is 60 tokens in, 4 out."""
    p = write_turns(tmp_path / "conv.csv", turns, 60, 4)
    data = json.loads(json.dumps(TINY))
    data["workload"] = {"trace_file": str(p)}
    for k, v in over.items():
        section, field = k.split("__") if "__" in k else (None, k)
        (data.setdefault(section, {}) if section else data)[field] = v
    return parse_scenario(data)


# A1 B1 C1 A2 B2 A3 C2 B3, one second apart; every job ends within a millisecond.
ABC = [("A", 0), ("B", 1), ("C", 2), ("A", 3), ("B", 4), ("A", 5), ("C", 6), ("B", 7)]


def test_three_sessions_two_slots_by_hand(tmp_path):
    sc = tiny(tmp_path, ABC, policies=["recompute", "lru", "fifo", "scheduler_aware", "belady"],
              trace_policy="lru")
    m = simulate(sc).metrics_dict()["policies"]
    # LRU:  A1 {A}  B1 {A,B}  C1 evicts A {B,C}  A2 miss, evicts B {C,A}  B2 miss, evicts C {A,B}
    #       A3 HIT {B,A}  C2 miss, evicts B {A,C}  B3 miss, evicts A {C,B}
    #       -> 1 hit of 5 turns with history; 5 sessions dropped.
    assert (m["lru"]["hits"], m["lru"]["jobs_with_history"], m["lru"]["sessions_dropped"]) == (1, 5, 5)
    # FIFO: A1 B1  C1 evicts A (first in) {B,C}  A2 miss, evicts B {C,A}  B2 miss, evicts C {A,B}
    #       A3 HIT (no reordering)  C2 miss, evicts A (oldest insert) {B,C}  B3 HIT
    #       -> 2 hits; 4 dropped.
    assert (m["fifo"]["hits"], m["fifo"]["sessions_dropped"]) == (2, 4)
    # Belady (next arrival known): C1 evicts C itself (next at 6 s, A at 3 s, B at 4 s);
    #       A2 HIT  B2 HIT  A3 HIT (A never again)  C2 miss, evicts A or C (both never again)
    #       B3 HIT -> 4 hits; 2 dropped.
    assert (m["belady"]["hits"], m["belady"]["sessions_dropped"]) == (4, 2)
    # With jobs ending long before the next arrival the queue is always empty, so
    # scheduler-aware has nothing to look at and evicts exactly as LRU.
    assert m["scheduler_aware"]["hits"] == 1 and m["scheduler_aware"]["sessions_dropped"] == 5
    assert m["recompute"]["hits"] == 0 and m["recompute"]["hit_rate"] == 0
    assert m["lru"]["hit_rate"] == 0.2 and m["lru"]["dram_hit_share"] == 1.0 and m["lru"]["ssd_hit_share"] == 0


def test_scheduler_aware_protects_the_queued_session(tmp_path):
    # Prefill now takes 10 ms a token: C1 runs 20..20.6 s (+ 3 decode iterations). A2 arrives
    # at 20.5 s and waits (a batch of one). When C1 ends, DRAM holds A, B, C (one too many):
    # LRU evicts A (least recent) and A2 misses; scheduler-aware sees A2 queued, evicts B
    # instead, and A2 hits.
    turns = [("A", 0), ("B", 10), ("C", 20), ("A", 20.5)]
    g = unit_gpu(us_per_token=10_000.0)
    sc = tiny(tmp_path, turns, policies=["lru", "scheduler_aware"], model__params_b=g["params_b"],
              **{f"hardware__{k}": v for k, v in g["hw"].items()})
    m = simulate(sc).metrics_dict()["policies"]
    assert m["lru"]["hits"] == 0 and m["scheduler_aware"]["hits"] == 1
    # No SSD, so LRU's victim A is lost, and A2 was already waiting when it was: the queue knew.
    # (LRU drops B too, when A2's re-save overfills DRAM again; nothing is queued then.)
    assert m["lru"]["dropped_while_queued"] == 1 and m["lru"]["sessions_dropped"] == 2
    assert m["scheduler_aware"]["dropped_while_queued"] == 0 and m["scheduler_aware"]["sessions_dropped"] == 1


def test_ssds_stripe_bandwidth(tmp_path):
    # Two SSDs at 0.5 GB/s each are one 1 GB/s device (striped); with SSD traffic on the
    # critical path (one DRAM slot), every metric is identical, and differs from one 0.5 GB/s SSD.
    def run(**hw):
        sc = tiny(tmp_path, ABC, policies=["lru", "scheduler_aware"], trace_policy="lru",
                  hardware__dram_gb=0.256, hardware__ssd_gb=1.024, **{f"hardware__{k}": v for k, v in hw.items()})
        return simulate(sc).metrics_dict()["policies"]
    two = run(ssds=2, ssd_read_gbps=0.5, ssd_write_gbps=0.5)
    assert two == run(ssds=1, ssd_read_gbps=1.0, ssd_write_gbps=1.0)
    slow = run(ssds=1, ssd_read_gbps=0.5, ssd_write_gbps=0.5)
    assert slow["lru"]["ssd_hit_share"] > 0 and slow["lru"]["mean_prefill_ms"] > two["lru"]["mean_prefill_ms"]


def test_decoupled_truncation_keeps_hitting_after_overflow(tmp_path):
    # One conversation, 64 tokens a turn, 256-token window: turn 5 overflows (256 + 64 > 256).
    # Decoupled: the stored KV is truncated to 256·0.5 - 64 = 64 tokens and still hits.
    # Coupled: positions shift, the stored KV is invalid, the history is recomputed.
    turns = [("A", t) for t in range(6)]
    for mode, hits, over_hit in (("decoupled", 5, 1.0), ("coupled", 4, 0.0)):
        sc = tiny(tmp_path, turns, policies=["lru"], trace_policy="lru", serving__truncation=mode)
        m = simulate(sc).metrics_dict()
        assert m["overflow_turn_share"] == pytest.approx(1 / 6, abs=1e-6)
        p = m["policies"]["lru"]
        assert (p["hits"], p["overflow_jobs"], p["overflow_hit_rate"]) == (hits, 1, over_hit), mode


def test_overflow_sessions_history_shares_and_dram_fill(tmp_path):
    # A: six turns of 60 in + 4 out, 256-token window: its fifth turn overflows (256 + 64 > 256) and
    # keeps 256·0.5 − 64 = 64 tokens; B: one turn, never. Kept history per turn of A: 0, 64, 128,
    # 192, 64, 128, against 60 new input tokens each.
    turns = [("A", t) for t in range(6)] + [("B", 10)]
    sc = tiny(tmp_path, turns, policies=["recompute"], trace_policy="recompute")
    m = simulate(sc).metrics_dict()
    assert m["overflow_session_share"] == pytest.approx(1 / 2)
    w = m["workload"]
    assert w["history_share"] == pytest.approx(576 / (576 + 5 * 60), rel=1e-5)
    assert (w["history_share_max"], w["history_share_max_turn"]) == (pytest.approx(192 / 252, rel=1e-5), 4)
    s = m["sizing"]
    assert s["dram_fill_s"] == pytest.approx(sc.hardware.dram_gb / s["kv_fill_gbps"], rel=1e-5)


def test_compare_truncation_reports_both_modes(tmp_path):
    turns = [("A", t) for t in range(6)]
    sc = tiny(tmp_path, turns, policies=["lru"], trace_policy="lru", serving__compare_truncation=True)
    tr = simulate(sc).metrics_dict()["truncation"]
    assert tr["decoupled"]["overflow_hit_rate"] == 1.0 and tr["coupled"]["overflow_hit_rate"] == 0.0


# --- formulas ----------------------------------------------------------------------------------

def test_formulas_pinned(tmp_path):
    sc = tiny(tmp_path, ABC, policies=["lru"], trace_policy="lru",
              hardware__ssd_gb=1.024, hardware__host_link_gbps=2.0)
    f = simulate(sc).metrics_dict()["formulas"]
    s_kv = 256_000_000                    # every stored session is one 256-token block
    assert f["S_kv_bytes"] == s_kv
    assert f["L_pw"] == 512_000_000 // s_kv == 2                         # C_mem / S_kv
    assert f["L_ew"] == (512_000_000 + 1_024_000_000) // s_kv == 6       # (C_mem + C_disk) / S_kv
    # S_buf = B·(T_load·L_hist − T_pref·L_new) for the turn with the largest one: A3 (row 2 of
    # the sorted table: A1 A2 A3 ...), 128 history tokens, 60 new. B is the aggregate
    # HBM↔DRAM bandwidth, gpus × host_link_gbps = 4 × 2 = 8 B/ns (default gpus = 4), T_load = 1e6 B
    # / 8 B/ns = 125,000 ns per token:
    # 8 B/ns · (125,000 ns · 128 − 1000 ns · 60) = 128e6 − 480e3 bytes.
    assert f["S_buf_turn"] == 2
    assert f["S_buf_bytes"] == 128_000_000 - 8 * 1000 * 60
    # One link (gpus = 1): B = 2 B/ns: 2 · (500,000 ns · 128 − 1000 ns · 60) = 128e6 − 120e3.
    sc1 = tiny(tmp_path, ABC, policies=["lru"], trace_policy="lru", hardware__ssd_gb=1.024,
               hardware__host_link_gbps=2.0, **{f"hardware__{k}": v for k, v in unit_gpu(gpus=1)["hw"].items()})
    assert simulate(sc1).metrics_dict()["formulas"]["S_buf_bytes"] == 128_000_000 - 2 * 1000 * 60
    # CCpUT = DSpUT · CCpS: 3 conversations start at 0, 1, 2 s: 2 gaps in 2 s = 1/s, × one
    # full-window session (256 tokens = 256 MB).
    assert f["DSpUT_per_s"] == 1.0 and f["CCpS_bytes"] == 256_000_000
    assert f["CCpUT_bytes_per_s"] == 256_000_000


def test_layerwise_preloading_by_hand():
    # 4 layers, load 10 ns and compute 4 ns per layer, no read buffer, start at 0:
    # loads end 10 20 30 40; computes 10-14 20-24 30-34 40-44: gaps 10+6+6+6 = 28 ns.
    ls, le, cs, ce = layer_schedule(0, 0, 10, 4, 4, 0)
    assert le.tolist() == [10, 20, 30, 40] and cs.tolist() == [10, 20, 30, 40] and ce[-1] == 44
    assert prefill_end(0, 0, 10, 4, 4, 0) == (44, 40)
    # A read buffer of 2 layers, filled from t = -20: layers 0, 1 land at -10 and 0; layers 2, 3
    # load from 0: 10, 20. Computes 0-4 4-8 10-14 20-24.
    ls, le, cs, ce = layer_schedule(0, -20, 10, 4, 4, 2)
    assert le.tolist() == [-10, 0, 10, 20] and ce.tolist() == [4, 8, 14, 24]
    assert prefill_end(0, -20, 10, 4, 4, 2) == (24, 20)
    # Perfect overlap when T_load·L_hist <= T_pref·L_new: compute-bound, no gaps after layer 0.
    assert prefill_end(0, 0, 3, 4, 4, 0)[0] == 3 + 4 * 4


def test_closed_form_matches_layer_by_layer():
    rng = np.random.default_rng(3)
    for _ in range(2000):
        L = int(rng.integers(1, 12))
        S = int(rng.integers(0, 100))
        T0 = int(rng.integers(-100, 150))
        a, c = (int(x) for x in rng.integers(0, 30, 2))
        k = int(rng.integers(0, L + 2))
        _, le, _, ce = layer_schedule(S, T0, a, c, L, k)
        assert prefill_end(S, T0, a, c, L, k) == (int(ce[-1]), int(le[-1]))


# --- the bundled scenario's shape, on a small synthetic workload -----------------------------

def small(**over):
    data = {"kind": "attention_store", "workload": {"conversations": 150, "seed": 5}}
    for k, v in over.items():
        s, f = k.split("__")
        data.setdefault(s, {})[f] = v
    return parse_scenario(data)


def test_deterministic_and_trace_shape():
    a, b = simulate(small()), simulate(small())
    assert a.trace.fingerprint() == b.trace.fingerprint() and a.metrics_dict() == b.metrics_dict()
    t = a.trace
    names = t.lanes["name"].tolist()
    assert {"GPU", "PCIe", "SSD"} <= set(t.lanes["group"].tolist())
    from kvviz.mechanisms.attention_store import GPU_LANE
    # One prefill span per prefill iteration: every job is in exactly one (no preemption here).
    pre = t.spans_of(GPU_LANE, "prefill")
    jobs_in = [int(t.label(i).split("·")[1].split()[0]) for i in pre["label"].tolist()]
    assert a.metrics["policies"]["scheduler_aware"]["preemptions"] == 0 and sum(jobs_in) == a.metrics["turns"]
    assert len(t.spans_of(GPU_LANE, "decode")) > 0
    assert set(t.counter_names) == {"DRAM in use", "SSD in use", "queue length", "batch size", "HBM KV in use"}
    assert t.item_name == "session" and len(t.residency) and t.slots >= 1
    layers = [n for n in names if n.startswith("GPU · layers")]
    assert len(t.spans_of(layers[0], "prefill")) == 40  # one span per layer of the chosen turn
    m = a.metrics_dict()
    assert set(m["policies"]) == {"recompute", "lru", "fifo", "scheduler_aware", "belady"}
    for p in m["policies"].values():
        assert {"hit_rate", "dram_hit_share", "ssd_hit_share", "mean_ttft_ms", "p99_ttft_ms",
                "prefill_gpu_s", "jobs", "speedup_vs_recompute"} <= set(p)
        assert p["jobs"] == m["turns"]
    assert m["policies"]["recompute"]["speedup_vs_recompute"] == 1.0
    assert set(m["formulas"]) >= {"L_pw", "L_ew", "S_buf_bytes", "CCpUT_bytes_per_s"}


def test_generator_shape():
    from kvviz.mechanisms.attention_store.workload import synthetic
    sc = small(workload__conversations=4000)
    wl = synthetic(sc.workload)
    first = wl.turn == 0
    assert abs((wl.turn == 1).sum() / first.sum() - 0.73) < 0.03         # multi-turn share
    assert abs(len(wl) / first.sum() - (1 + 0.73 * 6.6)) < 0.3            # turns per conversation
    assert np.all(np.diff(wl.arrival_ns[first]) >= 0) and np.all(wl.think_ns[first] == 0)


def test_every_preset_validates():
    for p in ("llama-13b", "llama-65b", "llama-70b", "falcon-40b"):
        sc = small(model__preset=p)
        assert sc.model.kv_bytes_per_token > 0
    assert small(model__preset="llama-65b").model.kv_bytes_per_token == 2_621_440  # paper: 2.5 MB
    assert small(model__preset="llama-65b", model__layers=2).model.layers == 2     # fields override


def test_bundled_scenario_validates():
    from kvviz import load_scenario
    sc = load_scenario(SCENARIOS / "attention_store_sharegpt.toml")
    assert sc.workload.conversations == 9000 and sc.trace_policy == "scheduler_aware"


# --- bad input ----------------------------------------------------------------------------------

def write_conv(tmp_path, text, name="conv.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


TRACE_BAD = {
    "missing column": ("conversation,turn,arrival_s,input_tokens\nA,1,0,5\n", "line 1", "missing column(s) output_tokens"),
    "out of order": ("conversation,turn,arrival_s,input_tokens,output_tokens\nA,1,0,5,5\nA,3,1,5,5\n",
                     "line 3", "turn 3 follows turn 1"),
    "unknown id": ("conversation,turn,arrival_s,input_tokens,output_tokens\nA,1,0,5,5\nB,2,1,5,5\n",
                   "line 3", "unknown conversation 'B'"),
    "time backwards": ("conversation,turn,arrival_s,input_tokens,output_tokens\nA,1,5,5,5\nA,2,1,5,5\n",
                       "line 3", "before turn 1"),
    "bad number": ("conversation,turn,arrival_s,input_tokens,output_tokens\nA,1,0,many,5\n",
                   "line 2", "input_tokens: expected an integer"),
}


@pytest.mark.parametrize("case", sorted(TRACE_BAD))
def test_bad_trace_exit_2_with_line(case, tmp_path, capsys):
    text, where, expect = TRACE_BAD[case]
    p = write_conv(tmp_path, text)
    out = tmp_path / "never.json"
    scen = tmp_path / "s.toml"
    scen.write_text(f'kind = "attention_store"\n[workload]\ntrace_file = "{p}"\n')
    assert main(["run", str(scen), "--json-out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{p}: {where}: " in err and expect in err, err
    assert not out.exists()


def test_jsonl_import(tmp_path):
    p = write_conv(tmp_path, '{"conversation": "x", "turn": 1, "arrival_s": 0, "input_tokens": 60, '
                             '"output_tokens": 4}\n{"conversation": "x", "turn": 2, "arrival_s": 1}\n', "c.jsonl")
    with pytest.raises(ScenarioError, match="line 2.*missing field"):
        simulate(parse_scenario({"kind": "attention_store", "workload": {"trace_file": str(p)}}))


SCEN_BAD = {
    "dram too small": (["--set", "hardware.dram_gb=1"], "hardware.dram_gb", "cannot hold one session"),
    "ssd too small": (["--set", "hardware.ssd_gb=1"], "hardware.ssd_gb", "cannot hold one session"),
    "negative bandwidth": (["--set", "hardware.host_link_gbps=-26"], "hardware.host_link_gbps", "greater than 0"),
    "negative ssd bandwidth": (["--set", "hardware.ssd_read_gbps=-1"], "hardware.ssd_read_gbps", "greater than 0"),
    "unknown policy": (["--set", "policies=[\"lru\",\"mru\"]"], "policies[1]", "unknown policy 'mru'"),
    "trace policy not run": (["--set", "trace_policy=belady", "--set", "policies=[\"lru\"]"], "trace_policy",
                             "not one of policies"),
    "unknown preset": (["--set", "model.preset=gpt-5"], "model.preset", "llama-13b"),
    "detail job out of range": (["--set", "workload.conversations=3", "--set", "serving.detail_job=999"],
                                "serving.detail_job", "does not exist"),
}


@pytest.mark.parametrize("case", sorted(SCEN_BAD))
def test_bad_scenario_exit_2_naming_field(case, tmp_path, capsys):
    extra, field, expect = SCEN_BAD[case]
    out = tmp_path / "never.json"
    f = str(SCENARIOS / "attention_store_sharegpt.toml")
    assert main(["run", f, "--json-out", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert f": {field}: " in err and expect in err, err
    assert not out.exists()


# --- presets --------------------------------------------------------------------------------------

def test_preset_windows_and_kv_sizes():
    # LLaMA-13B and -65B are LLaMA-1 (2K window, full multi-head attention); LLaMA-70B is
    # LLaMA-2 (4K, grouped-query attention with 8 KV heads of 128); Falcon-40B has a 2K window
    # and 8 KV heads of 64. KV per token = 2 (K, V) × layers × KV heads × head dim × 2 B.
    expect = {"llama-13b": (2048, 40, 2 * 40 * 5120 * 2),          # 819,200 B
              "llama-65b": (2048, 80, 2 * 80 * 8192 * 2),          # 2,621,440 B (paper: 2.5 MB)
              "llama-70b": (4096, 80, 2 * 80 * 8 * 128 * 2),       # 327,680 B
              "falcon-40b": (2048, 60, 2 * 60 * 8 * 64 * 2)}       # 122,880 B
    for p, (window, layers, kv) in expect.items():
        m = small(model__preset=p).model
        assert (m.context_window, m.layers, m.kv_bytes_per_token) == (window, layers, kv), p
    assert expect["llama-13b"][2] == 819_200 and expect["llama-70b"][2] == 327_680
    assert expect["falcon-40b"][2] == 122_880
    assert small().model.context_window == 2048  # the default preset is LLaMA-1 13B


# --- inclusive SSD copies -------------------------------------------------------------------------

# Sessions of 256-token turns (200 in, 56 out), 64-token blocks, 1 MB of KV per token, a
# 512-token window: one turn = 256 MB, two turns = 512 MB = the whole 0.512 GB of DRAM.
SSD_WORLD = {
    "kind": "attention_store", "policies": ["lru"], "trace_policy": "lru",
    "model": {"preset": "custom", "kv_bytes_per_token": 1_000_000, "layers": 4, "context_window": 512,
              "params_b": _G["params_b"]},
    "hardware": {"hbm_free_gb": 10, "dram_gb": 0.512, "ssd_gb": 4.096, "host_link_gbps": 1000,
                 "ssd_read_gbps": 1000, "ssd_write_gbps": 1000,
                 "read_buffer_gb": 0, "write_buffer_gb": 1, "block_tokens": 64, **_G["hw"]},
    "serving": {"arrivals": "recorded", "compare_truncation": False, "truncation_ratio": 0.25, "max_batch": 1},
    "store": {"load_if_faster": False},  # these cases test SSD traffic: every SSD hit loads
}


def ssd_run(tmp_path, turns, inclusive=True, truncation="decoupled", ssd_gb=4.096):
    """Run LRU on `turns` [(conversation, arrival_s)] and return the finished Run (its state)."""
    from kvviz.mechanisms.attention_store import workload_of
    from kvviz.mechanisms.attention_store.serving import Prepared, Run
    p = write_turns(tmp_path / "ssd.csv", turns, 200, 56)
    data = json.loads(json.dumps(SSD_WORLD))
    data["workload"] = {"trace_file": str(p)}
    data["store"]["ssd_inclusive"] = inclusive
    data["serving"]["truncation"] = truncation
    data["hardware"]["ssd_gb"] = ssd_gb
    sc = parse_scenario(data)
    run = Run(sc, Prepared(sc, workload_of(sc)), "lru", truncation, record=False).run()
    st = run.store
    # Capacity accounting: each tier's bytes in use are the sum of the copies it holds.
    from kvviz.mechanisms.attention_store.placement.base import DRAM, PREFETCHING
    assert st.ssd_used == sum(st.ssd_size)
    assert st.dram_used == sum(s for s, w in zip(st.size, st.where) if w in (DRAM, PREFETCHING))
    st.outcome = run.batcher.outcome  # the store's view plus what each job found
    return st


MB = 1_000_000
A, B, C = 0, 1, 2  # session indices (order of first appearance)


def test_inclusive_copy_second_demotion_writes_only_new_tokens(tmp_path):
    # A1 B1 C1 A2 B2, one second apart (LRU, DRAM = 512 MB, SSD = 4 GB).
    #   A1, B1: A 256 + B 256 = 512 MB in DRAM (fits exactly).
    #   C1 ends: 768 MB > 512: evict A (LRU) -> write 256 MB to SSD.        DRAM {B, C}
    #   A2: SSD hit, read on demand. Inclusive: A's SSD copy stays valid.
    #       A2 ends: A is 512 MB; DRAM 1024: evict B (write 256), then C (write 256). DRAM {A}
    #   B2: SSD hit. Ends: B is 512 MB, DRAM 1024: evict A, the second demotion of A:
    #       inclusive writes only its new 256 tokens (256 MB; its first 256 are already on SSD);
    #       exclusive deleted A's copy when A2 read it, so it writes all 512 MB again.
    turns = [("A", 0), ("B", 1), ("C", 2), ("A", 3), ("B", 4)]
    inc = ssd_run(tmp_path, turns, inclusive=True)
    assert inc.outcome[1] == inc.outcome[3] == HIT_SSD  # A2, B2: SSD hits (rows: A1 A2 B1 B2 C1)
    assert inc.demoted == 4                                    # A, B, C, A
    assert inc.ssd_write_bytes == (256 + 256 + 256 + 256) * MB
    # SSD now holds A (512, its only copy), B's first turn (256; B is also in DRAM) and C (256).
    assert (inc.ssd_size[A], inc.ssd_size[B], inc.ssd_size[C]) == (512 * MB, 256 * MB, 256 * MB)
    assert inc.ssd_used == 1024 * MB and inc.dram_used == 512 * MB
    exc = ssd_run(tmp_path, turns, inclusive=False)
    assert exc.ssd_write_bytes == (256 + 256 + 256 + 512) * MB
    # Exclusive: B left the SSD when B2 read it; SSD holds A (512) and C (256).
    assert (exc.ssd_size[A], exc.ssd_size[B], exc.ssd_size[C]) == (512 * MB, 0, 256 * MB)
    assert exc.ssd_used == 768 * MB and exc.dram_used == 512 * MB


def test_inclusive_copy_ssd_eviction_and_decoupled_truncation(tmp_path):
    # The same run with a 768 MB SSD. B2 ends: A's new 256 MB brings the SSD to 1024 > 768.
    # SSD LRU order (reads and writes of a copy make it recent): A copied at 2 s and read at
    # 3 s; B, C copied at 3 s; B read at 4 s; A extended at 4 s -> C, B, A: evict C, its only
    # copy: the session is lost.
    turns = [("A", 0), ("B", 1), ("C", 2), ("A", 3), ("B", 4)]
    r = ssd_run(tmp_path, turns, ssd_gb=0.768)
    assert (r.dropped, r.ssd_copies_evicted) == (1, 0)
    assert (r.ssd_size[A], r.ssd_size[B], r.ssd_size[C]) == (512 * MB, 256 * MB, 0)
    assert r.ssd_used == 768 * MB
    # Decoupled truncation trims the SSD copy too. Add A3 at 5 s: A's 512 history tokens +
    # 256 new overflow the 512-token window; with ratio 0.25 the context keeps
    # 384 - 256 = 128 history tokens. A is on SSD only (512 MB): an SSD hit; its copy drops
    # the oldest 384 tokens and keeps 128 (2 blocks, 128 MB): SSD 1024 - 384 = 640 MB.
    # A3 ends: A is 128 + 256 = 384 MB; DRAM 512 (B) + 384 > 512: evict B, which has its first
    # 256 MB on SSD: write 256 MB more. SSD 896 MB, DRAM 384 MB.
    r = ssd_run(tmp_path, turns + [("A", 5)])
    assert r.outcome[2] == HIT_SSD  # A3: an SSD hit after overflow
    assert (r.ssd_size[A], r.ssd_size[B], r.ssd_size[C]) == (128 * MB, 512 * MB, 256 * MB)
    assert r.ssd_used == 896 * MB and r.dram_used == 384 * MB
    assert r.ssd_write_bytes == (256 * 4 + 256) * MB


def test_coupled_truncation_frees_both_copies(tmp_path):
    # A1 B1 C1 A2 as above, then A3 at 4 s. After A2: DRAM {A: 512 MB}, SSD {A: 256 (its first
    # turn), B: 256, C: 256} = 768 MB. A3 overflows (512 + 256 > 512).
    turns = [("A", 0), ("B", 1), ("C", 2), ("A", 3), ("A", 4)]
    # Coupled: the stored KV is invalid: both of A's copies are freed (SSD 768 - 256 = 512) and
    # the kept 128 history tokens are recomputed; A3 ends with A = 384 MB in DRAM.
    r = ssd_run(tmp_path, turns, truncation="coupled")
    assert r.outcome[2] == MISS
    assert r.ssd_size[A] == 0 and r.ssd_used == 512 * MB and r.dram_used == 384 * MB
    # Decoupled: a DRAM hit; the SSD copy (A's first 256 tokens) lies wholly in the dropped
    # 384, so it is freed too; same bytes in use, but A3 hit.
    r = ssd_run(tmp_path, turns, truncation="decoupled")
    assert r.outcome[2] == HIT_DRAM
    assert r.ssd_size[A] == 0 and r.ssd_used == 512 * MB and r.dram_used == 384 * MB


def test_relative_trace_file_is_next_to_the_scenario(tmp_path, monkeypatch):
    from kvviz import load_scenario
    (tmp_path / "log.csv").write_text("conversation,turn,arrival_s,input_tokens,output_tokens\n"
                                      "a,1,0,100,50\na,2,30,20,40\n")
    (tmp_path / "s.toml").write_text('kind = "attention_store"\n[workload]\ntrace_file = "log.csv"\n')
    monkeypatch.chdir("/")
    sc = load_scenario(tmp_path / "s.toml")
    assert sc.workload.trace_file == str(tmp_path / "log.csv")


# --- SSD request priority --------------------------------------------------------------------------

def test_ssd_read_priority_by_hand(tmp_path):
    # 1 MB of KV per token, 4 layers, 64-token blocks, 512-token window, DRAM 512 MB, SSD
    # reads and writes 1 GB/s = 1 B/ns, PCIe fast (1000 B/ns per link, one GPU), decode free.
    # A1, B1, D1 at 0, 1, 2 s: 100 in + 28 out = 128 tokens = 128 MB each; DRAM 384 MB.
    # C1 at 3 s: 256 in + 128 out = 384 tokens; a first turn prefills its 256 input tokens at
    #   1 µs each, then 127 decode iterations of 1 µs (compute-bound: the weights take 1 ns and
    #   its ≤ 383 context tokens 1 ns each): E = 3 s + 256 µs + 127 µs = 3,000,383,000 ns (saving
    #   384 MB at 1000 B/ns takes 384 µs, which the 1 GB write buffer absorbs).
    # A2 arrives at 3.0001 s, during C1, and waits (a batch of one).
    # At E, C1 ends: DRAM 384 + 384 = 768 > 512 MB: LRU evicts A (write 128 MB: 128 ms), then
    #   B (write 128 MB); 512 MB fits. Then A2 is dispatched at E: A is on SSD only: a demand
    #   read of 128 MB (128 ms at the slower of SSD and PCIe).
    # FIFO:     write A [E, E+128 ms]  write B [E+128, E+256]  read A [E+256, E+384]
    # priority: write A [E, E+128 ms] (in progress since E: not preempted)
    #           read A  [E+128, E+256] (before the queued write of B)  write B [E+256, E+384]
    from kvviz.mechanisms.attention_store import workload_of
    from kvviz.mechanisms.attention_store.serving import Prepared, Run
    p = tmp_path / "prio.csv"
    p.write_text("conversation,turn,arrival_s,input_tokens,output_tokens\n"
                 "A,1,0,100,28\nB,1,1,100,28\nD,1,2,100,28\nC,1,3,256,128\nA,2,3.0001,100,28\n")
    E, ms = 3_000_383_000, 1_000_000
    got = {}
    for prio in (False, True):
        data = json.loads(json.dumps(SSD_WORLD))
        data["workload"] = {"trace_file": str(p)}
        data["hardware"].update(ssd_read_gbps=1, ssd_write_gbps=1, **unit_gpu(gpus=1)["hw"])
        data["store"]["ssd_read_priority"] = prio
        sc = parse_scenario(data)
        run = Run(sc, Prepared(sc, workload_of(sc)), "lru", "decoupled", record=True).run()
        assert run.batcher.outcome[1] == HIT_SSD and run.batcher.first_admit[1] == E   # A2: SSD hit, admitted at E
        t = run.tb.build()
        reads = t.spans_of("SSD · prefetch + demand reads", "fetch")
        writes = t.spans_of("SSD · eviction writes", "evict_write")
        got[prio] = (int(reads["start"][0]), sorted(int(x) for x in writes["start"])[:2])  # C1's two evictions
        # First token: 4 layers of 32 ms loads, then the last layer's 25 µs of compute.
        assert run.batcher.first_token[1] == got[prio][0] + 128 * ms + 25_000
        # SSD busy: these three (384 ms), then A2's end (A now 256 MB, DRAM 768) evicts D
        # (128 MB) and C (384 MB): 896 ms in all, in either order.
        assert run.store.ssd_busy_ns == (3 * 128 + 128 + 384) * ms
    assert got[False] == (E + 256 * ms, [E, E + 128 * ms])
    assert got[True] == (E + 128 * ms, [E, E + 256 * ms])


def test_ssd_read_priority_deterministic():
    # A small DRAM so the SSD queue is busy; the re-timed queue must be reproducible.
    a, b = (simulate(small(store__ssd_read_priority=True, hardware__dram_gb=4)) for _ in range(2))
    assert a.trace.fingerprint() == b.trace.fingerprint() and a.metrics_dict() == b.metrics_dict()


def test_prefetch_occupies_dram_from_its_reservation(tmp_path):
    # DRAM holds two one-turn sessions; a decode iteration reads 2 TB of weights in 10 ms (and
    # 5 ns per context token), so a job's 55 decode iterations take ~0.55 s; the SSD reads and
    # writes 1 GB/s; one job at a time.
    # A1 B1 C1 (C1's end demotes A, least recent) then D1 at 3.0 s and A2 at 3.1 s: A2 waits
    # behind D1, so scheduler-aware prefetches A at 3.1 s, evicting B. A's DRAM space is taken
    # at 3.1 s, not when its data lands behind B's eviction write: the occupancy view must show
    # the slot taken from 3.1 s, as the DRAM counter does.
    from kvviz.mechanisms.attention_store import workload_of
    from kvviz.mechanisms.attention_store.serving import Prepared, Run
    p = write_turns(tmp_path / "pf.csv", [("A", 0), ("B", 1), ("C", 2), ("D", 3.0), ("A", 3.1)], 200, 56)
    data = json.loads(json.dumps(SSD_WORLD))
    data.update(policies=["scheduler_aware"], trace_policy="scheduler_aware", workload={"trace_file": str(p)})
    g = unit_gpu(params_b=1000, weights_ns=1e7)
    data["model"]["params_b"] = g["params_b"]
    data["hardware"].update(ssd_read_gbps=1, ssd_write_gbps=1, **g["hw"])
    sc = parse_scenario(data)
    run = Run(sc, Prepared(sc, workload_of(sc)), "scheduler_aware", "decoupled", record=True).run()
    tr = run.tb.build()
    pf = tr.spans_of("SSD · prefetch + demand reads")
    pf = pf[pf["ref"] == A]
    # B's 256 MB write goes first (3.1–3.356 s), then A's read (3.356–3.612 s)
    assert len(pf) == 1 and (int(pf["start"][0]), int(pf["end"][0])) == (3_356_000_000, 3_612_000_000)
    # D1 ends before that: 3.0 s + 0.2 ms prefill + 55 iterations of 10 ms + 5 ns × its context
    # (200..254 tokens): A2 (row 1) starts with its prefetch in flight, an SSD hit, and the
    # reservation ends there
    decode = 55 * 10_000_000 + 5 * sum(range(200, 255))
    start = run.batcher.first_admit[1]
    assert run.batcher.outcome[1] == HIT_SSD and start == 3_000_000_000 + 200_000 + decode
    res = tr.residency[tr.residency["item"] == A]
    second = res[res["start"] > 1_000_000_000]
    assert (int(second["start"][0]), int(second["end"][0])) == (3_100_000_000, start)
