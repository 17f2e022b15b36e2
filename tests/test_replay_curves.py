"""Miss-ratio curves: LRU in one pass from stack distances (exact against per-capacity replays),
the other policies as independent replays through kvviz.executor, keyed by index."""
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from kvviz.errors import ScenarioError
from kvviz.executor import map_indexed
from kvviz.replay import default_capacities, miss_ratio_curve, replay
from kvviz.replay.kernels import run
from kvviz.replay.stack_distance import _later_heavier, byte_stack_distances, lru_curve, shards_hash, shards_sample
from kvviz.requests.csv_format import read_csv
from kvviz.requests.objects import Requests

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
    reqs = read_csv(SAMPLE)
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
    reqs = read_csv(SAMPLE)
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


def _zipf(n, objects, seed):
    """Zipf(0.9)-popular ids, a size per object from 1 to 100 KB (as benchmarks/bench_replay.py)."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, objects + 1) ** 0.9
    ids = rng.choice(objects, n, p=p / p.sum())
    return ids, rng.integers(1_000, 100_000, objects)[ids]


def test_shards_at_rate_one_is_the_exact_curve():
    rng = np.random.default_rng(5)
    for _ in range(30):
        n, objects = int(rng.integers(1, 400)), int(rng.integers(1, 50))
        ids = rng.integers(0, objects, n)
        sizes = rng.integers(0, 60, objects)[ids]
        sizes[ids % 5 == 0] += 300  # objects too big for some capacities, left out there
        caps = sorted({int(c) for c in rng.integers(1, 600, 7)})
        assert lru_curve(ids, sizes, caps, sample_rate=1.0) == lru_curve(ids, sizes, caps)


def test_shards_sample_is_fixed_by_the_hash_and_near_its_rate():
    ids = np.arange(200_000)
    kept = shards_sample(ids, 0.1)
    assert kept.tolist() == shards_sample(ids, 0.1).tolist()          # reproducible
    assert 0.098 < kept.mean() < 0.102                                # ~R of the objects
    assert np.all(shards_sample(ids, 0.05) <= kept)                   # a smaller rate: a subset
    assert shards_hash(np.array([0, 1]))[0] != shards_hash(np.array([0, 1]))[1]


def test_shards_estimate_is_close_to_the_exact_curve():
    # 200K requests over 20K objects at R = 0.1: about 2,000 objects sampled. Measured: mean
    # absolute error 0.019 (requests) and 0.017 (bytes) over the 12 default capacities, the worst
    # 0.058 / 0.065 at the smallest (0.1% of the footprint, a few sampled objects' worth).
    ids, sizes = _zipf(200_000, 20_000, seed=1)
    reqs = Requests(ids, sizes)
    caps = default_capacities(reqs)
    exact = miss_ratio_curve(reqs, ["lru"], caps, engine="python")
    est = miss_ratio_curve(reqs, ["lru"], caps, engine="python", sample_rate=0.1)
    assert {r.engine for r in est} == {"SHARDS R=0.1 stack distances"}
    req_err = np.abs([a.request_miss_ratio - b.request_miss_ratio for a, b in zip(est, exact)])
    byte_err = np.abs([a.byte_miss_ratio - b.byte_miss_ratio for a, b in zip(est, exact)])
    assert req_err.mean() < 0.03 and byte_err.mean() < 0.03
    assert req_err.max() < 0.09 and byte_err.max() < 0.09
    assert all(0 <= r.request_miss_ratio <= 1 and 0 <= r.byte_miss_ratio <= 1 for r in est)


@pytest.mark.parametrize("rate", ["0", "1.5", "nan", "-0.1", "ten"])
def test_cli_bad_sample_rate_exit_2(rate, capsys):
    from kvviz.cli import main
    assert main(["replay", str(SAMPLE), "--capacities", "auto", "--sample-rate", rate]) == 2
    err = capsys.readouterr()
    assert "--sample-rate" in err.err and "(0, 1]" in err.err and err.out == ""


def test_cli_json_says_the_curve_is_sampled(capsys):
    import json

    from kvviz.cli import main
    assert main(["replay", str(SAMPLE), "--capacities", "auto", "--sample-rate", "0.5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out) == 12 and {o["engine"] for o in out} == {"SHARDS R=0.5 stack distances"}


def test_a_carried_trace_replays_where_the_original_file_is_not():
    """What a worker on another machine gets: the trace's bytes, written to its own file, which
    goes with the object."""
    import gc
    import os
    import pickle
    pytest.importorskip("libcachesim")
    from kvviz.replay.libcachesim_engine import OracleTraceFile
    reqs = read_csv(SAMPLE)
    cap = reqs.footprint // 20
    with OracleTraceFile(reqs.ids, reqs.sizes, reqs.times, objects=reqs.objects) as here:
        want = here.run("s3fifo", cap)
        here.carry = True
        sent = pickle.dumps(here)
        gone = here.path
    assert not os.path.exists(gone)
    there = pickle.loads(sent)
    assert there.path != gone and there.run("s3fifo", cap) == want
    onward = pickle.loads(pickle.dumps(there))  # Dask replicates a broadcast worker to worker
    copy = there.path
    assert os.path.exists(copy)
    del there
    gc.collect()
    assert not os.path.exists(copy)
    assert onward.path != copy and onward.run("s3fifo", cap) == want


def test_a_vanished_trace_file_is_a_message_not_an_abort():
    """libCacheSim aborts the process on a missing file; that killed Dask workers in CI."""
    import os
    pytest.importorskip("libcachesim")
    from kvviz.replay.libcachesim_engine import OracleTraceFile
    reqs = read_csv(SAMPLE)
    with OracleTraceFile(reqs.ids, reqs.sizes, reqs.times, objects=reqs.objects) as t:
        os.remove(t.path)
        with pytest.raises(ScenarioError, match="trace file .* is gone"):
            t.run("s3fifo", reqs.footprint // 20)


def test_python_kernels_carry_their_requests_too(tmp_path):
    import pickle

    from kvviz.replay import _PythonTrace
    reqs = read_csv(SAMPLE)
    t = _PythonTrace(reqs, str(tmp_path))
    t.carry = True
    there = pickle.loads(pickle.dumps(t))
    onward = pickle.loads(pickle.dumps(there))  # worker to worker
    assert not (tmp_path / "requests.npy").exists()
    assert there.run("fifo", reqs.footprint // 20) == t.run("fifo", reqs.footprint // 20)
    assert onward.run("fifo", reqs.footprint // 20) == t.run("fifo", reqs.footprint // 20)


def test_a_thin_shards_sample_is_named_as_such(capsys):
    from kvviz.cli import main
    from kvviz.replay import FEW_SAMPLED_OBJECTS, sampling_note
    from kvviz.replay.stack_distance import sampled_objects
    reqs = read_csv(SAMPLE)  # 1,903 objects: any sample of it is thin
    note = sampling_note(reqs, 0.5)
    kept = int(np.count_nonzero(sampled_objects(reqs.objects, 0.5)))
    assert kept < FEW_SAMPLED_OBJECTS and f"holds {kept:,} of 1,903 objects" in note
    assert sampling_note(reqs, None) is None and sampling_note(reqs, 1.0) is None
    big = Requests(np.arange(40_000) % 20_000, np.ones(40_000))
    assert sampling_note(big, 0.5) is None  # ~10,000 objects sampled
    assert main(["replay", str(SAMPLE), "--capacities", "auto", "--sample-rate", "0.5"]) == 0
    assert "note: the SHARDS sample holds" in capsys.readouterr().err
    assert main(["replay", str(SAMPLE), "--policy", "fifo", "--capacities", "auto", "--sample-rate", "0.5"]) == 0
    assert "SHARDS" not in capsys.readouterr().err  # no LRU, no sample
