"""attention_store's serving engine: the roofline, continuous batching (admission, iterations,
HBM pool, preemption, HBM-kept sessions), the release rules, the look-ahead job list, the
workload figures, and invariants over random small scenarios."""
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvviz import parse_scenario, simulate
from kvviz.mechanisms.attention_store import workload_of
from kvviz.mechanisms.attention_store.serving import Prepared, Run
from kvviz.serving.kv_source import FIRST, HIT_DRAM, HIT_HBM, MISS
from kvviz.serving.model_presets import MFU_PAPER
from kvviz.serving.roofline import Roofline, calibrated_mfu

from .test_attention_store import unit_gpu, write_turns

# --- roofline ---------------------------------------------------------------------------------


def test_mfu_is_the_papers_prefill_figure():
    # §2.4: a 2K-token LLaMA-65B prefill on 4×A100 (312 TFLOP/s each) takes ≈ 360 ms, counting
    # the causal attention term (80 layers, d_model 8192) as the calibration does.
    g = Roofline(65.2e9, 4, 312.0, MFU_PAPER, 2.039, 0.7, 2_621_440, 80, 8192)
    assert g.prefill_ns(2048) / 1e6 == pytest.approx(360, rel=1e-3)
    assert calibrated_mfu(1e9, 1000, 2.0, 1, 1e12) == 1.0  # 2e12 FLOPs in 2 s at 1e12 FLOP/s


def test_decode_closed_form_matches_iteration_by_iteration():
    rng = np.random.default_rng(7)
    for _ in range(300):
        g = Roofline(float(rng.uniform(1e8, 1e11)), int(rng.integers(1, 9)), float(rng.uniform(10, 400)),
                     float(rng.uniform(0.1, 1)), float(rng.uniform(0.1, 4)), float(rng.uniform(0.2, 1)),
                     int(rng.integers(1000, 3_000_000)))
        n, ctx, k = int(rng.integers(1, 300)), int(rng.integers(0, 500_000)), int(rng.integers(0, 400))
        steps = sum(g.decode_step_ns(n, ctx + n * i) for i in range(k))
        assert g.decode_ns(n, ctx, k) == pytest.approx(steps, rel=1e-9, abs=1e-6)
        x = float(rng.uniform(0, steps + 1))
        kk = g.decode_steps_to(n, ctx, x)  # the iteration in progress at x ends after kk
        assert kk >= 1 and g.decode_ns(n, ctx, kk) >= x and (kk == 1 or g.decode_ns(n, ctx, kk - 1) < x)


def test_decode_is_memory_bound_until_the_batch_is_large():
    g = Roofline(65.2e9, 4, 312.0, MFU_PAPER, 2.039, 0.7, 2_621_440)
    one = g.decode_step_ns(1, 1000)
    # weights (130.4 GB) + 1000 tokens of KV over 4 × 2.039 TB/s × 0.7
    assert one == pytest.approx((130.4e9 + 1000 * 2_621_440) / (4 * 2.039e3 * 0.7), rel=1e-9)
    assert g.decode_step_ns(512, 1000) == pytest.approx(512 * g.prefill_ns_per_token)  # compute-bound


# --- a hand-checked batch ---------------------------------------------------------------------

# 1 µs of prefill per token; a decode iteration reads the weights in 10 µs and 10 ns per context
# token (1,000 B of KV per token at 100 B/ns); n jobs compute in n µs. PCIe: 4 links × 1 GB/s.
# Turns: 60 tokens in, 4 out. Blocks of 256 tokens: a stored session is 256,000 B; DRAM holds
# two; no SSD. Four layers.
G10 = unit_gpu(weights_ns=10_000)


def world(tmp_path, turns, policy="lru", n_in=60, n_out=4, record=True, **over):
    return run_trace(write_turns(tmp_path / "t.csv", turns, n_in, n_out), policy, record, **over)


def run_trace(p, policy="lru", record=True, **over):
    """`policy` alone on the turns of trace `p`, on the unit GPU G10, tiny tiers; `over`:
    section__field=value overrides."""
    data = {"kind": "attention_store", "policies": [policy], "trace_policy": policy,
            "workload": {"trace_file": str(p)},
            "model": {"preset": "custom", "kv_bytes_per_token": 1000, "layers": 4, "context_window": 256,
                      "params_b": G10["params_b"]},
            "hardware": {"hbm_free_gb": 0.01, "dram_gb": 0.000512, "ssd_gb": 0, "host_link_gbps": 1,
                         "read_buffer_gb": 0, "write_buffer_gb": 0.001, "block_tokens": 256, **G10["hw"]},
            "serving": {"arrivals": "recorded", "compare_truncation": False, "max_batch": 2}}
    for k, v in over.items():
        section, field = k.split("__")
        data.setdefault(section, {})[field] = v
    sc = parse_scenario(json.loads(json.dumps(data)))
    return Run(sc, Prepared(sc, workload_of(sc)), policy, "decoupled", record=record).run()


def test_three_sessions_batch_of_two_by_hand(tmp_path):
    # Rows: A1 A2 B1 B2 C1 C2 (by conversation). A1 B1 C1 arrive at 0, A2 B2 C2 at 1 s.
    r = world(tmp_path, [("A", 0), ("B", 0), ("C", 0), ("A", 1), ("B", 1), ("C", 1)])
    g = r.batcher
    A1, A2, B1, B2, C1, C2 = range(6)
    s = 1_000_000_000
    # t=0: A1 arrives to an idle GPU: a prefill iteration of A1 alone, 60 µs. B1, C1 wait.
    # 60 µs: A1's first token. B1 is admitted (the batch holds 2): prefill 60 µs, A1 paused.
    # 120 µs: decode A1 + B1 (120 context tokens): iteration i = max(2 µs, 10 µs + 10 ns ·
    #   (120 + 2i)) = 11,200 + 20i ns; each needs 3 (4 tokens out, the first from prefill):
    #   11,200 + 11,220 + 11,240 = 33,660 -> both end at 153,660. C1 could not join (batch full).
    # 153,660: C1 alone: prefill 60 µs, then 3 iterations of 10,000 + 10·(60 + i): 31,830.
    assert (g.first_admit[A1], g.first_token[A1], g.end[A1]) == (0, 60_000, 153_660)
    assert (g.first_admit[B1], g.first_token[B1], g.end[B1]) == (60_000, 120_000, 153_660)
    assert (g.first_admit[C1], g.first_token[C1], g.end[C1]) == (153_660, 213_660, 245_490)
    # C1's end: DRAM {A, B, C} holds 3 of 2: LRU drops A (no SSD).
    # 1 s: A2 (a miss: recompute 64 + 60 tokens, 124 µs) alone; B2 and C2 wait. Then B2 (a DRAM
    #   hit: 64,000 B over 4 B/ns in 4 layers of 4,000 ns, computing 15,000 ns a layer: the
    #   first layer's load is all that shows: 64 µs). Then decode A2 + B2 (248 tokens):
    #   12,480 + 12,500 + 12,520 = 37,500: both end at 1 s + 225,500 ns.
    assert g.outcome[A2] == MISS and g.outcome[B2] == HIT_DRAM
    assert (g.first_admit[A2], g.first_token[A2], g.end[A2]) == (s, s + 124_000, s + 225_500)
    assert (g.first_admit[B2], g.first_token[B2], g.end[B2]) == (s + 124_000, s + 188_000, s + 225_500)
    # A2's end re-saves A: {C, B (hit: recent), A}: LRU drops C, so C2 misses.
    assert g.outcome[C2] == MISS and g.first_admit[C2] == s + 225_500
    assert [g.outcome[j] for j in (A1, B1, C1)] == [FIRST] * 3
    m = r.metrics()
    assert m["hits"] == 1 and m["max_batch_seen"] == 2 and m["preemptions"] == 0
    # Decode iterations: 3 with 2 jobs, 3 with 1, 3 with 2, and C2's 3 alone.
    assert (g.dec_iters, g.dec_job_iters) == (12, 18) and m["mean_batch"] == 1.5
    # Queue wait: B1 60 µs, C1 153.66 µs, B2 124 µs, C2 225.5 µs; the rest none.
    assert m["mean_queue_wait_ms"] == pytest.approx((60_000 + 153_660 + 124_000 + 225_500) / 6 / 1e6)


def test_hbm_pool_holds_two_kept_sessions(tmp_path):
    # No DRAM, no SSD: only finished sessions kept in HBM. The pool has 190 tokens (hbm_free
    # 0.29 MB less a 0.1 MB write buffer; a 128-token window so one full session fits): a
    # running job plus two kept 64-token sessions.
    # One job at a time, turns a second apart: A1 B1 C1 C2 B2 (rows A1 B1 B2 C1 C2).
    r = world(tmp_path, [("A", 0), ("B", 1), ("C", 2), ("C", 3), ("B", 4)],
              hardware__dram_gb=0, hardware__hbm_free_gb=0.00029, hardware__write_buffer_gb=0.0001,
              hardware__host_link_gbps=1000, store__tiers="hbm", model__context_window=128,
              hardware__block_tokens=128)
    g = r.batcher
    A1, B1, B2, C1, C2 = range(5)
    assert g.cap_tok == 190
    # After A1, B1: kept {A, B} (128 tokens). C1 is admitted: 60 + 128 + 1 ≤ 190. Its decode
    # grows it to 63: 63 + 128 = 191 > 190, so after its iterations the least recent, A, gives
    # way; at C1's release {B, C} are kept (128).
    # C2: an HBM hit: C's 64 kept tokens become its blocks; 124 + 64 (B) ≤ 190. It computes its
    # 60 new tokens and loads nothing. Growing to 127 it pushes B out (127 + 64 > 190): B2 misses.
    assert g.outcome[C2] == HIT_HBM and g.outcome[B2] == MISS
    assert g.first_token[C2] - g.first_admit[C2] == 60_000
    m = r.metrics()
    assert m["hbm_hit_share"] == 1.0 and m["hit_rate"] == 0.5 and m["token_hit_rate"] == 0.5


def test_preemption_recomputes_the_youngest(tmp_path):
    # Pool of 256 tokens (hbm_free 0.257 MB less 1 KB of write buffer); two 100-in/40-out
    # first turns arrive together. A1 prefills (100 tokens) alone; B1 joins at 100 µs (100 +
    # 100 + 2 ≤ 256). Decoding both: 56 tokens of room = 28 iterations, then 256 tokens are
    # held and neither can grow: B1, the youngest, is preempted with 128 tokens (100 + 28:
    # its prompt and the 28 it generated... plus its first, counted in its context from
    # prefill) and waits at the head of the queue until A1 ends; then it prefills 128 tokens
    # again and finishes its 39 − 28 = 11 remaining iterations.
    r = world(tmp_path, [("A", 0), ("B", 0)], n_in=100, n_out=40, record=False, hardware__hbm_free_gb=0.000257,
              hardware__write_buffer_gb=0.000001, hardware__host_link_gbps=1000)
    g = r.batcher
    assert g.cap_tok == 256 and g.preemptions == 1
    # A1: prefill 0–100 µs; B1: 100–200 µs; 28 iterations of both, 11,200 + 20 i ... (context
    # 200 + 2i); then A1 alone for its last 11 (context 128 + i), while B1 waits.
    both = sum(max(2_000, 10_000 + 10 * (200 + 2 * i)) for i in range(28))
    alone = sum(max(1_000, 10_000 + 10 * (128 + i)) for i in range(11))
    t_pre = 200_000 + both
    assert g.end[0] == t_pre + alone
    # B1 re-admitted when A1 ends: prefill 128 tokens (128 µs), then its 11 iterations.
    again = sum(max(1_000, 10_000 + 10 * (128 + i)) for i in range(11))
    assert g.end[1] == g.end[0] + 128_000 + again
    assert g.first_token[1] == 200_000  # its first token came before the preemption


# --- release rules and look-ahead -------------------------------------------------------------


def test_interleaved_keeps_each_conversations_order():
    from kvviz.serving.arrivals import interleaved
    sc = parse_scenario({"kind": "attention_store", "workload": {"conversations": 300, "seed": 4}})
    from kvviz.mechanisms.attention_store.workload import synthetic
    wl = synthetic(sc.workload)
    il = interleaved(wl, 2.0, 4)
    assert np.array_equal(il.in_tok, wl.in_tok) and np.array_equal(il.conv, wl.conv)
    later = il.turn > 0
    assert np.all(il.arrival_ns[later] > il.arrival_ns[np.flatnonzero(later) - 1])
    assert np.all(il.think_ns[~later] == 0)
    # One Poisson stream of len(wl) requests at 2/s: the sorted times are its arrivals.
    gaps = np.diff(np.sort(il.arrival_ns)) / 1e9
    assert abs(gaps.mean() - 0.5) < 0.05
    # Not the conversations one after another: the first 10% of requests span many conversations.
    first = np.argsort(il.arrival_ns)[: len(il) // 10]
    assert len(np.unique(il.conv[first])) > 0.5 * len(first)
    assert np.array_equal(interleaved(wl, 2.0, 4).arrival_ns, il.arrival_ns)


def test_job_list_needs_known_release_times():
    with pytest.raises(Exception, match="job_list needs serving.arrivals"):
        parse_scenario({"kind": "attention_store", "store": {"lookahead": "job_list"}})


def test_job_list_protects_a_session_not_yet_arrived(tmp_path):
    # DRAM holds two sessions, no SSD. A1 B1 C1, then A2 at 10 s. When C1 ends, DRAM has one
    # too many. The waiting queue is empty then, so scheduler-aware (waiting_queue) sees
    # nothing and drops A (least recent): A2 misses. With the job list it knows A2 is the next
    # job (L_ew = 2): it protects A, drops B, and A2 hits.
    turns = [("A", 0), ("B", 1), ("C", 2), ("A", 10)]
    got = {}
    for mode in ("waiting_queue", "job_list"):
        r = world(tmp_path, turns, policy="scheduler_aware", store__lookahead=mode)
        got[mode] = r.batcher.outcome[1]
    assert got == {"waiting_queue": MISS, "job_list": HIT_DRAM}


# --- workload figures ---------------------------------------------------------------------------


def test_distinct_between_matches_brute_force():
    from kvviz.mechanisms.attention_store.workload_figures import _distinct_between
    rng = np.random.default_rng(2)
    seq = rng.integers(0, 12, 200)
    pairs = []
    for _ in range(100):
        lo, hi = sorted(int(x) for x in rng.integers(0, 200, 2))
        pairs.append((lo, hi))
    got = _distinct_between(seq, pairs)
    want = [len(set(seq[lo + 1:hi].tolist())) for lo, hi in pairs]
    assert got.tolist() == want


def test_live_footprint_by_hand(tmp_path):
    # A1 at 0, B1 at 1, A2 at 2, B2 at 3 (each session one 256,000 B block after a turn).
    # Live sessions: A over [0, 2), B over [1, 3): peak 2 blocks (1–2 s), mean over 0–3 s:
    # (1 + 2 + 1) / 3 blocks. Reuse distance: between A1 and A2 one other session (B); between
    # B1 and B2 one (A).
    r = world(tmp_path, [("A", 0), ("B", 1), ("A", 2), ("B", 3)])
    from kvviz.mechanisms.attention_store.workload_figures import workload_figures
    f = workload_figures(r.prep, coupled=False)
    assert f["live_footprint_peak_gb"] == pytest.approx(2 * 256_000 / 1e9)
    assert f["live_footprint_mean_gb"] == pytest.approx(4 / 3 * 256_000 / 1e9)
    assert f["reuse_distance_sessions_median"] == 1.0 and f["hit_rate_ceiling"] == 1.0


# --- invariants over random small scenarios ---------------------------------------------------


@st.composite
def small_scenarios(draw):
    return {
        "kind": "attention_store",
        "policies": draw(st.sampled_from([["recompute", "lru"], ["fifo", "scheduler_aware"], ["belady"]])),
        "workload": {"conversations": draw(st.integers(1, 25)), "seed": draw(st.integers(0, 10_000)),
                     "arrival_rate_per_s": draw(st.sampled_from([0.5, 5.0, 50.0])),
                     "max_turn_tokens": draw(st.sampled_from([64, 512, 2048]))},
        "model": {"preset": draw(st.sampled_from(["llama-13b", "llama-65b"]))},
        "hardware": {"hbm_free_gb": draw(st.sampled_from([12.0, 30.0, 190.0])),
                     "dram_gb": draw(st.sampled_from([0.0, 6.0, 128.0])),
                     "read_buffer_gb": draw(st.sampled_from([0.0, 1.0]))},
        "serving": {"arrivals": draw(st.sampled_from(["closed_loop", "interleaved"])),
                    "max_batch": draw(st.integers(1, 8)), "compare_truncation": False},
        "store": {"tiers": draw(st.sampled_from(["dram_ssd", "hbm", "hbm_dram", "hbm_dram_ssd"]))},
    }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_scenarios())
def test_invariants(data):
    if data["hardware"]["dram_gb"] == 0:
        data["hardware"]["ssd_gb"] = 0
    data["trace_policy"] = data["policies"][-1]
    sc = parse_scenario(data)
    prep = Prepared(sc, workload_of(sc))
    cap = None
    for policy in sc.policies:
        # the reference engine: its boundaries are watched through its Python _iterate (the
        # compiled engine gives the same runs: tests/test_native_engine.py)
        run = Run(sc, prep, policy, "decoupled", record=False, engine="python")
        g = run.batcher
        seen = []
        orig_iterate = g._iterate

        def watch(orig=orig_iterate, g=g, seen=seen):
            seen.append((g.tok_run, g.cached_tok, len(g.batch)))
            orig()
        g._iterate = watch
        run.run()
        cap = g.cap_tok
        # HBM never over-committed; the batch never above its cap.
        assert all(t + c <= cap and t <= cap for t, c, _ in seen)
        assert g.max_seen <= sc.serving.max_batch and all(n <= sc.serving.max_batch for *_, n in seen)
        # Every job completes, after its first token, which comes after its admission and arrival.
        arr, adm, ft, end = (np.array(x) for x in (run.arrival, g.first_admit, g.first_token, g.end))
        assert np.all(adm >= arr) and np.all(ft > adm) and np.all(end >= ft)
        # Every job's tokens prefilled once (its new tokens, and its kept history unless a hit),
        # plus what preempted jobs held when they were preempted.
        out = np.array(g.outcome)
        new = np.where(out >= HIT_HBM, prep.inn, prep.keep + prep.inn)
        assert g.prefill_tokens == int(new.sum()) + g.resume_tokens
        assert (g.resume_tokens > 0) == (g.preemptions > 0)
        # Decode iterations: every job got exactly out − 1 tokens from them.
        assert g.dec_job_iters == int(np.maximum(prep.out - 1, 0).sum())
        assert g.n_dec == 0 and not g.batch and not g.waiting and g.tok_run == 0
        # Every stored byte accounted for.
        s = run.store
        assert s.ssd_used == sum(s.ssd_size)
    a, b = simulate(sc), simulate(sc)  # identical input, identical result and trace
    assert a.metrics_dict() == b.metrics_dict() and a.trace.fingerprint() == b.trace.fingerprint()


# --- the paper's Figure 24 shape, and parallel runs ---------------------------------------------


def test_figure_24_tiers_shape():
    # The bundled Figure 21 setting at a sixth of the scale (1,500 conversations; DRAM and SSD a
    # sixth too): keeping finished sessions in HBM alone, or in HBM and DRAM, hits rarely; adding
    # the SSD makes most turns hits (paper: ≈ 0%, 1.7–19.1%, 71–90%).
    from kvviz import load_scenario
    from tests.conftest import SCENARIOS
    hit = {}
    for tiers in ("hbm", "hbm_dram", "hbm_dram_ssd"):
        sc = load_scenario(SCENARIOS / "attention_store_sharegpt.toml",
                           ['policies=["scheduler_aware"]', "serving.compare_truncation=false",
                            "workload.conversations=1500", "hardware.dram_gb=21.3", "hardware.ssd_gb=1667",
                            f"store.tiers={tiers}"])
        hit[tiers] = simulate(sc).metrics["policies"]["scheduler_aware"]["hit_rate"]
    assert hit["hbm"] <= hit["hbm_dram"] < 0.25 < 0.6 < hit["hbm_dram_ssd"]


@pytest.mark.slow  # 2,000 conversations, serial and then on a pool
def test_parallel_runs_equal_serial(monkeypatch):
    from kvviz import load_scenario
    from kvviz.executor import local_pool, worth_a_pool
    from kvviz.mechanisms import mechanisms
    from kvviz.mechanisms.attention_store import plan
    from kvviz.runs import complete, run_parts
    from tests.conftest import SCENARIOS
    sc = load_scenario(SCENARIOS / "attention_store_sharegpt.toml",
                       ['policies=["recompute","lru","scheduler_aware"]', "workload.conversations=2000"])
    monkeypatch.setenv("KVVIZ_WORKERS", "1")
    serial = complete(plan(sc), sc)
    monkeypatch.setenv("KVVIZ_WORKERS", "2")
    est = mechanisms()[sc.kind].estimate(sc)
    assert worth_a_pool([s for _, s in est.parts], 2, True, est.dispatch)  # a pool already started takes them
    p, outs = plan(sc), {}
    with local_pool(2) as pool:
        run_parts(p, sc, [q.name for q in p.parts], outs.__setitem__, pool=pool)
    pooled = p.combine(sc, outs)
    assert serial.metrics_dict() == pooled.metrics_dict()
    assert serial.trace.fingerprint() == pooled.trace.fingerprint()


def test_views_open_on_the_chosen_jobs_iteration(tmp_path):
    from kvviz.mechanisms.attention_store import initial_range
    r = world(tmp_path, [("A", 0), ("B", 0), ("C", 0), ("A", 1), ("B", 1), ("C", 1)])
    res = simulate(r.sc)
    t0, t1 = initial_range(res)
    tr = res.trace
    lane = [i for i, n in enumerate(tr.lanes["name"].tolist()) if n.startswith("GPU · layers")][0]
    layers = tr.spans[tr.spans["lane"] == lane]
    assert len(layers) == 4 and t0 <= layers["start"].min() and layers["end"].max() <= t1
    assert t1 - t0 < tr.t_end / 100  # the iteration, not the whole run
