"""Seed 000's 16-token worked example, event for event, and the model's general rules."""
import numpy as np
import pytest

from kvviz import apply_override, parse_scenario, scenario_to_dict, simulate
from kvviz.trace import SPAN_KINDS

US = 1_000


def test_seed_metrics(seed16):
    m = simulate(seed16).metrics
    assert m["naive_stall_us"] == 400
    assert m["prefetch_stall_us"] == 50
    assert m["speedup"] == 8.0
    assert m["naive_round_trips"] == 16
    assert m["prefetch_round_trips"] == 2
    assert m["positions_fetched"] == 11
    assert (m["hits"], m["misses"], m["evictions"]) == (4, 2, 4)
    # The calibrated profile puts 72% of the mass on ±3, which is exactly what is resident.
    assert m["attention_mass_covered"] == pytest.approx(0.72, abs=1e-6)


def test_seed_timeline(seed16):
    tr = simulate(seed16).trace
    batches = tr.spans_of("flash · prefetch + demand", "fetch")
    assert batches[["start", "end"]].tolist() == [(0, 25 * US), (50 * US, 75 * US)]
    # t=0: window [5, 11] issued as one batch; it lands at 25 µs with 8 and 5,6,7,9,10,11.
    res = tr.residency
    first = sorted(res["item"][res["start"] == 25 * US].tolist())
    assert first == [5, 6, 7, 8, 9, 10, 11]
    # t=26: 7 hits; t=27: 6, 9, 10 hit.
    hits = tr.instants_of("hit")
    assert [(int(t), int(p)) for t, p in zip(hits["t"], hits["ref"])] == [
        (26 * US, 7), (27 * US, 6), (27 * US, 9), (27 * US, 10)]
    misses = tr.instants_of("miss")
    assert misses[["t", "ref"]].tolist() == [(0, 8), (50 * US, 12)]
    # t=50: keep 9-11, evict 5-8, fetch only 12-15.
    ev = tr.instants_of("evict")
    assert ev["t"].tolist() == [50 * US] * 4 and sorted(ev["ref"].tolist()) == [5, 6, 7, 8]
    kept = res[np.isin(res["item"], [9, 10, 11])]
    assert (kept["start"] == 25 * US).all() and (kept["end"] > 50 * US).all()
    second = sorted(res["item"][res["start"] == 75 * US].tolist())
    assert second == [12, 13, 14, 15]
    # The naive path: 16 strictly serial round trips, 0..400 µs.
    naive = tr.spans_of("naive · serial demand fetch")
    assert len(naive) == 16 and naive["start"][0] == 0 and naive["end"][-1] == 400 * US
    assert (naive["start"][1:] == naive["end"][:-1]).all()


def _variant(sc, *sets):
    data = scenario_to_dict(sc)
    for s in sets:
        data = apply_override(data, s)
    return parse_scenario(data)


def test_window_larger_than_cache_drops_lowest_priority(seed16):
    # 4 slots, window ±3 around 8: the 4 highest-priority positions are 8, 7, 9, 6
    # (distance 0, 1, 1, 2; ties lower position first).
    sc = _variant(seed16, "cache.slots=4", "reads=[]", "sequence.queries=[8]", "sequence.query_times_us=[0]")
    res = simulate(sc).trace.residency
    assert sorted(res["item"].tolist()) == [6, 7, 8, 9]


def test_lazy_eviction_evicts_farthest_first(seed16):
    sc = _variant(seed16, "prefetch.eviction=lazy", "cache.slots=7", "reads=[]")
    r = simulate(sc)
    ev = r.trace.instants_of("evict")
    # Query 12 needs 12..15 (4 slots) with 9..11 kept: the 4 farthest from 12 go: 5, 6, 7, 8.
    assert sorted(ev["ref"].tolist()) == [5, 6, 7, 8]
    assert r.metrics["evictions"] == 4


def test_lazy_keeps_what_it_does_not_need_to_evict(seed16):
    # With 16 slots nothing needs evicting under the lazy policy.
    sc = _variant(seed16, "prefetch.eviction=lazy", "cache.slots=16")
    m = simulate(sc).metrics
    assert m["evictions"] == 0 and m["positions_fetched"] == 11


def test_causal_window_and_naive_reads(seed16):
    sc = _variant(seed16, "attention.causal=true", "reads=[]")
    r = simulate(sc)
    q = r.metrics_dict()["queries"]
    assert q[0]["window"] == [5, 8] and q[1]["window"] == [9, 12]
    # Causal naive attention reads 0..8 for query 8, then 9..12 for query 12.
    assert r.metrics["naive_round_trips"] == 13


def test_read_of_in_flight_position_waits_only_the_rest(seed16):
    sc = _variant(seed16, "reads=[{t_us=10, positions=[9]}]")
    r = simulate(sc)
    # 9 is in flight until 25 µs: the read at 10 µs waits 15 µs.
    assert r.metrics["prefetch_stall_us"] == 25 + 15 + 25


def test_demand_miss_fetches_one_round_trip(seed16):
    sc = _variant(seed16, "reads=[{t_us=30, positions=[0]}]")
    r = simulate(sc)
    assert r.metrics["prefetch_round_trips"] == 3
    demand = [s for s in r.trace.spans_of("flash · prefetch + demand") if s["start"] == 30 * US]
    assert len(demand) == 1 and demand[0]["end"] == 55 * US


def test_span_kinds_are_known(seed16):
    tr = simulate(seed16).trace
    assert set(tr.spans["kind"].tolist()) <= set(range(len(SPAN_KINDS)))
