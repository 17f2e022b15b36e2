"""Properties over random valid rope_window scenarios (hypothesis)."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz import parse_scenario, simulate


@st.composite
def scenarios(draw):
    length = draw(st.integers(1, 64))
    nq = draw(st.integers(1, 6))
    queries = draw(st.lists(st.integers(0, length - 1), min_size=nq, max_size=nq))
    gaps = draw(st.lists(st.integers(0, 80), min_size=nq, max_size=nq))
    times = list(np.cumsum(gaps).astype(float))
    reads = []
    for _ in range(draw(st.integers(0, 4))):
        reads.append({"t_us": float(draw(st.integers(0, 300))),
                      "positions": draw(st.lists(st.integers(0, length - 1), min_size=1, max_size=5))})
    return parse_scenario({
        "kind": "rope_window", "name": "random",
        "sequence": {"length": length, "queries": queries, "query_times_us": times},
        "cache": {"slots": draw(st.integers(1, 20))},
        "prefetch": {"window": draw(st.integers(0, 8)),
                     "eviction": draw(st.sampled_from(["outside_window", "lazy"]))},
        "storage": {"latency_us": float(draw(st.integers(1, 40)))},
        "attention": {"causal": draw(st.booleans()),
                      "profile": draw(st.sampled_from(["exponential", "uniform"]))},
        "reads": reads,
    })


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_invariants(sc):
    r = simulate(sc)
    tr, m = r.trace, r.metrics
    lat = int(sc.storage.latency_us * 1000)
    # Occupancy never exceeds the slots, and a slot never holds two items at once.
    used = tr.counter("slots in use")["value"]
    assert used.max(initial=0) <= sc.cache.slots
    res = tr.residency
    for slot in np.unique(res["slot"]):
        rows = np.sort(res[res["slot"] == slot], order="start")
        assert (rows["start"][1:] >= rows["end"][:-1]).all()
    assert ((res["slot"] >= 0) & (res["slot"] < sc.cache.slots)).all()
    # Every fetch lands exactly one latency after it is issued.
    fetches = tr.spans[tr.spans["kind"] == 1]
    assert ((fetches["end"] - fetches["start"]) == lat).all()
    # Reads are all accounted for.
    n_reads = len(sc.sequence.queries) + sum(len(x.positions) for x in sc.reads)
    assert m["hits"] + m["misses"] == m["reads"] == n_reads
    assert len(tr.instants_of("hit")) == m["hits"]
    assert 0.0 <= m["attention_mass_covered"] <= 1.0 + 1e-9
    # Same input, identical trace.
    assert simulate(sc).trace.fingerprint() == tr.fingerprint()
