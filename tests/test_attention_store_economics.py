"""attention_store's economics: GPU time attributed to jobs (hand cases and the property that
every busy ns is attributed once), phase shares, the saturated and conversation_poisson release
rules, the time-bounded job list, and the cost of a turn.

The hand cases use test_attention_store's unit GPU: prefill 1 µs per token, a decode iteration
of n jobs n µs (compute-bound), 1 MB of KV per token, 4 layers."""
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvviz import parse_scenario, simulate
from kvviz.mechanisms.attention_store import workload_of
from kvviz.mechanisms.attention_store.serving import Prepared, Run
from kvviz.mechanisms.attention_store.workload import synthetic
from kvviz.serving.arrivals import conversation_poisson, mean_turns
from kvviz.serving.kv_source import HIT_DRAM

from .test_attention_store import TINY
from .test_batching import small_scenarios


def tiny_rows(tmp_path, rows, **sections):
    """The unit world serving `rows` [(conversation, arrival_s, tokens in, tokens out)]."""
    seen: dict = {}
    lines = ["conversation,turn,arrival_s,input_tokens,output_tokens"]
    for conv, t, n_in, n_out in rows:
        seen[conv] = seen.get(conv, 0) + 1
        lines.append(f"{conv},{seen[conv]},{t},{n_in},{n_out}")
    p = tmp_path / "rows.csv"
    p.write_text("\n".join(lines) + "\n")
    data = json.loads(json.dumps(TINY))
    data["workload"] = {"trace_file": str(p)}
    for name, fields in sections.items():
        if isinstance(fields, dict):
            data.setdefault(name, {}).update(fields)
        else:
            data[name] = fields
    return parse_scenario(data)


def run_of(sc, policy):
    return Run(sc, Prepared(sc, workload_of(sc)), policy, "decoupled", record=False).run()


# C (100 tokens in, 1 out) runs alone from t = 0: a 100 µs prefill, no decode. A (60 in, 2 out)
# and B (20 in, 2 out) arrive at 50 µs and wait; at 100 µs they prefill together (80 µs), then
# decode together for one iteration (2 jobs: 2 µs). Makespan 182 µs.
CAB = [("C", 0, 100, 1), ("A", 0.00005, 60, 2), ("B", 0.00005, 20, 2)]


def test_prefill_by_compute_share_and_decode_split_evenly(tmp_path):
    sc = tiny_rows(tmp_path, CAB, serving={"max_batch": 2}, policies=["recompute"], trace_policy="recompute")
    run = run_of(sc, "recompute")
    g = run.batcher
    C, A, B = 0, 1, 2  # rows in conversation order: C first (it appears first in the file)
    assert [run.prep.wl.names[run.conv[j]] for j in (C, A, B)] == ["C", "A", "B"]
    assert g.first_admit[A] == g.first_admit[B] == 100_000 and g.end[A] == g.end[B] == 182_000
    # The prefill iteration [A, B] (80 µs) by tokens computed: A 60/80, B 20/80; the decode
    # iteration (2 µs) in halves.
    assert g.gpu_ns[C] == pytest.approx(100_000, abs=1)
    assert g.gpu_ns[A] == pytest.approx(60_000 + 1_000, abs=1)
    assert g.gpu_ns[B] == pytest.approx(20_000 + 1_000, abs=1)
    assert sum(g.gpu_ns) == pytest.approx(g.busy_ns, abs=1e-6) and g.busy_ns == 182_000
    m = run.metrics()
    assert m["gpu_time_s"] == pytest.approx(182e-6) and m["gpu_busy_s"] == pytest.approx(182e-6)
    assert m["phase_share"] == pytest.approx({"prefill": 180 / 182, "decode": 2 / 182, "load_wait": 0.0})


def test_load_wait_is_the_prefill_iterations_gaps(tmp_path):
    # A1 (60 in, 4 out) at 0, A2 (60 in, 4 out) at 10 s: a DRAM hit on 64 history tokens (64 MB,
    # 16 MB a layer). PCIe 1 B/ns per link × 4 GPUs = 4 B/ns: a layer loads in 4 ms; its compute
    # (60 tokens / 4 layers) takes 15 µs. No read buffer: the prefill ends 4 × 4 ms + 15 µs after
    # it starts, of which the layers compute 60 µs: 15,955,000 ns of load wait.
    sc = tiny_rows(tmp_path, [("A", 0, 60, 4), ("A", 10, 60, 4)], hardware={"host_link_gbps": 1},
                   policies=["lru"], trace_policy="lru")
    run = run_of(sc, "lru")
    g = run.batcher
    assert g.outcome[1] == HIT_DRAM
    assert g.first_token[1] - g.first_admit[1] == 16_015_000
    assert g.load_wait_ns == 15_955_000
    # A2's GPU time: its prefill (waits included) and 3 decode iterations of 1 µs alone.
    assert g.gpu_ns[1] == pytest.approx(16_015_000 + 3_000, abs=1)
    m = run.metrics()
    assert m["load_wait_gpu_s"] == pytest.approx(0.015955)
    busy = g.busy_ns
    assert m["phase_share"]["load_wait"] == pytest.approx(15_955_000 / busy, rel=1e-5)
    assert sum(m["phase_share"].values()) == pytest.approx(1.0)


@st.composite
def with_rule(draw):
    data = draw(small_scenarios())
    data["serving"]["arrivals"] = draw(st.sampled_from(["closed_loop", "interleaved", "saturated",
                                                        "conversation_poisson"]))
    if data["hardware"]["dram_gb"] == 0:
        data["hardware"]["ssd_gb"] = 0
    data["trace_policy"] = data["policies"][-1]
    # the ablations too: a synchronous save's stall is busy time and must be someone's work
    data.setdefault("store", {})["save"] = draw(st.sampled_from(["async", "sync"]))
    data["store"]["preload"] = draw(st.sampled_from(["layerwise", "none"]))
    return data


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(with_rule())
def test_gpu_time_summed_over_jobs_is_the_busy_time(data):
    # Every busy ns is attributed once, idle time never: also with preemptions (small HBM
    # pools), HBM-kept sessions, loads from DRAM and SSD, and every release rule.
    sc = parse_scenario(data)
    prep = Prepared(sc, workload_of(sc))
    for policy in sc.policies:
        run = Run(sc, prep, policy, "decoupled", record=False).run()
        g = run.batcher
        per_job = np.array(g.gpu_ns)
        assert np.all(per_job > 0)  # every job had at least its prefill
        assert per_job.sum() == pytest.approx(g.busy_ns, rel=1e-9, abs=1e-3)
        assert g.load_wait_ns <= g.prefill_ns <= g.busy_ns


def test_property_holds_with_preemptions():
    # The hypothesis cases may not hit preemption: force it (a 4 GB pool for LLaMA-13B, 2 GB of
    # it the write buffer) and check the same property over a few seeds.
    preempted = 0
    for seed in range(4):
        sc = parse_scenario({"kind": "attention_store", "policies": ["recompute", "lru"], "trace_policy": "lru",
                             "workload": {"conversations": 30, "seed": seed, "arrival_rate_per_s": 20.0},
                             "hardware": {"hbm_free_gb": 4.0},
                             "serving": {"arrivals": "interleaved", "compare_truncation": False}})
        prep = Prepared(sc, workload_of(sc))
        for policy in sc.policies:
            g = Run(sc, prep, policy, "decoupled", record=False).run().batcher
            preempted += g.preemptions
            assert sum(g.gpu_ns) == pytest.approx(g.busy_ns, rel=1e-9)
    assert preempted > 0


def test_saturated_releases_each_turn_at_its_predecessors_end():
    sc = parse_scenario({"kind": "attention_store", "policies": ["lru"], "trace_policy": "lru",
                         "workload": {"conversations": 40, "seed": 3},
                         "serving": {"arrivals": "saturated", "compare_truncation": False}})
    run = run_of(sc, "lru")
    wl, g = run.prep.wl, run.batcher
    arr, end = np.array(run.arrival), np.array(g.end)
    later = np.flatnonzero(wl.turn > 0)
    assert len(later) > 40
    assert np.all(arr[wl.turn == 0] == 0)
    assert np.array_equal(arr[later], end[later - 1])  # rows: conversation, then turn
    m = run.metrics()
    # Flat out: the GPU works from t = 0 to the last reply (no think time leaves it idle).
    assert m["gpu_busy_s"] == pytest.approx(m["makespan_s"], rel=1e-3)


def test_saturated_and_closed_loop_refuse_the_job_list():
    for rule in ("saturated", "closed_loop"):
        with pytest.raises(Exception, match="store.lookahead"):
            parse_scenario({"kind": "attention_store", "serving": {"arrivals": rule},
                            "store": {"lookahead": "job_list"}})
    with pytest.raises(Exception, match="lookahead_horizon_s"):
        parse_scenario({"kind": "attention_store", "store": {"lookahead_horizon_s": -1}})


def test_conversation_poisson_start_rate_and_gaps():
    sc = parse_scenario({"kind": "attention_store", "workload": {"conversations": 20_000, "seed": 11}})
    wl = synthetic(sc.workload)
    lam, median, sigma = 2.0, 30.0, 1.5
    out = conversation_poisson(wl, lam, median, sigma, seed=11)
    mt = mean_turns(wl)
    assert mt == pytest.approx(len(wl) / 20_000)
    first = out.turn == 0
    starts = out.arrival_ns[first] / 1e9
    assert np.all(np.diff(starts) >= 0)
    # Inter-start gaps are Exp(mean = mt / λ): their mean over N = 20,000 has a standard error
    # of mean/√N = 0.71%; a 3% tolerance is over four standard errors.
    mean_gap = starts[-1] / len(starts)  # the first start is the first gap after t = 0
    assert mean_gap == pytest.approx(mt / lam, rel=0.03)
    # Over the whole run, turns come at λ per second (the rule keeps λ's meaning).
    assert len(out) / starts[-1] == pytest.approx(lam, rel=0.03)
    # Gaps within a conversation: lognormal with the given median (log-space standard error of
    # the sample median ≈ 1.25·σ/√M, M ≈ 90,000: 0.6%; tolerance 3%) and sigma.
    gaps = out.think_ns[~first] / 1e9
    assert np.median(gaps) == pytest.approx(median, rel=0.03)
    assert np.std(np.log(gaps)) == pytest.approx(sigma, rel=0.03)
    assert np.array_equal(out.in_tok, wl.in_tok) and np.array_equal(out.out_tok, wl.out_tok)
    later = np.flatnonzero(~first)
    assert np.array_equal(out.arrival_ns[later] - out.arrival_ns[later - 1], out.think_ns[later])


def test_job_list_holds_the_turns_within_the_horizon():
    sc = parse_scenario({"kind": "attention_store", "policies": ["scheduler_aware"],
                         "trace_policy": "scheduler_aware", "workload": {"conversations": 200, "seed": 2},
                         "serving": {"arrivals": "conversation_poisson", "compare_truncation": False},
                         "store": {"lookahead": "job_list", "lookahead_horizon_s": 120}})
    prep = Prepared(sc, workload_of(sc))
    run = Run(sc, prep, "scheduler_aware", "decoupled", record=False)
    st_ = run.store
    nominal = np.sort(prep.wl.arrival_ns)
    for t_s in (0, 50, 400, 3000):
        run.loop.now = int(t_s * 1e9)
        st_._reveal()
        assert st_.shown == int((nominal <= (t_s + 120) * 1e9).sum())
    # Under interleaved the same setting lists the whole job list from the start.
    sc2 = parse_scenario({**sc.model_dump(), "serving": {**sc.serving.model_dump(), "arrivals": "interleaved"}})
    run2 = Run(sc2, Prepared(sc2, workload_of(sc2)), "scheduler_aware", "decoupled", record=False)
    assert run2.store.horizon < 0 and run2.store.shown == len(prep.wl)


def test_cost_by_hand(tmp_path):
    # Prices: $3,600 per GPU-hour and per DRAM GB-hour (one dollar a second), SSD free. The C, A,
    # B case: 182 µs of GPU time on 4 GPUs = $728e-6; LRU provisions the 0.512 GB DRAM for the
    # 182 µs run = $93.184e-6; recompute provisions nothing.
    sc = tiny_rows(tmp_path, CAB, serving={"max_batch": 2}, policies=["recompute", "lru"], trace_policy="lru",
                   cost={"gpu_usd_per_gpu_hour": 3600, "dram_usd_per_gb_hour": 3600, "ssd_usd_per_gb_hour": 0})
    m = simulate(sc).metrics_dict()["policies"]
    re, lru = m["recompute"], m["lru"]
    assert re["cost_usd"] == pytest.approx(728e-6, rel=1e-5) and re["storage_share_of_cost"] == 0
    assert re["provisioned_dram_gb"] == 0 and lru["provisioned_dram_gb"] == pytest.approx(0.512)
    assert lru["storage_cost_usd"] == pytest.approx(93.184e-6, rel=1e-5)
    assert lru["cost_per_turn"] == pytest.approx((728e-6 + 93.184e-6) / 3, rel=1e-5)
    assert lru["storage_share_of_cost"] == pytest.approx(93.184 / 821.184, rel=1e-5)
    assert lru["cost_saving_vs_recompute"] == pytest.approx(1 - 821.184 / 728, rel=1e-5)
    assert lru["gpu_time_speedup_vs_recompute"] == 1.0 and lru["makespan_speedup_vs_recompute"] == 1.0
    # Amdahl: recompute's decode share is 2/182, so removing all prefill could at most give 91×.
    assert lru["gpu_time_speedup_cap_vs_recompute"] == pytest.approx(91.0, rel=1e-5)
