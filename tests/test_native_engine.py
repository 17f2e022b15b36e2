"""The compiled AttentionStore engine (attention_store/native: the loop, roofline, batcher, store,
SSD queue, placement policies and the workload's reuse distance) against the pure-Python reference
(kvviz/serving's event_loop.py, roofline.py, batching.py, load_or_recompute.py; attention_store's
store.py, host_load.py, ssd_queue.py, placement/, workload_figures.py): every run gives the same raw metrics (before rounding, of the same types),
the same event count, the same drawn job's details and, recorded, the same trace. The cases: every
golden case of tests/test_attention_store_speed.py (its bundled variants and random scenarios) and
more seeded random small scenarios, over the batcher's flags and over the store's rules (tight
tiers). Skipped, with the reason, where the compiled module is not built.
"""
from __future__ import annotations

import functools
import json
import math
import operator
import random

import numpy as np
import pytest

from kvviz import load_scenario, parse_scenario
from kvviz.errors import ScenarioError
from kvviz.mechanisms.attention_store import native, parts
from kvviz.mechanisms.attention_store.serving import Run
from kvviz.serving import roofline
from tests.test_attention_store_speed import RANDOM, ROOT, VARIANTS, _schedule_log, random_scenario

ENGINE = native.engine()
# every test but the note's and the choice's compares the two engines: skipped where the compiled one is not built
needs_engine = pytest.mark.skipif(ENGINE is None, reason=native.note())
POLICIES = ["recompute", "lru", "fifo", "scheduler_aware", "belady"]


def outcome(sc, prep, policy, mode, record, engine) -> dict:
    run = Run(sc, prep, policy, mode, record, engine=engine).run()
    assert run.native == (engine == "native")
    m = run.metrics()
    # equal values of the same types (1 == 1.0, but the JSON output would differ)
    typed = json.dumps({k: repr(v) for k, v in m.items()}, sort_keys=True)
    return {"metrics": m, "types": typed, "events": run.loop.processed, "detail": run.detail_info,
            "trace": run.tb.build().fingerprint() if record else None}


def assert_same(sc, record_all: bool = False):
    """Every run of the scenario (each policy, the truncation run) alike in both engines;
    `record_all`: each one recorded, not only trace_policy's."""
    prep = parts.prepare(sc)
    for name, (policy, mode, record) in parts._runs(sc).items():
        record = record or record_all
        want = outcome(sc, prep, policy, mode, record, "python")
        got = outcome(sc, prep, policy, mode, record, "native")
        assert got["metrics"] == want["metrics"], (name, {k: (v, got["metrics"][k]) for k, v in want["metrics"].items()
                                                          if got["metrics"][k] != v})
        assert got == want, name


@needs_engine
@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_golden_variants_alike(name):
    scenario = "attention_store_mooncake" if name == "mooncake" else "attention_store_sharegpt"
    assert_same(load_scenario(ROOT / "scenarios" / f"{scenario}.toml", VARIANTS[name]))


@needs_engine
@pytest.mark.parametrize("seed", RANDOM)
def test_golden_random_scenarios_alike(seed):
    assert_same(parse_scenario(random_scenario(seed)))


def more_random(seed: int) -> dict:
    """random_scenario with the flags it leaves at their defaults drawn too."""
    r = random.Random(seed)
    d = random_scenario(seed)
    d["workload"]["conversations"] = r.randint(5, 60)
    d["store"]["preload"] = r.choice(["layerwise", "none"])
    d["hardware"]["write_buffer_gb"] = r.choice([0.0, 0.05, 1.0])
    d["hardware"]["host_link_gbps"] = r.choice([0.5, 26.0])
    d["serving"]["truncation"] = r.choice(["decoupled", "coupled"])
    d["model"]["context_window"] = r.choice([1024, 2048])
    return d


@needs_engine
@pytest.mark.parametrize("seed", range(100, 124))
def test_random_small_scenarios_alike(seed):
    assert_same(parse_scenario(more_random(seed)))


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


@needs_engine
@pytest.mark.parametrize("seed", range(24))
def test_random_store_scenarios_alike(seed):
    try:
        sc = parse_scenario(store_scenario(seed))
    except ScenarioError as e:  # a draw the model refuses (e.g. a tier too small for one session)
        pytest.skip(f"seed {seed}: {e}")
    assert_same(sc, record_all=seed % 3 == 0)


# --- the pieces ---------------------------------------------------------------------------------

@needs_engine
@pytest.mark.parametrize("seed", range(20))
def test_loop_runs_events_as_the_reference(seed):
    from kvviz.engine import EventLoop
    want = _schedule_log(EventLoop, seed, stream=False)
    assert _schedule_log(ENGINE.Loop, seed, stream=True) == want
    assert _schedule_log(ENGINE.Loop, seed, stream=False) == want


@needs_engine
def test_loop_refuses_the_past_and_late_streams():
    for schedule in (lambda loop: loop.push(5, 0, print, ()), lambda loop: loop.stream([5], print, [()])):
        loop = ENGINE.Loop()
        loop.now = 10
        with pytest.raises(ValueError, match="in the past"):
            schedule(loop)
    loop = ENGINE.Loop()
    loop.push(1, 0, print, ())
    with pytest.raises(RuntimeError):
        loop.stream([2], print, [()])


@needs_engine
def test_roofline_alike():
    # Random shapes and times, both sides of the compute/memory ridge and through i*: the same
    # doubles and step counts as roofline.py's.
    r = random.Random(7)
    for _ in range(300):
        py = roofline.Roofline(r.choice([7e9, 13e9, 65e9]), r.choice([1, 4, 8]), r.choice([312.0, 989.0]),
                          r.uniform(0.2, 0.7), r.choice([1.5, 3.35]), r.uniform(0.5, 0.9),
                          r.choice([0, 160_000, 2_621_440]), r.choice([32, 80]), r.choice([4096, 8192]))
        c = ENGINE.Roofline.of(py)
        n, ctx, k = r.randint(1, 64), r.randint(0, 200_000), r.randint(-1, 5_000)
        t, h = r.randint(0, 8192), r.randint(0, 8192)
        assert c.prefill_ns(t, h) == py.prefill_ns(t, h) and c.prefill_ns(t) == py.prefill_ns(t)
        assert c.decode_step_ns(n, ctx) == py.decode_step_ns(n, ctx)
        assert c.decode_ns(n, ctx, k) == py.decode_ns(n, ctx, k)
        x = r.choice([0, 1, r.randint(1, 10**7), r.randint(1, 10**11)])
        assert c.decode_steps_to(n, ctx, x) == py.decode_steps_to(n, ctx, x)


@needs_engine
def test_float_sums_as_this_python_sums():
    # the compute-share rule divides by sum(work): left to right before Python 3.12, compensated
    # (Neumaier) from 3.12 on; values over many magnitudes, where the two differ
    r = random.Random(3)
    for _ in range(500):
        xs = [r.uniform(0, 1) * 10 ** r.randint(-3, 12) for _ in range(r.randint(1, 12))]
        assert ENGINE.sum_like_python(xs) == sum(xs)
        assert ENGINE.sum_like_python(xs, compensated=False) == functools.reduce(operator.add, xs, 0.0)
        assert ENGINE.sum_like_python(xs, compensated=True) == neumaier(xs)


def neumaier(xs: list[float]) -> float:
    """CPython 3.12's sum() of floats (Python/bltinmodule.c), transcribed."""
    f = c = 0.0
    for x in xs:
        t = f + x
        c += (f - t) + x if abs(f) >= abs(x) else (x - t) + f
        f = t
    return f + c if c and math.isfinite(c) else f


@needs_engine
def test_native_asked_where_missing(monkeypatch):
    sc = parse_scenario(random_scenario(0))
    prep = parts.prepare(sc)
    monkeypatch.setattr(native, "engine", lambda: None)
    monkeypatch.setattr(native, "note", lambda: "the compiled engine is not built")
    with pytest.raises(RuntimeError, match="not built"):
        Run(sc, prep, sc.policies[0], "decoupled", False, engine="native")
    assert not Run(sc, prep, sc.policies[0], "decoupled", False).native  # auto: the reference


def test_cli_says_once_that_the_reference_runs(monkeypatch, capsys):
    import kvviz.mechanisms as mechanisms_module
    from kvviz.cli import main
    why = "the compiled engine is not built (`make setup` builds it): the Python reference engine runs"
    monkeypatch.setattr(native, "_load", lambda: (None, why))
    monkeypatch.setattr(mechanisms_module, "_noted", set())
    monkeypatch.setenv("KVVIZ_WORKERS", "1")
    ran = []
    monkeypatch.setattr(Run, "run", lambda self, orig=Run.run: ran.append(self.native) or orig(self))
    small = ["--set", "workload.conversations=3", "--set", "serving.compare_truncation=false"]
    assert main(["run", "attention_store_sharegpt", "--json", *small]) == 0
    err = capsys.readouterr().err
    assert err.count(why) == 1 and f"note: {why}\n" in err
    assert ran and not any(ran)  # every run on the reference
    assert main(["run", "attention_store_sharegpt", "--json", *small]) == 0
    assert why not in capsys.readouterr().err  # once a process


@pytest.mark.gui
def test_app_says_once_that_the_reference_runs(window, qtbot, monkeypatch):
    import kvviz.mechanisms as mechanisms_module

    from .conftest import wait_new_result
    why = "the compiled engine is older than its source (`make native` rebuilds it): the Python reference engine runs"
    monkeypatch.setattr(native, "_load", lambda: (None, why))
    monkeypatch.setattr(mechanisms_module, "_noted", set())
    sc = load_scenario(ROOT / "scenarios" / "attention_store_sharegpt.toml",
                       ["workload.conversations=20", "serving.compare_truncation=false"])
    old = window.result
    window._run(sc)  # where every run of the window starts (edits, files, picks)
    old = wait_new_result(qtbot, window, old)
    assert window.status.text().endswith(f"; {why}") and "\n" not in window.status.text()
    window._run(load_scenario(ROOT / "scenarios" / "attention_store_sharegpt.toml",
                              ["workload.conversations=21", "serving.compare_truncation=false"]))
    wait_new_result(qtbot, window, old)
    assert why not in window.status.text()  # once


@needs_engine
@pytest.mark.parametrize("seed", range(8))
def test_distinct_between_as_the_reference(seed):
    from kvviz.mechanisms.attention_store.workload_figures import _distinct_between
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    conv = rng.integers(0, int(rng.integers(1, 60)), n).astype(np.int64)
    left = rng.integers(0, n, int(rng.integers(0, 300))).astype(np.int64)
    right = np.minimum(n - 1, left + rng.integers(0, n, len(left))).astype(np.int64)
    want = _distinct_between(conv, list(zip(left.tolist(), right.tolist()))) if len(left) else np.zeros(0)
    assert ENGINE.distinct_between(conv, left, right).tolist() == want.tolist()


def test_engine_choice():
    sc = load_scenario(ROOT / "scenarios" / "attention_store_sharegpt.toml", ["workload.conversations=5"])
    prep = parts.prepare(sc)
    assert type(Run(sc, prep, "lru", "decoupled", False, engine="python").store).__module__.endswith(".store")
    with pytest.raises(ValueError):
        Run(sc, prep, "lru", "decoupled", False, engine="fast")
    if ENGINE is None:
        with pytest.raises(RuntimeError):
            Run(sc, prep, "lru", "decoupled", False, engine="native")


@needs_engine
def test_float_floor_division_as_python():
    # host_load's k = int(buf // layer_bytes): a float floor division, which C's floor(a / b) gets
    # wrong where a / b rounds up to an integer (e.g. 1 // 0.1 is 9.0 in Python, floor(1 / 0.1) 10).
    fd = ENGINE.store_floordiv
    r = random.Random(7)
    cases = [(1.0, 0.1), (0.0, 3.0), (5e9, 1.0 / 3), (2.0 ** 40, 3.0), (1e10, 1e10), (7.0, 7.000000000000001)]
    cases += [(float(r.randrange(10 ** 11)), r.uniform(1e3, 1e9)) for _ in range(2000)]
    cases += [(r.randrange(1, 10 ** 6) * 0.1, r.randrange(1, 1000) * 0.1) for _ in range(2000)]
    for a, b in cases:
        assert fd(a, b) == a // b, (a, b)
