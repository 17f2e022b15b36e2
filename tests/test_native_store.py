"""The compiled store (native/store.pxi, ssd.pxi, placement.pxi) gives what the reference store
(store.py, host_load.py, ssd_queue.py, load_rule.py, placement/) gives: every run of every golden
case of test_attention_store_speed, and of seeded random small scenarios over the store's rules,
has the same raw metrics (before rounding), the same event count and, recorded, the same trace.
Runs as far as the compiled engine goes (the rest of the run is the Python one where it is not
compiled)."""
from __future__ import annotations

import json
import random

import pytest

from kvviz import load_scenario, parse_scenario
from kvviz.errors import ScenarioError
from kvviz.mechanisms.attention_store import native
from kvviz.mechanisms.attention_store import parts as P
from kvviz.mechanisms.attention_store.serving import Run

from .test_attention_store_speed import ROOT, VARIANTS

POLICIES = ["recompute", "lru", "fifo", "scheduler_aware", "belady"]

needs_native = pytest.mark.skipif(native.engine() is None or not hasattr(native.engine(), "Store"),
                                  reason=native.note() or "the compiled store is not built")


def _one(sc, prep, policy, mode, record, engine):
    run = Run(sc, prep, policy, mode, record, engine=engine).run()
    m = run.metrics()
    # equal values of the same types (1 == 1.0, but the JSON output would differ)
    typed = json.dumps({k: repr(v) for k, v in m.items()}, sort_keys=True)
    return m, typed, run.loop.processed, (run.tb.build().fingerprint() if record else None), run.detail_info


def _same(sc, record_all=False):
    """Every part's run on both stores: (metrics, events, trace) equal."""
    prep = P.prepare(sc)
    for name, (policy, mode, record) in P._runs(sc).items():
        record = record or record_all
        want = _one(sc, prep, policy, mode, record, "python")
        got = _one(sc, prep, policy, mode, record, "native")
        assert got[2] == want[2], (name, "events")
        assert got[0] == want[0], (name, {k: (want[0][k], got[0][k]) for k in want[0] if want[0][k] != got[0][k]})
        assert got[1] == want[1], (name, "types")
        assert got[3] == want[3], (name, "trace")
        assert got[4] == want[4], (name, "detail")


@needs_native
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_golden_cases_native_store_as_reference(name):
    scenario = "attention_store_mooncake" if name == "mooncake" else "attention_store_sharegpt"
    _same(load_scenario(ROOT / "scenarios" / f"{scenario}.toml", VARIANTS[name]))


def store_scenario(seed: int) -> dict:
    """A small random scenario over the store's rules (tight tiers so that evictions, drops,
    prefetches and SSD queueing happen)."""
    r = random.Random(seed)
    policies = r.sample(POLICIES, r.randint(2, 5))
    arrivals = r.choice(["closed_loop", "interleaved", "recorded", "saturated", "conversation_poisson"])
    dram = r.choice([0.0, 11.0, 16.0, 30.0])
    job_list = arrivals in ("interleaved", "recorded", "conversation_poisson") and r.random() < 0.7
    return {
        "kind": "attention_store", "policies": policies, "trace_policy": r.choice(policies),
        "workload": {"conversations": r.randint(5, 60), "seed": r.randint(0, 10_000),
                     "arrival_rate_per_s": r.choice([0.5, 5.0, 50.0]), "max_turn_tokens": r.choice([256, 1024, 2048])},
        "model": {"preset": r.choice(["llama-13b", "llama-65b"]), "context_window": r.choice([2048, 4096])},
        "hardware": {"hbm_free_gb": r.choice([14.0, 30.0, 190.0]), "dram_gb": dram,
                     "ssd_gb": 0.0 if not dram else r.choice([0.0, 12.0, 25.0, 10_000.0]),
                     "read_buffer_gb": r.choice([0.0, 0.5, 1.0]), "ssds": r.choice([1, 2]),
                     "ssd_read_gbps": r.choice([1.0, 3.5]), "ssd_write_gbps": r.choice([0.5, 2.0])},
        "serving": {"arrivals": arrivals, "max_batch": r.randint(1, 8), "compare_truncation": r.random() < 0.5,
                    "truncation": r.choice(["decoupled", "coupled"])},
        "store": {"tiers": r.choice(["dram_ssd", "dram_ssd", "hbm", "hbm_dram", "hbm_dram_ssd"]),
                  "lookahead": "job_list" if job_list else "waiting_queue",
                  "lookahead_horizon_s": r.choice([1.0, 30.0, 3600.0]),
                  "ssd_read_priority": r.random() < 0.5, "load_if_faster": r.random() < 0.5,
                  "ssd_inclusive": r.random() < 0.6, "save": r.choice(["async", "sync"]),
                  "preload": r.choice(["layerwise", "layerwise", "none"])},
    }


@needs_native
@pytest.mark.parametrize("seed", range(24))
def test_random_store_scenarios_native_as_reference(seed):
    try:
        sc = parse_scenario(store_scenario(seed))
    except ScenarioError as e:  # a draw the model refuses (e.g. a tier too small for one session)
        pytest.skip(f"seed {seed}: {e}")
    _same(sc, record_all=seed % 3 == 0)


def test_engine_choice():
    sc = load_scenario(ROOT / "scenarios" / "attention_store_sharegpt.toml", ["workload.conversations=5"])
    prep = P.prepare(sc)
    assert type(Run(sc, prep, "lru", "decoupled", False, engine="python").store).__module__.endswith(".store")
    with pytest.raises(ValueError):
        Run(sc, prep, "lru", "decoupled", False, engine="fast")
    if native.engine() is None or not hasattr(native.engine(), "Store"):
        with pytest.raises(RuntimeError):
            Run(sc, prep, "lru", "decoupled", False, engine="native")


@needs_native
def test_float_floor_division_as_python():
    # host_load's k = int(buf // layer_bytes): a float floor division, which C's floor(a / b) gets
    # wrong where a / b rounds up to an integer (e.g. 1 // 0.1 is 9.0 in Python, floor(1 / 0.1) 10).
    fd = native.engine().store_floordiv
    r = random.Random(7)
    cases = [(1.0, 0.1), (0.0, 3.0), (5e9, 1.0 / 3), (2.0 ** 40, 3.0), (1e10, 1e10), (7.0, 7.000000000000001)]
    cases += [(float(r.randrange(10 ** 11)), r.uniform(1e3, 1e9)) for _ in range(2000)]
    cases += [(r.randrange(1, 10 ** 6) * 0.1, r.randrange(1, 1000) * 0.1) for _ in range(2000)]
    for a, b in cases:
        assert fd(a, b) == a // b, (a, b)
