"""kvviz replay: golden hit/miss counts worked out by hand, and bad input."""
import json
from pathlib import Path

import pytest

from kvviz.cli import main
from kvviz.errors import ScenarioError
from kvviz.replay import next_use, parse_size, replay
from kvviz.requests.csv_format import read_csv

# Requests (id:size): a:4 b:3 a:4 c:5 b:3 a:4 d:9 a:4 c:5 -- 41 bytes in all.
GOLDEN = "time,id,size\n" + "\n".join(
    f"{t},{k},{s}" for t, (k, s) in enumerate(
        [("a", 4), ("b", 3), ("a", 4), ("c", 5), ("b", 3), ("a", 4), ("d", 9), ("a", 4), ("c", 5)])) + "\n"


@pytest.fixture
def golden(tmp_path):
    p = tmp_path / "golden.csv"
    p.write_text(GOLDEN)
    return p


# Capacity 10, by hand (cache contents after each request, oldest/least recent first):
# LRU : a- {a} b- {a,b} a+ {b,a} c- evict b {a,c} b- evict a {c,b} a- evict c {b,a}
#       d- evict b,a {d} a- evict d {a} c- {a,c}            -> 8 misses, 37 bytes missed
# FIFO: a- b- a+ c- evict a {b,c} b+ a- evict b {c,a} d- evict c,a {d} a- evict d c-
#                                                          -> 7 misses, 34 bytes missed
# Belady (next use in brackets): a-[3] b-[5] a+[6] c-[9] evict a(6 > 5) {b,c} b+[never]
#       a-[8] evict b(never) {c,a} d-[never] evict c(9), a(8) {d} a- evict d c-
#                                                          -> 7 misses, 34 bytes missed
# Capacity 8, LRU: a- b- a+ c- evict b,a {c} b- {c,b} a- evict c {b,a}
#       d- (9 > 8: not admitted) a+ c- evict b,a {c}       -> 7 misses, 33 bytes missed
CASES = [("lru", 10, 8, 37), ("fifo", 10, 7, 34), ("belady", 10, 7, 34), ("lru", 8, 7, 33)]


@pytest.mark.parametrize("policy,cap,misses,missed", CASES)
def test_golden_counts(golden, policy, cap, misses, missed):
    r = replay(read_csv(golden), policy, cap)
    assert (r.requests, r.misses, r.bytes_requested, r.bytes_missed) == (9, misses, 41, missed)
    assert r.request_miss_ratio == misses / 9 and r.byte_miss_ratio == missed / 41


def test_equal_sizes_two_slots():
    # a b a c b, room for two: LRU  a- b- a+ c- (evicts b) b-            -> 4 misses
    #                          FIFO a- b- a+ c- (evicts a, first in) b+  -> 3 misses
    #                          Belady: c- evicts a (never again) b+      -> 3 misses
    from kvviz.requests.objects import Requests
    reqs = Requests([0, 1, 0, 2, 1], [1] * 5)
    assert [replay(reqs, p, 2).misses for p in ("lru", "fifo", "belady")] == [4, 3, 3]


def test_next_use():
    assert next_use([0, 1, 0, 2, 1, 0]) == [2, 4, 5, 6, 6, 6]


def test_cli_json_one_object_per_capacity(golden, capsys):
    assert main(["replay", str(golden), "--policy", "fifo", "--capacities", "10,8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [o["capacity"] for o in out] == [10, 8]
    assert out[0]["request_miss_ratio"] == 7 / 9 and out[0]["byte_miss_ratio"] == 34 / 41


def test_cli_table(golden, capsys):
    assert main(["replay", str(golden), "--capacity", "10"]) == 0
    out = capsys.readouterr().out
    assert "request_miss_ratio" in out and "0.888889" in out


def test_footprint_and_auto_capacities(golden):
    from kvviz.replay import default_capacities, footprint
    reqs = read_csv(golden)
    assert footprint(reqs) == 4 + 3 + 5 + 9  # a b c d, each once
    caps = default_capacities(reqs)
    assert caps[-1] == 21 and caps[0] == 1 and caps == sorted(set(caps))  # 0.1% of 21 B rounds up to 1 B
    # at the footprint nothing is evicted: only first requests miss
    at_top = replay(reqs, "lru", caps[-1])
    assert at_top.misses == 4 and at_top.bytes_missed == 21


def test_cli_several_policies_one_curve(golden, capsys):
    assert main(["replay", str(golden), "--policy", "lru,fifo,belady", "--capacities", "10,8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # capacity 8 by hand: FIFO  a- b- a+ c- (evict a) b+ a- (evict b, c) d- (not admitted) a+ c- (evict a)
    #                     Belady the same victims (c- evicts a[next 5] over b[4]; a- evicts b[never], c[8])
    got = {(o["policy"], o["capacity"]): o["misses"] for o in out}
    assert got == {("lru", 10): 8, ("lru", 8): 7, ("fifo", 10): 7, ("fifo", 8): 6,
                   ("belady", 10): 7, ("belady", 8): 6} and len(out) == 6
    assert main(["replay", str(golden), "--policy", "lru", "--capacities", "auto", "--json"]) == 0
    assert [o["capacity"] for o in json.loads(capsys.readouterr().out)][-1] == 21
    assert main(["replay", str(golden), "--policy", "lru,mru", "--capacity", "10"]) == 2
    assert "unknown policy 'mru'" in capsys.readouterr().err
    assert main(["replay", str(golden), "--policy", "lru,fifo,LRU", "--capacity", "10"]) == 2  # not run twice
    assert "policy lru listed twice" in capsys.readouterr().err


def test_sizes_with_units():
    assert parse_size("64MiB") == 64 * 2**20 and parse_size("1.5GB") == 1_500_000_000 and parse_size("10") == 10
    with pytest.raises(ScenarioError):
        parse_size("ten")


BAD = {
    "missing column": ("time,id\n1,a\n", "line 1", "missing column(s) size"),
    "bad size": ("time,id,size\n1,a,4\n2,b,x\n", "line 3", "size: expected a number"),
    "negative size": ("time,id,size\n1,a,4\n2,b,-1\n", "line 3", "must be >= 0"),
    "time backwards": ("time,id,size\n1,a,4\n3,b,1\n2,c,1\n", "line 4", "time goes backwards"),
    "short row": ("time,id,size\n1,a\n", "line 2", "expected 3 fields"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_trace_exit_2_with_line(case, tmp_path, capsys):
    text, where, expect = BAD[case]
    p = tmp_path / "bad.csv"
    p.write_text(text)
    assert main(["replay", str(p), "--capacity", "10", "--json"]) == 2
    err = capsys.readouterr()
    assert f"{p}: {where}: " in err.err and expect in err.err and err.out == ""


def test_capacity_required(golden, capsys):
    assert main(["replay", str(golden)]) == 2
    assert "--capacity" in capsys.readouterr().err


def test_capacities_as_shares_of_the_footprint(capsys):
    from kvviz.cli import main
    from kvviz.replay import parse_capacities
    SAMPLE = Path(__file__).resolve().parents[1] / "resources" / "traces" / "zipf_20k.csv"
    reqs = read_csv(SAMPLE)
    top = reqs.footprint
    assert parse_capacities("1%, 10%,100%", reqs) == [round(top / 100), round(top / 10), top]
    assert parse_size("0.5%", footprint=top) == round(top / 200)
    assert main(["replay", str(SAMPLE), "--capacity", "10%", "--json"]) == 0
    by_share = json.loads(capsys.readouterr().out)
    assert main(["replay", str(SAMPLE), "--capacity", str(round(top / 10)), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == by_share
    for bad, msg in (("1e-9%", "capacity must be > 0 bytes (got '1e-9%': "), ("200000%", "more than 1000x"),
                     ("%", "expected a size like")):
        assert main(["replay", str(SAMPLE), "--capacity", bad]) == 2
        assert msg in capsys.readouterr().err
