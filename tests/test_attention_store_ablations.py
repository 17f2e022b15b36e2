"""attention_store's ablations as settings: the attention term of the prefill roofline,
load-or-recompute for histories on SSD (`store.load_if_faster`), synchronous vs asynchronous
saving (`store.save`) and no pre-loading vs layer-wise pre-loading (`store.preload`), each on a
hand-computed small case."""

import numpy as np
import pytest

from kvviz.cli import main
from kvviz.serving.kv_source import HIT_DRAM, HIT_SSD, RECOMPUTE_FASTER
from kvviz.serving.layerwise_prefill import prefill_end
from kvviz.serving.roofline import Roofline, calibrated_mfu, prefill_flops

from .conftest import SCENARIOS
from .test_attention_store import unit_gpu
from .test_batching import run_trace

# --- the attention term -----------------------------------------------------------------------


def test_attention_term_by_hand():
    # 1,000 FLOP/ns (one GPU, 1 TFLOP/s, MFU 1). params 500: matmuls 2·500 = 1,000 FLOPs = 1 ns
    # per token. 2 layers × d_model 125: 4·2·125 = 1,000 FLOPs = 1 ns per (token, key) pair.
    g = Roofline(500, 1, 1.0, 1.0, 1.0, 1.0, 1, layers=2, d_model=125)
    # 4 tokens from scratch: causal, token t sees t keys: 1+2+3+4 = 10 pairs; 4 + 10 ns.
    assert g.prefill_ns(4) == pytest.approx(14)
    # 2 new tokens after 3 cached: they see 4 and 5 keys: 2 + 9 ns.
    assert g.prefill_ns(2, 3) == pytest.approx(11)
    # Recomputing the 3 history tokens costs their own prefill: 20 - 11 = 9 = prefill(3).
    assert g.prefill_ns(5) - g.prefill_ns(2, 3) == pytest.approx(g.prefill_ns(3)) == pytest.approx(9)
    # FLOPs, brute force: per token 2·params, per layer and key 4·d_model.
    for n, h in ((4, 0), (2, 3), (7, 11)):
        brute = sum(2 * 500 + sum(4 * 125 for _layer in range(2) for _key in range(h + t + 1)) for t in range(n))
        assert prefill_flops(500, n, h, 2, 125) == brute
    # Arrays work (Prepared's S_buf uses them), and d_model = 0 leaves the term out.
    assert np.allclose(g.prefill_ns(np.array([4, 2]), np.array([0, 3])), [14, 11])
    assert Roofline(500, 1, 1.0, 1.0, 1.0, 1.0, 1).prefill_ns(4) == 4
    # The calibration counts both terms: 14,000 FLOPs in 14 ns at 1,000 FLOP/ns is MFU 1.
    assert calibrated_mfu(500, 4, 14e-9, 1, 1e12, layers=2, d_model=125) == pytest.approx(1.0)


def test_attention_term_share_of_a_65b_prefill():
    # LLaMA-65B, 2,048 tokens from scratch: 4·80·8192·(2048·2049/2) = 5.5 TFLOPs of attention
    # against 2·65.2e9·2048 = 267 TFLOPs of matmuls: 2.06%; after 2,000 cached tokens, a
    # 48-token turn's attention adds 4·80·8192·(48·2000 + 48·49/2) / (2·65.2e9·48) = 4.1%: at a
    # 2K window the term stays a few per cent of a 65B prefill.
    attn = prefill_flops(65.2e9, 2048, 0, 80, 8192) - prefill_flops(65.2e9, 2048)
    assert attn / prefill_flops(65.2e9, 2048) == pytest.approx(0.0206, abs=5e-4)
    turn = prefill_flops(65.2e9, 48, 2000, 80, 8192) / prefill_flops(65.2e9, 48) - 1
    assert turn == pytest.approx(4 * 80 * 8192 * (48 * 2000 + 48 * 49 / 2) / (2 * 65.2e9 * 48))
    assert 0.040 < turn < 0.042


def test_attention_term_in_the_engine(tmp_path):
    # One conversation, two turns of 60 in and 4 out. unit_gpu: 1,000 FLOP/ns, so 1 µs of
    # matmuls per token (params 0.0005 B) and, with 4 layers × d_model 125, 4·4·125 / 1,000 =
    # 2 ns per (token, key) pair.
    # Turn 1: 60 µs + 2·(60·61/2) ns = 63,660 ns. Turn 2, a DRAM hit on 64 history tokens
    # loaded in no time (fast link): 60 µs + 2·(60·64 + 60·61/2) ns = 71,340 ns.
    r = one_conversation(tmp_path, [("A", 0), ("A", 1)], model__d_model=125, hardware__host_link_gbps=1e6)
    g = r.batcher
    assert g.outcome[1] == HIT_DRAM
    assert g.first_token[0] - g.first_admit[0] == 60_000 + 2 * 1_830
    assert g.first_token[1] - g.first_admit[1] == 60_000 + 2 * (3_840 + 1_830)


# --- the small world of these cases -----------------------------------------------------------

# test_batching.run_trace's world: 1 µs per prefill token (d_model 0: matmuls only unless a case
# sets it); a decode iteration reads the weights in 10 µs and each context token's KV (1,000 B at
# 100 B/ns) in 10 ns. KV of 1,000 B per token; PCIe 4 links × 1 GB/s = 4 B/ns; 4 layers;
# 256-token blocks.


def one_conversation(tmp_path, turns, n_in=60, n_out=4, policy="lru", rows=None, **over):
    """Run `policy` on turns [(conversation, arrival_s)] (or CSV `rows`) and return the Run."""
    p = tmp_path / "t.csv"
    if rows is None:
        seen: dict = {}
        rows = []
        for conv, t in turns:
            seen[conv] = seen.get(conv, 0) + 1
            rows.append(f"{conv},{seen[conv]},{t},{n_in},{n_out}")
    p.write_text("conversation,turn,arrival_s,input_tokens,output_tokens\n" + "\n".join(rows) + "\n")
    return run_trace(p, policy, True, **over)


# --- store.save: async vs sync ----------------------------------------------------------------


def test_sync_save_stalls_the_next_iteration_two_jobs(tmp_path):
    # A: 60 in, 2 out; B: 60 in, 4 out; both at 0, a batch of up to 2.
    # 0: A alone (B arrives just after): prefill 60 µs. 60,000: B's prefill, 60 µs.
    # 120,000: decode A + B (120 context tokens): 10,000 + 10·120 = 11,200 ns: A's last token
    #   (A needs 1 decode iteration, B 3). A's new KV: 62 tokens × 1,000 B / 4 B/ns = 15,500 ns;
    #   B's: 64 tokens: 16,000 ns.
    # async: A's save ran from its prefill's end (60,000-75,500): A's blocks go at 131,200 and
    #   B decodes on: 2 iterations with 61, 62 context tokens: 10,610 + 10,620 = 21,230 ->
    #   B ends at 152,430. Busy 60,000 + 60,000 + 11,200 + 21,230 = 152,430.
    # sync: at 131,200 A's KV is written, the GPU waiting: B's next iteration starts at
    #   146,700, B ends at 167,930, then its own save stalls until 183,930.
    rows = ["A,1,0,60,2", "B,1,0,60,4"]
    ends, busy, stall = {}, {}, {}
    for mode in ("async", "sync"):
        g = one_conversation(tmp_path, None, rows=rows, store__save=mode).batcher
        assert (g.first_token[0], g.first_admit[1], g.first_token[1]) == (60_000, 60_000, 120_000)
        ends[mode] = (g.end[0], g.end[1])
        busy[mode], stall[mode] = g.busy_ns, g.save_stall_ns
    assert ends["async"] == (131_200, 152_430) and busy["async"] == 152_430 and stall["async"] == 0
    assert ends["sync"] == (131_200, 167_930) and stall["sync"] == 15_500 + 16_000
    assert busy["sync"] == 152_430 + 31_500


def test_sync_save_holds_the_next_job_and_the_blocks(tmp_path):
    # A batch of one: A1 and B1 at 0, 60 in and 4 out each. A1: prefill 0-60,000, 3 decode
    # iterations of 10,000 + 10·(60 + i): 31,830 -> 91,830.
    # async: B1 is admitted at 91,830: first token 151,830, end 183,660.
    # sync: A1's 64,000 B take 16,000 ns first: B1 admitted at 107,830, first token 167,830;
    #   A1's blocks are released at 107,830, when its write ends.
    got = {}
    for mode in ("async", "sync"):
        r = one_conversation(tmp_path, [("A", 0), ("B", 0)], store__save=mode, serving__max_batch=1)
        g = r.batcher
        got[mode] = (g.first_admit[1], g.first_token[1], g.end[1])
        m = r.metrics()
        assert m["save_stall_s"] == pytest.approx(0 if mode == "async" else 32_000 / 1e9)
    assert got["async"] == (91_830, 151_830, 183_660)
    assert got["sync"] == (107_830, 167_830, 199_660)
    # The trace shows the writes on the save lane (sync: at each job's end).
    saves = r.tb.build().spans_of("PCIe · save HBM→DRAM")
    assert [(int(s), int(e)) for s, e in zip(saves["start"], saves["end"])] == [(91_830, 107_830),
                                                                              (199_660, 215_660)]


def test_recompute_saves_nothing(tmp_path):
    # A policy that stores nothing has nothing to write: sync costs it no stall.
    r = one_conversation(tmp_path, [("A", 0), ("B", 0)], policy="recompute", store__save="sync")
    assert r.batcher.save_stall_ns == 0 and r.metrics()["save_stall_s"] == 0


# --- store.load_if_faster ---------------------------------------------------------------------

def ssd_world(tmp_path, turns, ssd_read_gbps, load_if_faster=True):
    """1 MB of KV per token, 256-token blocks: a one-turn session is 256 MB and DRAM holds one,
    so B1's end evicts A to SSD (a 256 MB write at 3 B/ns: 85,333,333 ns). 1 µs per prefill
    token; a decode iteration of one job 1 µs (compute-bound); host link 4 × 1,000 B/ns."""
    g = unit_gpu()
    return one_conversation(
        tmp_path, turns, policy="lru",
        model__kv_bytes_per_token=1_000_000, model__params_b=g["params_b"],
        hardware__hbm_free_gb=10, hardware__dram_gb=0.256, hardware__ssd_gb=1.024, hardware__host_link_gbps=1000,
        hardware__ssd_read_gbps=ssd_read_gbps, hardware__ssd_write_gbps=3, hardware__write_buffer_gb=1,
        store__load_if_faster=load_if_faster, serving__max_batch=1,
        **{f"hardware__{k}": v for k, v in g["hw"].items()})


S = 1_000_000_000


def test_load_when_the_ssd_is_faster(tmp_path):
    # A2 at 2 s: its 64-token history (64 MB) is on SSD, the SSD idle. Load: 64e6 B at
    # min(2,000, 4,000) B/ns = 32,000 ns < recompute: 64 tokens × 1 µs = 64,000 ns: it loads.
    # Layers: 8,000 ns of load, 15,000 of compute each: first token at 2 s + 8,000 + 60,000.
    r = ssd_world(tmp_path, [("A", 0), ("B", 1), ("A", 2)], ssd_read_gbps=2000)
    g, m = r.batcher, r.metrics()
    assert g.outcome[1] == HIT_SSD and (m["ssd_loads"], m["ssd_recomputes"]) == (1, 0)
    assert g.first_token[1] - g.first_admit[1] == 68_000


def test_recompute_when_the_ssd_is_slower(tmp_path):
    # The same at 0.5 GB/s: 64e6 / 0.5 = 128 ms > 64 µs: recompute (a miss: 124 tokens, 124 µs).
    r = ssd_world(tmp_path, [("A", 0), ("B", 1), ("A", 2)], ssd_read_gbps=0.5)
    g, m = r.batcher, r.metrics()
    assert g.outcome[1] == RECOMPUTE_FASTER and (m["ssd_loads"], m["ssd_recomputes"]) == (0, 1)
    assert m["hits"] == 0 and m["hit_rate"] == 0
    assert g.first_token[1] - g.first_admit[1] == 124_000
    assert r.store.ssd_read_bytes == 0
    # false: today's rule, every SSD hit loads: 128 ms of read, then the last layer's compute.
    r = ssd_world(tmp_path, [("A", 0), ("B", 1), ("A", 2)], ssd_read_gbps=0.5, load_if_faster=False)
    assert r.batcher.outcome[1] == HIT_SSD
    assert r.batcher.first_token[1] - r.batcher.first_admit[1] == 128_000_000 + 15_000


def test_queued_ssd_io_counts(tmp_path):
    # A fast SSD, but A2 (1.01 s) comes while A's eviction write (from B1's end, 1 s + 63 µs,
    # for 85,333,333 ns) still holds it: the read would start at 1,085,396,333: 75 ms away.
    r = ssd_world(tmp_path, [("A", 0), ("B", 1), ("A", 1.01)], ssd_read_gbps=2000)
    assert r.batcher.outcome[1] == RECOMPUTE_FASTER
    assert r.batcher.first_token[1] == int(1.01 * S) + 124_000
    r = ssd_world(tmp_path, [("A", 0), ("B", 1), ("A", 1.01)], ssd_read_gbps=2000, load_if_faster=False)
    assert r.batcher.outcome[1] == HIT_SSD
    assert r.batcher.first_token[1] == S + 63_000 + 85_333_333 + 8_000 + 60_000


# --- store.preload: none vs layerwise ---------------------------------------------------------

def test_preload_none_vs_layerwise_by_hand(tmp_path):
    # A1 at 0, A2 at 1 s: a DRAM hit on 64 history tokens (64,000 B), GPU idle. Host link
    # 4 × 0.25 B/ns = 1 B/ns: each of 4 layers loads in 16,000 ns and computes in 15,000.
    # layerwise (buffer 0): loads back to back from S, layer i computes once loaded and the one
    #   before is done: the last load ends at S + 64,000, its compute at S + 79,000.
    # none: all 64,000 ns of loads, then 60,000 of compute: S + 124,000.
    want = {"layerwise": 79_000, "none": 124_000}
    for mode, pe in want.items():
        r = one_conversation(tmp_path, [("A", 0), ("A", 1)], hardware__host_link_gbps=0.25, store__preload=mode)
        g = r.batcher
        assert g.outcome[1] == HIT_DRAM and g.first_admit[1] == S
        assert g.first_token[1] - S == pe
        m = r.metrics()
        assert m["prefill_time_dram_hits_ms"] == pytest.approx(pe / 1e6)
        assert r.detail_info["prefill_ms"] == pytest.approx(pe / 1e6)
    assert prefill_end(S, S, 16_000, 15_000, 4, 0) == (S + 79_000, S + 64_000)


def test_preload_none_ignores_the_read_buffer(tmp_path):
    # A batch of one: A2 waits behind B1, its history in DRAM, so a read buffer lets layer-wise
    # pre-loading start early (a shorter prefill); without pre-loading the buffer changes nothing.
    t = [("A", 0), ("B", 0), ("A", 0)]

    def run(preload, buffer_gb):
        return one_conversation(tmp_path, t, hardware__host_link_gbps=0.25, store__preload=preload,
                                serving__max_batch=1, hardware__read_buffer_gb=buffer_gb).metrics()

    assert run("none", 0) == run("none", 0.001)
    lw0, lw1 = run("layerwise", 0), run("layerwise", 0.001)
    assert lw1["prefill_time_dram_hits_ms"] < lw0["prefill_time_dram_hits_ms"] < \
        run("none", 0)["prefill_time_dram_hits_ms"]


SETTINGS_BAD = {
    "save": ("store.save=maybe", "store.save"),
    "preload": ("store.preload=eager", "store.preload"),
    "load_if_faster": ("store.load_if_faster=sometimes", "store.load_if_faster"),
    "d_model": ("model.d_model=-1", "model.d_model"),
}


@pytest.mark.parametrize("case", sorted(SETTINGS_BAD))
def test_bad_settings_exit_2_naming_field(case, tmp_path, capsys):
    setting, field = SETTINGS_BAD[case]
    out = tmp_path / "never.json"
    assert main(["run", str(SCENARIOS / "attention_store_sharegpt.toml"), "--json-out", str(out),
                 "--set", setting]) == 2
    assert f": {field}: " in capsys.readouterr().err
    assert not out.exists()


def test_unused_buffers_are_marked_inactive():
    from kvviz.mechanisms.attention_store import inactive
    assert "hardware.read_buffer_gb" in inactive({"store": {"preload": "none"}})
    assert "hardware.write_buffer_gb" in inactive({"store": {"save": "sync"}})
    both = inactive({"store": {"preload": "layerwise", "save": "async"}})
    assert "hardware.read_buffer_gb" not in both and "hardware.write_buffer_gb" not in both


def test_load_rule_counts_reads_chosen_at_the_same_instant():
    # Recomputing 10 tokens takes 10 ns (1 ns per token). A read of 6 ns loads; a second job
    # admitted at the same instant would wait for it: 6 + 6 = 12 > 10, it recomputes. Once
    # booked (or at another instant) the pending reads are the SSD queue's business.
    from kvviz.serving.load_or_recompute import LoadRule
    g = Roofline(500, 1, 1.0, 1.0, 1.0, 1.0, 1)
    rule = LoadRule(True, g)
    assert rule.loads(10, 6, 6, now=5) and not rule.loads(10, 6, 6, now=5)
    assert rule.loads(10, 6, 6, now=7)
    rule.booked()
    assert rule.loads(10, 6, 6, now=7)
    assert not rule.loads(10, 10, 10, now=9)  # a tie recomputes: loading is not faster
    assert LoadRule(False, g).loads(10, 1e9, 1e9, now=0)
