"""Miss-ratio curves: LRU in one pass from stack distances (exact against per-capacity replays),
the other policies as independent replays through kvviz.executor, keyed by index."""
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from kvviz.executor import map_indexed
from kvviz.replay import Requests, default_capacities, miss_ratio_curve, read_requests, replay
from kvviz.replay.kernels import run
from kvviz.replay.stack_distance import _later_heavier, byte_stack_distances, lru_curve

SAMPLE = Path(__file__).resolve().parents[1] / "resources" / "traces" / "zipf_20k.csv"


def test_weighted_inversions_by_brute_force():
    rng = np.random.default_rng(7)
    for _ in range(100):
        m = int(rng.integers(1, 80))
        keys, w = rng.permutation(500)[:m], rng.integers(1, 1000, m)
        expect = [sum(int(w[t]) for t in range(i) if keys[t] > keys[i]) for i in range(m)]
        assert _later_heavier(keys, w).tolist() == expect


def test_stack_distances_by_hand():
    # a:4 b:3 a:4 c:5 b:3 a:4 -> second a: 4+3; second b: 3+4+5; third a: 4+5+3
    d = byte_stack_distances(np.array([0, 1, 0, 2, 1, 0]), np.array([4, 3, 4, 5, 3, 4]))
    assert d.tolist() == [-1, -1, 7, -1, 12, 12]


@pytest.mark.parametrize("sizes_kind", ["fixed", "grow", "shrink", "oversized"])
def test_one_pass_equals_replaying_each_capacity(sizes_kind):
    rng = np.random.default_rng({"fixed": 1, "grow": 2, "shrink": 3, "oversized": 4}[sizes_kind])
    for _ in range(60):
        n, objects = int(rng.integers(1, 400)), int(rng.integers(1, 50))
        ids = rng.integers(0, objects, n)
        base = rng.integers(0, 60, objects)
        sizes = base[ids].copy()
        if sizes_kind == "grow":    # an object's size only ever grows
            sizes += np.maximum.accumulate(rng.integers(0, 3, n) * (rng.random(n) < 0.2))
        elif sizes_kind == "shrink":
            sizes = np.maximum(0, sizes - rng.integers(0, 5, n) * (rng.random(n) < 0.2))
        elif sizes_kind == "oversized":
            sizes[ids % 5 == 0] += 300  # some objects never fit the smaller capacities
        caps = sorted({int(c) for c in rng.integers(1, 600, 7)})
        assert lru_curve(ids, sizes, caps) == [run("lru", ids.tolist(), sizes.tolist(), c) for c in caps]


def test_sample_curve_matches_libcachesim_per_capacity():
    pytest.importorskip("libcachesim")
    reqs = read_requests(SAMPLE)
    caps = default_capacities(reqs)
    curve = miss_ratio_curve(reqs, ["lru"], caps, workers=1)
    assert {r.engine for r in curve} == {"stack distances"}
    for r, c in zip(curve, caps):
        one = replay(reqs, "lru", c, engine="libcachesim")
        assert r.request_miss_ratio == pytest.approx(one.request_miss_ratio, abs=5e-5)
        assert r.byte_miss_ratio == pytest.approx(one.byte_miss_ratio, abs=5e-5)
    ratios = [r.request_miss_ratio for r in curve]
    assert ratios == sorted(ratios, reverse=True) and ratios[0] > 0.9 and ratios[-1] < 0.2


def test_process_pool_gives_the_serial_curve_in_order():
    reqs = read_requests(SAMPLE)
    caps = default_capacities(reqs)[::3]
    arrived = []
    serial = miss_ratio_curve(reqs, ["fifo", "belady"], caps, engine="python", workers=1)
    pooled = miss_ratio_curve(reqs, ["fifo", "belady"], caps, engine="python", workers=2,
                              on_result=lambda i, r: arrived.append(i))
    assert pooled == serial and sorted(arrived) == list(range(len(serial)))


def test_executor_seam_takes_any_executor_and_stops_when_told():
    with ThreadPoolExecutor(2) as ex:
        assert map_indexed(lambda x: x * x, range(10), executor=ex) == [x * x for x in range(10)]
    seen = []

    def stop_after_two(i, v):
        seen.append(i)
        if len(seen) == 2:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        map_indexed(lambda x: x, range(10), n_workers=1, on_result=stop_after_two)
    assert seen == [0, 1]


def test_one_pass_can_be_turned_off():
    reqs = Requests([0, 1, 0, 2, 1], [1] * 5)
    a = miss_ratio_curve(reqs, ["lru"], [2, 3], engine="python", one_pass_lru=False)
    b = miss_ratio_curve(reqs, ["lru"], [2, 3], engine="python")
    assert [r.misses for r in a] == [r.misses for r in b] == [4, 3]
    assert {r.engine for r in a} == {"python"} and {r.engine for r in b} == {"stack distances"}
