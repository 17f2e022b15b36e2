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
import sys
from pathlib import Path

import pytest

from kvviz import load_scenario, parse_scenario, simulate
from kvviz.simulation import representable

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
