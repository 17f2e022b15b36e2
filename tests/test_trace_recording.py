"""Recording a run's Trace (kvviz.trace.TraceBuilder) gives the trace it gave before recording was
made cheap (issue 24): the recorded AttentionStore run of every golden case of
test_attention_store_speed (its bundled variants and random small scenarios) and a small run of
every other mechanism's bundled scenarios, as fingerprints (Trace.fingerprint) in
tests/golden/trace_recording.json. The fast recording calls are also held to the keyword ones.

The golden file is a record of TraceBuilder before that change (commit 41a1a86). Regenerate it
only for a deliberate change of a trace (say which in the commit):
    PYTHONPATH=<that tree> python -m tests.test_trace_recording --write
"""
from __future__ import annotations

import json
import random
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

from kvviz import load_scenario, parse_scenario, simulate
from kvviz import trace as trace_module
from kvviz.simulation import representable
from kvviz.trace import (
    FACT_FIELDS,
    INLINE,
    INSTANT_KINDS,
    INSTANT_ROW_DTYPE,
    NO_FACT,
    NO_LABEL,
    SPAN_DTYPE,
    SPAN_KINDS,
    SPAN_ROW_DTYPE,
    TIERS,
    TraceBuilder,
    fact_row,
)

from .test_attention_store_speed import RANDOM, VARIANTS, random_scenario

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).resolve().parent / "golden" / "trace_recording.json"
ENGINE_GOLDEN = Path(__file__).resolve().parent / "golden" / "attention_store_engine.json"

# Every other mechanism's bundled scenarios, cut small; prefix_cache both untimed and timed.
OTHERS = {
    "engram_qwen3_32b_cxl": [], "engram_qwen3_32b_rdma": [], "ladder_seed": [], "ladder_simulated": [],
    "rope_prefetch_16": [],
    "prefix_cache_mooncake": ["workload.max_requests=200"],
    "prefix_cache_mooncake_timed": ["workload.max_requests=200", "serving.timing=true"],
    "prefix_cache_tiers": ["workload.requests=30", "serving.timing=false", "store.prefetch=false"],
    "prefix_cache_tiers_timed": ["workload.requests=30", "serving.timing=true"],
}


def recorded_attention_store(sc) -> str:
    """The fingerprint of the recorded run alone (the trace_policy part), not the whole plan."""
    from kvviz.mechanisms.attention_store.parts import prepare, run_part
    with representable():
        return run_part(sc, prepare(sc), sc.trace_policy)[1].fingerprint()


def variant_scenario(name: str):
    scenario = "attention_store_mooncake" if name == "mooncake" else "attention_store_sharegpt"
    return load_scenario(ROOT / "scenarios" / f"{scenario}.toml", VARIANTS[name])


def other_fingerprint(name: str) -> str:
    sc = load_scenario(ROOT / "scenarios" / f"{name.removesuffix('_timed')}.toml", OTHERS[name])
    return simulate(sc).trace.fingerprint()


def _golden() -> dict:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_attention_store_variants_record_as_before(name):
    assert recorded_attention_store(variant_scenario(name)) == _golden()["attention_store"][name]


@pytest.mark.parametrize("seed", RANDOM)
def test_attention_store_random_record_as_before(seed):
    sc = parse_scenario(random_scenario(seed))
    assert recorded_attention_store(sc) == _golden()["attention_store_random"][str(seed)]


@pytest.mark.parametrize("name", sorted(OTHERS))
def test_other_mechanisms_record_as_before(name):
    assert other_fingerprint(name) == _golden()["others"][name]


def test_golden_agrees_with_the_engine_golden():
    # the recorded part alone draws what the whole simulate() drew (no run needed to check)
    mine, engine = _golden(), json.loads(ENGINE_GOLDEN.read_text(encoding="utf-8"))
    assert mine["attention_store"] == {k: v["trace"] for k, v in engine["variants"].items()}
    assert mine["attention_store_random"] == {k: v["trace"] for k, v in engine["random"].items()}


def write_golden():
    data = {"builder_commit": "41a1a86",
            "attention_store": {n: recorded_attention_store(variant_scenario(n)) for n in sorted(VARIANTS)},
            "attention_store_random": {str(s): recorded_attention_store(parse_scenario(random_scenario(s)))
                                       for s in RANDOM},
            "others": {n: other_fingerprint(n) for n in sorted(OTHERS)}}
    GOLDEN.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    write_golden()


# --- the builder itself: positional and keyword calls, against a plain-Python oracle ------------------


def random_events(seed: int) -> dict:
    """Spans, instants and counter rows with ties in time, repeated labels and facts (some with
    nothing known), and a prebuilt block: what the two ways of recording must agree on."""
    r = random.Random(seed)
    pool = [{}, {"flow": -1}] + [{k: r.choice([-1, 0, 3, 7, 1 << 30]) for k in r.sample(FACT_FIELDS, r.randint(1, 4))}
                                 for _ in range(6)]
    for f in pool:
        for k in ("src", "dst"):
            if k in f:
                f[k] = r.randrange(len(TIERS))
    def when():
        return r.choice([0, 5, 5, 9, r.randrange(100)])
    spans = []
    for _ in range(r.randint(0, 60)):
        s = when()
        spans.append((r.randrange(3), s, s + r.choice([0, 1, 30]), r.randrange(len(SPAN_KINDS)),
                      r.choice(["", "a", "b", "load 3"]), r.randrange(-1, 5), r.choice(pool)))
    instants = [(r.randrange(3), when(), r.randrange(len(INSTANT_KINDS)), r.randrange(-1, 5), r.choice(pool))
                for _ in range(r.randint(0, 40))]
    rows = [(when(), tuple(r.choice([0, 1, 2.0]) for _ in range(3))) for _ in range(r.randint(0, 20))]
    return {"spans": spans, "instants": instants, "rows": sorted(rows, key=lambda x: x[0]),
            "block": [(2, when(), 40, r.randrange(len(SPAN_KINDS))) for _ in range(r.randint(0, 5))]}


def record(ev: dict, positional: bool):
    tb = TraceBuilder()
    for name in ("a", "b", "c"):
        tb.lane(name, "g")
    if ev["block"]:  # a vectorised block with facts made as columns (engram's and rope's way)
        block = np.zeros(len(ev["block"]), dtype=SPAN_DTYPE)
        block["lane"], block["start"], block["end"], block["kind"] = np.array(ev["block"]).T
        block["label"], block["ref"] = NO_LABEL, -1
        block["fact"] = tb.fact_block(len(block), job=np.arange(len(block)) % 2, src="SSD")
        tb.add_block("spans", block)
    for i, (lane, s, e, kind, label, ref, facts) in enumerate(ev["spans"]):
        if not positional:
            tb.span(lane, s, e, SPAN_KINDS[kind], label, ref, **facts)
            continue
        lab = tb.label(label) if label else NO_LABEL
        if not facts:
            tb.add_span(lane, s, e, kind, lab, ref, NO_FACT)
        elif i % 2:
            tb.add_span_facts(lane, s, e, kind, lab, ref, *fact_row(**facts))
        else:
            tb.add_span(lane, s, e, kind, lab, ref, tb.fact_id(*fact_row(**facts)))
    for i, (lane, t, kind, ref, facts) in enumerate(ev["instants"]):
        if not positional:
            tb.instant(lane, t, INSTANT_KINDS[kind], ref, **facts)
        elif not facts:
            tb.add_instant(lane, t, kind, ref, NO_FACT)
        elif i % 2:
            tb.add_instant_facts(lane, t, kind, ref, *fact_row(**facts))
        else:
            tb.add_instant(lane, t, kind, ref, tb.fact_id(*fact_row(**facts)))
    names, units = ("x", "y", "z"), ("B", "jobs", "")
    series, last = tb.counter_series(names, units) if positional else None, (None,) * 3
    for t, values in ev["rows"]:
        if positional:
            tb.counter_row(series, t, values)
            continue
        for i, v in enumerate(values):
            if v != last[i]:
                tb.counter(names[i], t, v, units[i])
        last = values
    return tb.build()


def oracle(ev: dict) -> tuple[list, tuple, list]:
    """Spans (labels and facts as canonical ids), the labels and the fact rows, by the rules of
    Trace in plain Python: stable time order; labels and equal facts numbered by first use."""
    block = [(lane, s, e, kind, "", -1, {"job": i % 2, "src": "SSD"}) for i, (lane, s, e, kind) in enumerate(ev["block"])]
    spans = sorted(ev["spans"] + block, key=lambda x: x[1])
    instants = sorted(ev["instants"], key=lambda x: x[1])
    labels = tuple(dict.fromkeys(x[4] for x in spans if x[4]))
    facts: dict[tuple, int] = {}
    def fid(f):
        return facts.setdefault(fact_row(**f), len(facts) + 1) if f else NO_FACT
    out = [(lane, s, e, kind, labels.index(lab) if lab else NO_LABEL, ref, fid(f)) for lane, s, e, kind, lab, ref, f in spans]
    inst = [(lane, t, kind, ref, fid(f)) for lane, t, kind, ref, f in instants]
    return out + inst, labels, [fact_row()] + list(facts)


@pytest.mark.parametrize("seed", range(40))
def test_positional_and_keyword_calls_build_the_oracles_trace(seed):
    ev = random_events(seed)
    fast, slow = record(ev, positional=True), record(ev, positional=False)
    assert fast.fingerprint() == slow.fingerprint()
    rows, labels, facts = oracle(ev)
    assert fast.spans.tolist() + fast.instants.tolist() == rows
    assert fast.labels == labels and fast.facts.tolist() == facts


def test_equal_facts_found_when_their_hashes_collide(monkeypatch):
    # a hash of the last column only: rows that differ elsewhere collide; the fallback sorts rows
    want = [record(random_events(seed), True).fingerprint() for seed in range(10)]
    monkeypatch.setattr(trace_module, "_HASH_MUL", np.uint64(0))
    assert [record(random_events(seed), True).fingerprint() for seed in range(10)] == want


def test_bad_rows_refused():
    tb = TraceBuilder()
    tb.lane("a", "g")
    tb.add_span(0, 10, 5, 0, NO_LABEL, -1, NO_FACT)
    with pytest.raises(ValueError, match="ends before it starts"):
        tb.build()
    with pytest.raises(struct.error):  # a float where an int belongs: refused, not truncated
        TraceBuilder().add_span(0, 1.5, 2, 0, NO_LABEL, -1, NO_FACT)


def test_packed_rows_handed_over_record_as_calls_do():
    # a compiled recorder's way: the same rows packed by numpy, handed over between calls
    ev = random_events(3)
    want = record(ev, positional=True)
    tb = TraceBuilder()
    for name in ("a", "b", "c"):
        tb.lane(name, "g")
    half = len(ev["spans"]) // 2
    rows = np.zeros(len(ev["spans"]), dtype=SPAN_ROW_DTYPE)
    for i, (lane, s, e, kind, label, ref, facts) in enumerate(ev["spans"]):
        rows[i] = (lane, s, e, kind, tb.label(label) if label else NO_LABEL, ref,
                   INLINE if facts else NO_FACT, *(fact_row(**facts) if facts else (0,) * len(FACT_FIELDS)))
    tb.add_rows("spans", rows[:half].tobytes())
    if ev["block"]:
        block = np.zeros(len(ev["block"]), dtype=SPAN_DTYPE)
        block["lane"], block["start"], block["end"], block["kind"] = np.array(ev["block"]).T
        block["label"], block["ref"] = NO_LABEL, -1
        block["fact"] = tb.fact_block(len(block), job=np.arange(len(block)) % 2, src="SSD")
        tb.add_block("spans", block)
    tb.add_rows("spans", memoryview(rows[half:].tobytes()))
    inst = np.zeros(len(ev["instants"]), dtype=INSTANT_ROW_DTYPE)
    for i, (lane, t, kind, ref, facts) in enumerate(ev["instants"]):
        inst[i] = (lane, t, kind, ref, INLINE if facts else NO_FACT,
                   *(fact_row(**facts) if facts else (0,) * len(FACT_FIELDS)))
    tb.add_rows("instants", inst.tobytes())
    series = tb.counter_series(("x", "y", "z"), ("B", "jobs", ""))
    counters = np.array([(t, v) for t, v in ev["rows"]], dtype=[("t", "i8"), ("v", "f8", 3)])
    tb.counter_rows(series, counters.tobytes())
    assert tb.build().fingerprint() == want.fingerprint()
    with pytest.raises(ValueError, match="whole number"):
        tb.add_rows("spans", b"\0" * (SPAN_ROW_DTYPE.itemsize + 1))
