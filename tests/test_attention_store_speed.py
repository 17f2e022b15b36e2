"""attention_store's faster engine (issue 24) changes no result: every run below gives the metrics,
trace and event count the engine gave before it was made faster (commit 977c692), recorded in
tests/golden/attention_store_engine.json; and the pieces it rests on agree with what they replace
(the run's event loop with kvviz.engine's, the parked furthest-key search with a brute force).

The golden file is a record of the engine before issue 24. Regenerate it only for a deliberate
change of the model (say which in the commit), from a tree at that change:
    PYTHONPATH=<that tree> python tests/test_attention_store_speed.py --write
"""
from __future__ import annotations

import hashlib
import heapq
import json
import random
import sys
from pathlib import Path

import pytest

from kvviz import load_scenario, parse_scenario, simulate
from kvviz.engine import EventLoop

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).resolve().parent / "golden" / "attention_store_engine.json"
SMALL = "workload.conversations=120"

# The bundled scenarios (ShareGPT cut to 120 conversations), and variants that take each branch
# of the engine: SSD priority and load-or-recompute, sync saving, no pre-loading, HBM-kept
# sessions, the waiting queue as look-ahead, each release rule, coupled truncation, exclusive
# SSD copies, tight tiers (evictions, drops), preemption, each traced policy, a drawn job.
VARIANTS = {
    "sharegpt": [SMALL],
    "sharegpt_prio": [SMALL, "store.ssd_read_priority=true", "hardware.ssd_gb=40"],
    "sharegpt_lif": [SMALL, "store.load_if_faster=true", "store.ssd_read_priority=true", "hardware.ssd_gb=40"],
    "sharegpt_excl": [SMALL, "store.ssd_inclusive=false", "hardware.dram_gb=15", "hardware.ssd_gb=40"],
    "sharegpt_sync_nopl": [SMALL, "store.save=sync", "store.preload=none", "hardware.read_buffer_gb=15"],
    "sharegpt_hbm": [SMALL, "store.tiers=hbm_dram_ssd", "hardware.hbm_free_gb=30"],
    "sharegpt_wq_closed": [SMALL, "store.lookahead=waiting_queue", "serving.arrivals=closed_loop"],
    "sharegpt_saturated": [SMALL, "store.lookahead=waiting_queue", "serving.arrivals=saturated"],
    "sharegpt_poisson": [SMALL, "serving.arrivals=conversation_poisson", "store.lookahead_horizon_s=60"],
    "sharegpt_coupled": [SMALL, "serving.truncation=coupled", "model.context_window=1024"],
    "sharegpt_preempt": [SMALL, "hardware.hbm_free_gb=8", "serving.max_batch=16", "trace_policy=belady"],
    "sharegpt_nossd_lru": [SMALL, "hardware.ssd_gb=0", "hardware.dram_gb=20", "trace_policy=lru"],
    "sharegpt_fifo_detail": [SMALL, "trace_policy=fifo", "serving.detail_job=40", "workload.arrival_rate_per_s=4"],
    "mooncake": ["hardware.ssd_gb=60", "hardware.dram_gb=40"],
}


def random_scenario(seed: int) -> dict:
    """A small random scenario (seeded: the same one every time)."""
    r = random.Random(seed)
    policies = r.sample(["recompute", "lru", "fifo", "scheduler_aware", "belady"], r.randint(1, 3))
    arrivals = r.choice(["closed_loop", "interleaved", "recorded", "saturated", "conversation_poisson"])
    dram = r.choice([0.0, 6.0, 40.0, 128.0])
    return {
        "kind": "attention_store", "policies": policies, "trace_policy": r.choice(policies),
        "workload": {"conversations": r.randint(1, 40), "seed": r.randint(0, 10_000),
                     "arrival_rate_per_s": r.choice([0.5, 5.0, 50.0]), "max_turn_tokens": r.choice([64, 512, 2048])},
        "model": {"preset": r.choice(["llama-13b", "llama-65b"])},
        "hardware": {"hbm_free_gb": r.choice([12.0, 30.0, 190.0]), "dram_gb": dram,
                     "ssd_gb": 0.0 if not dram else r.choice([0.0, 20.0, 10_000.0]),
                     "read_buffer_gb": r.choice([0.0, 1.0])},
        "serving": {"arrivals": arrivals, "max_batch": r.randint(1, 8), "compare_truncation": r.random() < 0.5},
        "store": {"tiers": r.choice(["dram_ssd", "hbm", "hbm_dram", "hbm_dram_ssd"]),
                  "lookahead": "job_list" if arrivals in ("interleaved", "recorded") and r.random() < 0.5
                  else "waiting_queue",
                  "ssd_read_priority": r.random() < 0.5, "load_if_faster": r.random() < 0.3,
                  "ssd_inclusive": r.random() < 0.7, "save": r.choice(["async", "sync"])},
    }


RANDOM = range(12)


def outcome(result) -> dict:
    """What must not change: every metric (as a digest, with two headline figures to read) and the
    trace, and the number of events run. Not the run's notes: which engine ran (the Python one
    where the compiled one is not built says so there) is no result, and both give these."""
    m = result.metrics_dict()
    m.pop("notes", None)
    metrics = json.dumps(m, sort_keys=True, default=str)
    policies = result.metrics["policies"]
    return {"metrics_sha256": hashlib.sha256(metrics.encode()).hexdigest(), "trace": result.trace.fingerprint(),
            "events": result.events,
            "hit_rate": {p: m["hit_rate"] for p, m in policies.items()},
            "mean_ttft_ms": {p: m["mean_ttft_ms"] for p, m in policies.items()}}


def run_variant(name: str):
    scenario = "attention_store_mooncake" if name == "mooncake" else "attention_store_sharegpt"
    return simulate(load_scenario(ROOT / "scenarios" / f"{scenario}.toml", VARIANTS[name]))


def run_random(seed: int):
    return simulate(parse_scenario(random_scenario(seed)))


def _golden() -> dict:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_bundled_variants_as_before(name):
    assert outcome(run_variant(name)) == _golden()["variants"][name]


@pytest.mark.parametrize("seed", RANDOM)
def test_random_small_scenarios_as_before(seed):
    assert outcome(run_random(seed)) == _golden()["random"][str(seed)]


# --- the pieces (imported in the tests: write_golden runs on the engine before them) -----------------


def _schedule_log(loop_cls, seed: int, stream: bool) -> tuple[list, int]:
    """A random cascade of events (each may schedule more, ties in time and priority) on a loop."""
    r = random.Random(seed)
    loop, log = loop_cls(), []

    def ev(name, depth):
        log.append((loop.now, name))
        for k in range(r.randint(0, 2) if depth < 4 else 0):
            loop.at(loop.now + r.choice([0, 0, 1, 5]), ev, f"{name}.{k}", depth + 1, priority=r.randint(0, 2))

    times = [r.choice([0, 3, 3, 7, 20]) for _ in range(30)]
    if stream:
        loop.stream(times, ev, [(f"s{i}", 0) for i in range(len(times))], priority=2)
    else:
        for i, t in enumerate(times):
            loop.at(t, ev, f"s{i}", 0, priority=2)
    loop.run()
    return log, loop.processed


@pytest.mark.parametrize("seed", range(20))
def test_run_loop_runs_events_as_the_engine_does(seed):
    from kvviz.serving.event_loop import Loop
    want = _schedule_log(EventLoop, seed, stream=False)
    assert _schedule_log(Loop, seed, stream=True) == want
    assert _schedule_log(Loop, seed, stream=False) == want


def test_run_loop_refuses_the_past():
    from kvviz.serving.event_loop import Loop
    for schedule in (lambda loop: loop.push(5, 0, print, ()), lambda loop: loop.stream([5], print, [()])):
        loop = Loop()
        loop.now = 10
        with pytest.raises(ValueError):
            schedule(loop)


@pytest.mark.parametrize("seed", range(10))
def test_parked_furthest_matches_brute_force(seed):
    # Random keys, validity and running sessions over time: the parked search answers what a scan
    # of every valid entry answers (the largest key above the floor whose session is not running).
    from kvviz.mechanisms.attention_store.placement.base import furthest, unpark
    r = random.Random(seed)
    n = 30
    key, valid, running = [0] * n, [False] * n, [False] * n
    heap: list = []
    parked: dict = {}
    for _ in range(400):
        c = r.randrange(n)
        op = r.random()
        if op < 0.4:  # (re)key and insert: a fresh entry; an old one goes stale
            key[c], valid[c] = r.randrange(50), True
            heapq.heappush(heap, (-key[c], c))
        elif op < 0.5:
            valid[c] = False
        elif op < 0.7:
            running[c] = True
        elif op < 0.85 and running[c]:
            running[c] = False
            unpark(heap, parked, c)
        floor = r.choice([-1, -1, r.randrange(50)])
        cands = [(-key[x], x) for x in range(n) if valid[x] and not running[x] and key[x] > floor]
        want = min(cands)[1] if cands else -1
        got = furthest(heap, lambda e: not valid[e[1]] or key[e[1]] != -e[0], floor, running, parked)
        assert got == want


def write_golden():
    """Record the outcomes of the runs above with the kvviz on the path."""
    data = {"engine_commit": "977c692",
            "variants": {name: outcome(run_variant(name)) for name in sorted(VARIANTS)},
            "random": {str(seed): outcome(run_random(seed)) for seed in RANDOM}}
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    write_golden()
