"""The replay engines: libCacheSim (kvviz[replay]) against kvviz's own kernels, every policy by
name, which engine ran, and the fallback when libcachesim is missing."""
import json
from pathlib import Path

import pytest

from kvviz.cli import main
from kvviz.errors import ScenarioError
from kvviz.replay import default_capacities, engines, miss_ratio_curve, replay
from kvviz.requests.csv_format import read_csv
from kvviz.requests.reader import read_trace

from .test_replay import GOLDEN

lcs = pytest.importorskip("libcachesim")

TRACES = Path(__file__).resolve().parents[1] / "resources" / "traces"
SAMPLE = TRACES / "zipf_20k.csv"
MOONCAKE = TRACES / "mooncake_synthetic_trace.jsonl"


@pytest.fixture
def golden(tmp_path):
    p = tmp_path / "golden.csv"
    p.write_text(GOLDEN)
    return p


@pytest.fixture
def no_libcachesim(monkeypatch):
    monkeypatch.setattr(engines, "has_libcachesim", lambda: False)


@pytest.mark.parametrize("policy", ["lru", "fifo", "belady"])
def test_engines_agree_on_the_bundled_sample(policy):
    reqs = read_csv(SAMPLE)
    for cap in default_capacities(reqs):
        a, b = replay(reqs, policy, cap, engine="libcachesim"), replay(reqs, policy, cap, engine="python")
        assert (a.engine, b.engine) == ("libcachesim", "python")
        assert a.request_miss_ratio == pytest.approx(b.request_miss_ratio, abs=5e-5)
        assert a.byte_miss_ratio == pytest.approx(b.byte_miss_ratio, abs=5e-5)


@pytest.mark.parametrize("policy", ["lru", "fifo", "belady"])
def test_engines_agree_on_mooncake_blocks(policy):
    reqs = read_trace(MOONCAKE)
    cap = reqs.footprint // 20
    a, b = replay(reqs, policy, cap, engine="libcachesim"), replay(reqs, policy, cap, engine="python")
    assert a.misses == b.misses and a.bytes_missed == b.bytes_missed


@pytest.mark.parametrize("policy,cap,misses", [("lru", 10, 8), ("fifo", 10, 7), ("belady", 10, 7), ("lru", 8, 7)])
def test_libcachesim_gives_the_hand_checked_counts(golden, policy, cap, misses):
    r = replay(read_csv(golden), policy, cap, engine="libcachesim")
    assert r.misses == misses and r.engine == "libcachesim"


def test_every_libcachesim_policy_by_name_with_a_description():
    known = engines.policies("libcachesim")
    for name in ("s3fifo", "sieve", "arc", "lru", "fifo", "belady", "lirs", "wtinylfu", "clock", "twoq", "lecar",
                 "gdsf", "lhd"):
        assert name in known and known[name] and "no special parameters" not in known[name]
    assert engines.canonical("S3-FIFO") == "s3fifo" and engines.canonical("2q") == "twoq"
    assert engines.canonical("W-TinyLFU") == "wtinylfu" and engines.canonical("lru_k") == "lruk"
    reqs = read_csv(SAMPLE)
    cap = default_capacities(reqs)[6]
    ratios = {p: replay(reqs, p, cap).request_miss_ratio for p in ("s3fifo", "sieve", "arc", "lru", "belady")}
    assert all(0 < r < 1 for r in ratios.values())
    assert min(ratios, key=ratios.get) == "belady"  # nothing beats the clairvoyant one


def test_cli_policies_and_engine_reported(golden, capsys):
    assert main(["replay", str(golden), "--policy", "s3fifo,sieve,arc,lru", "--capacity", "10", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [o["policy"] for o in out] == ["s3fifo", "sieve", "arc", "lru"]
    assert {o["engine"] for o in out} == {"libcachesim"}  # one capacity: LRU replayed, not one-passed
    assert main(["replay", "--list-policies"]) == 0
    text = capsys.readouterr().out
    assert "libCacheSim 0.3.5" in text and "s3fifo" in text and "Sieve cache algorithm" in text
    assert main(["replay", "--list-policies", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["engine"] == "libcachesim" and "sieve" in listed["policies"]


def test_hash_power_sized_from_the_objects(golden, monkeypatch):
    from kvviz.replay import libcachesim_engine as le
    assert le.hashpower(1) == 10 and le.hashpower(100_000) == 18 and le.hashpower(10**12) == 28
    seen = []
    real = lcs.LRU

    def spy(cap, **kw):
        seen.append(kw["hashpower"])
        return real(cap, **kw)
    monkeypatch.setattr(le, "_class", lambda name: spy)
    reqs = read_csv(SAMPLE)
    replay(reqs, "lru", 10**6, engine="libcachesim")
    assert seen == [le.hashpower(reqs.objects)] and reqs.objects > 1000 and seen[0] == 12


def test_fallback_engine_says_so(golden, capsys, no_libcachesim):
    assert main(["replay", str(golden), "--policy", "fifo", "--capacity", "10", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)[0]["engine"] == "python"
    assert captured.err.count("\n") == 1 and "libcachesim is not installed" in captured.err
    assert main(["replay", str(golden), "--policy", "s3fifo", "--capacity", "10"]) == 2
    err = capsys.readouterr().err
    assert "unknown policy 's3fifo' (one of: lru, fifo, belady)" in err and "kvviz[replay]" in err
    with pytest.raises(ScenarioError, match="not installed"):
        engines.resolve("libcachesim")


@pytest.mark.parametrize("args,expect", [
    (["--capacity", "0"], "capacity must be a whole number of bytes, at least 1"),
    (["--capacity", "1GB"], "more than 1000x the trace's footprint"),
    (["--capacities", "10,0"], "capacity must be a whole number of bytes, at least 1"),
    (["--capacity", "10", "--policy", "nope"], "unknown policy 'nope' (one of: arc, belady"),
    (["--capacity", "10", "--engine", "python", "--policy", "sieve"], "one of: lru, fifo, belady"),
])
def test_bad_replay_arguments_exit_2(golden, capsys, args, expect):
    assert main(["replay", str(golden), *args]) == 2
    captured = capsys.readouterr()
    assert expect in captured.err and captured.out == ""


def test_curve_streams_every_point_in_policy_order(golden):
    seen = []
    reqs = read_csv(golden)
    out = miss_ratio_curve(reqs, ["fifo", "lru", "sieve"], [8, 10], on_result=lambda i, r: seen.append(i))
    assert sorted(seen) == list(range(6))
    assert [(r.policy, r.capacity) for r in out] == [("fifo", 8), ("fifo", 10), ("lru", 8), ("lru", 10),
                                                     ("sieve", 8), ("sieve", 10)]
    assert [r.misses for r in out[:4]] == [6, 7, 7, 8]


def test_a_libcachesim_crash_at_a_tiny_capacity_is_a_message(golden, capsys):
    """libCacheSim 0.3.5 aborts S3-FIFO when 10% of the cache is under a byte and crashes LFUDA
    near the largest object; such capacities run in a child process, so kvviz survives to say so."""
    assert main(["replay", str(golden), "--policy", "s3fifo", "--capacity", "8"]) == 2
    err = capsys.readouterr().err
    assert "libCacheSim 0.3.5's s3fifo failed at capacity 8 B: Invalid cache size configuration: small_fifo=0" in err
    with pytest.raises(ScenarioError, match="lfuda failed at capacity 10 B: crashed"):
        replay(read_csv(golden), "lfuda", 10)
    assert replay(read_csv(golden), "s3fifo", 100).misses == 4  # room for all: first requests only


def test_a_libcachesim_policy_that_never_ends_is_stopped_and_named(monkeypatch):
    """BeladySize loops at a cache of about one object on the bundled sample; reading the child's
    output before waiting on it hung the replay for good (10 minutes, then killed by hand)."""
    from kvviz.replay import libcachesim_engine
    monkeypatch.setattr(libcachesim_engine, "GUARD_SECONDS", 2)
    reqs = read_csv(SAMPLE)
    import threading
    got = []

    def run():
        try:
            replay(reqs, "beladysize", 95_409)
        except ScenarioError as e:
            got.append(str(e))
    t = threading.Thread(target=run, daemon=True)  # a regression fails here in 60 s, not hangs the suite
    t.start()
    t.join(60)
    assert not t.is_alive() and len(got) == 1
    assert "beladysize did not finish in 2 s at capacity 95,409 B" in got[0]


def test_a_curve_skips_the_points_libcachesim_refuses(golden, capsys):
    assert main(["replay", str(golden), "--policy", "s3fifo,fifo", "--capacities", "8,100", "--json"]) == 0
    captured = capsys.readouterr()
    got = [(o["policy"], o["capacity"]) for o in json.loads(captured.out)]
    assert got == [("s3fifo", 100), ("fifo", 8), ("fifo", 100)]
    assert "skipped: s3fifo at 8 B: libCacheSim 0.3.5's s3fifo failed" in captured.err
    with pytest.raises(ScenarioError, match="s3fifo failed at capacity 8 B"):
        miss_ratio_curve(read_csv(golden), ["s3fifo"], [8, 100])  # no skipped list: it raises
