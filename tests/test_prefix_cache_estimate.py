"""The prefix cache's time estimate (kvviz/mechanisms/prefix_cache/costs.py) follows the counts a
run's cost scales with, and a served run whose load exceeds what it serves says so
(kvviz/serving/overload.py). Wall-clock accuracy is benchmarks/bench_estimate_prefix.py's."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kvviz import load_scenario, simulate
from kvviz.mechanisms.prefix_cache import EXACT_REQUESTS, _generated, _runs, costs, estimate
from kvviz.mechanisms.prefix_cache.workload import load
from kvviz.serving.overload import served_load

TIERS = Path(__file__).resolve().parents[1] / "scenarios" / "prefix_cache_tiers.toml"


def _sc(*sets):
    return load_scenario(TIERS, list(sets))


def test_estimate_counts_the_generated_lookups():
    sc = _sc("workload.requests=120")
    requests, lookups = _generated(sc.workload)
    kept = len(load(sc).ids)  # the cache drops each prompt's partial last block; the estimate counts it
    assert requests == 120 and kept <= lookups <= kept + 120


def test_estimate_grows_in_proportion_to_requests():
    # beyond EXACT_REQUESTS the expectation: lookups, requests and so every term ∝ requests
    n = EXACT_REQUESTS + 1000
    a, b = (estimate(_sc(f"workload.requests={r}")) for r in (n, 2 * n))
    assert b.seconds / a.seconds == pytest.approx(2.0, rel=1e-9)
    assert b.bytes / a.bytes == pytest.approx(2.0, rel=1e-9)


def test_expected_lookups_grow_with_the_tokens_of_a_request():
    n = EXACT_REQUESTS + 1000
    small = _generated(_sc(f"workload.requests={n}").workload)[1]
    big = _generated(_sc(f"workload.requests={n}", "workload.system_prompt_tokens=100000").workload)[1]
    # every request carries the system prompt: 98,976 more tokens (from 1,024), 6,186 more blocks each
    assert (big - small) / n == pytest.approx((100_000 - 1024) / 16, rel=1e-9)


def test_a_timed_run_walks_the_pinned_blocks_once_per_request():
    held, n, r = 400.0, 100_000, 100
    lru = costs.timed_run_s("lru", False, n, r, held) - costs.timed_run_s("lru", False, n, r, 1.0)
    assert lru == pytest.approx(r * 399 * costs.SCAN_S["ordered", False])
    heap = costs.timed_run_s("belady", False, n, r, held) - costs.timed_run_s("belady", False, n, r, 1.0)
    assert heap == pytest.approx(r * 399 * costs.SCAN_S["heap", False])


def test_held_blocks_are_bounded_by_hbm_and_the_running_batch():
    assert costs.held_blocks(381, 300_000, 256, 5000.0, 16) == 381
    assert costs.held_blocks(100_000, 300_000, 256, 5000.0, 16) == 300_000 / 16
    assert costs.held_blocks(100_000, 10**9, 4, 5000.0, 16) == 4 * 5000 / 16


def test_runs_are_counted_as_simulate_makes_them():
    # lru (recorded), lru with prefetch, and the all-Belady reference
    assert _runs(_sc()) == [("lru", False, True), ("lru", True, False), ("belady", False, False)]
    assert _runs(_sc("store.prefetch=false", 'policies=["belady", "lru"]', "trace_policy=lru")) == \
        [("belady", False, False), ("lru", False, True)]


def test_served_load_rule_both_ways():
    n = 40
    arr = np.arange(n) * 1e9  # one a second
    # kept up: each served in 0.5 s at once
    ok = served_load(arr, arr, arr + 5e8)
    assert not ok["overloaded"] and ok["arrival_rate_per_s"] == pytest.approx(n / 39)
    # one every 3 s: the queue grows by 2 s a request
    adm = np.arange(n) * 3e9
    bad = served_load(arr, adm, adm + 3e9)
    assert bad["overloaded"] and bad["completion_rate_per_s"] == pytest.approx(n / 120)


OVERLOADED = ("workload.requests=60", "store.prefetch=false", "serving.gpus=1")


def test_an_overloaded_run_says_so_with_its_rates():
    r = simulate(_sc(*OVERLOADED))
    lru = r.metrics["policies"]["lru"]
    assert lru["overloaded"] and lru["completion_rate_per_s"] < 0.9 * lru["arrival_rate_per_s"]
    note = r.metrics["overload"]
    assert note.startswith("overloaded:") and f"{lru['arrival_rate_per_s']:.3g}/s" in note
    assert f"{lru['completion_rate_per_s']:.3g}/s (lru)" in note
    assert "overloaded" in json.loads(r.to_json())["metrics"]["overload"]


def test_a_comfortably_loaded_run_does_not():
    # the same requests on 4 GPUs, arriving 10× slower
    r = simulate(_sc("workload.requests=60", "store.prefetch=false", "workload.session_rate_per_s=0.02"))
    assert "overload" not in r.metrics
    assert not any(m["overloaded"] for m in r.metrics["policies"].values())


def test_the_cli_warns_of_an_overloaded_run(capsys):
    from kvviz.cli import main
    assert main(["run", str(TIERS), *[a for s in OVERLOADED for a in ("--set", s)]]) == 0
    out, err = capsys.readouterr()
    assert "overloaded:" in out and "warning:" in err and "overloaded:" in err
