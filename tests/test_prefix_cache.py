"""The prefix_cache mechanism's untimed replay (issue 21): a hand-written oracle of the single-tier
LRU semantics, hand-computed small cases, and properties over random chained-prefix traces."""
import subprocess
import sys
from collections import OrderedDict

import numpy as np
import pytest

from kvviz import ScenarioError, load_scenario, simulate
from kvviz.mechanisms import mechanisms
from kvviz.mechanisms.prefix_cache.engine import ceiling, prepare, replay
from kvviz.mechanisms.prefix_cache.workload import Blocks
from kvviz.requests import prompts

from .conftest import ROOT

MOONCAKE = ROOT / "resources" / "traces" / "mooncake_synthetic_trace.jsonl"
ALL = {"lru", "leaf_lru", "fifo", "belady"}


def blocks_of(requests: list[list[int]]) -> Blocks:
    counts = np.array([len(r) for r in requests], dtype=np.int64)
    offsets = np.r_[0, np.cumsum(counts)].astype(np.int64)
    flat = np.array([b for r in requests for b in r], dtype=np.int64)
    return Blocks(flat, offsets, counts.copy(), np.arange(len(requests), dtype=np.float64), 1, "test")


def run(requests, caps, evictions, move=False, through=False, admission="always", min_reuse=1, log=None, pin=True):
    b = requests if isinstance(requests, Blocks) else blocks_of(requests)
    prep = prepare(b, ALL, admission)
    return replay(prep, caps, evictions, move, through, admission, min_reuse, log=log, pin=pin)


def oracle_lru(requests, capacity):
    """`kvviz replay --prefix` as issue 21 states it: hit = longest resident prefix; then every
    block in order is touched if resident or inserted if not, evicting the least recently used."""
    cache, hits = OrderedDict(), []
    for ids in requests:
        h = 0
        while h < len(ids) and ids[h] in cache:
            h += 1
        hits.append(h)
        for b in ids:
            if b in cache:
                cache.move_to_end(b)
            else:
                if len(cache) >= capacity:
                    cache.popitem(last=False)
                cache[b] = None
    return hits


def random_requests(seed, n=120, pool=6, longest=12, alphabet=3):
    """Requests whose ids are chained like prefix hashes: a prompt's id names its whole prefix.
    Prompts are prefixes of a few shared token streams (branching where streams differ)."""
    rng = np.random.default_rng(seed)
    table: dict = {}
    streams = [rng.integers(0, alphabet, size=longest) for _ in range(pool)]
    out = []
    for _ in range(n):
        s = streams[rng.integers(pool)]
        parent, ids = -1, []
        for tok in s[:rng.integers(1, longest + 1)].tolist():
            parent = table.setdefault((parent, tok), len(table))
            ids.append(parent)
        out.append(ids)
    return out


# --- the oracle ----------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(8))
def test_single_tier_lru_equals_the_oracle_on_random_traces(seed):
    reqs = random_requests(seed)
    for cap in (12, 20, 40):  # at least the longest request: no pin ever binds
        assert run(reqs, [cap], ["lru"]).hits.tolist() == oracle_lru(reqs, cap)


def test_single_tier_lru_equals_the_oracle_on_the_bundled_trace():
    got = prompts.read(MOONCAKE)
    reqs = [got.hash_ids(i).tolist() for i in range(len(got))]
    b = Blocks(got.hashes, got.hash_offsets, got.input_tokens, got.times_s, 512, "mooncake")
    for cap in (400, 3000):  # the longest request has 374 ids
        assert run(b, [cap], ["lru"]).hits.tolist() == oracle_lru(reqs, cap)


def test_lru_at_infinite_capacity_is_the_ceiling():
    reqs = random_requests(3)
    b = blocks_of(reqs)
    prep = prepare(b, ALL, "always")
    out = replay(prep, [10 ** 9], ["lru"], False, False, "always")
    hb, ht, hr = ceiling(prep)
    assert (sum(out.hit_blocks), sum(out.hit_tokens), int((out.hits > 0).sum())) == (hb, ht, hr)
    assert hb == sum(oracle_lru(reqs, 10 ** 9)) > 0


# --- hand-computed cases ----------------------------------------------------------------------

def test_a_request_longer_than_every_tier_completes():
    a = list(range(10))
    out = run([a, a], [2, 3], ["lru", "lru"])
    # first: a0, a1 stay in HBM (pinned), a2.. pass down to DRAM, which keeps the last three;
    # second: a0, a1 hit in HBM, a2 is nowhere: the chain stops
    assert out.hits.tolist() == [0, 2] and out.hit_blocks == [2, 0]
    assert out.peak == [2, 3]


def test_leaf_lru_keeps_the_prefix_lru_evicts():
    reqs = [[0, 1, 2], [7], [0, 1, 2]]
    assert run(reqs, [3], ["lru"]).hits.tolist() == [0, 0, 0]       # LRU evicts the root, 0
    assert run(reqs, [3], ["leaf_lru"]).hits.tolist() == [0, 0, 2]  # only 2 is a leaf


def test_belady_evicts_the_block_used_furthest_ahead_the_entering_one_included():
    reqs = [[0], [1], [2], [0], [1]]
    assert run(reqs, [2], ["lru"]).hits.tolist() == [0, 0, 0, 0, 0]
    assert run(reqs, [2], ["belady"]).hits.tolist() == [0, 0, 0, 1, 1]  # 2, never used again, is left out
    reqs = [[0], [1], [2], [2], [1]]
    assert run(reqs, [2], ["belady"]).hits.tolist() == [0, 0, 0, 1, 1]  # 2 comes in, 0 (never again) goes


def test_belady_ignores_pins_the_others_hold_them():
    # one request of three blocks through two slots: pinned LRU keeps 0, 1 (2 is not kept);
    # unpinned, 2 evicts 0; belady leaves 2 out (used furthest: never), pins or not
    reqs = [[0, 1, 2], [0, 1]]
    assert run(reqs, [2], ["lru"]).hits.tolist() == [0, 2]
    assert run(reqs, [2], ["lru"], pin=False).hits.tolist() == [0, 0]
    assert run(reqs, [2], ["belady"]).hits.tolist() == run(reqs, [2], ["belady"], pin=False).hits.tolist() == [0, 2]
    # not hash-chained (2 comes back without 0, 1 before it): belady takes 0, held by the request
    reqs = [[0, 1, 2], [2], [1]]
    log = []
    assert run(reqs, [2], ["belady"], log=log).hits.tolist() == [0, 1, 1]
    assert log == [(0, 2, 0, 0)]  # (request, position, tier, block)
    assert run(reqs, [2], ["lru"]).hits.tolist() == [0, 0, 1]  # every block held: 2 is not kept


def test_write_back_demotes_and_the_hit_comes_from_below():
    reqs = [[0], [1], [0]]
    out = run(reqs, [1, 1], ["lru", "lru"])
    assert out.hits.tolist() == [0, 0, 1] and out.hit_blocks == [0, 1]
    assert out.demoted == [0, 2]  # 0 went down when 1 came, then 1 when 0 came back up
    through = run(reqs, [1, 1], ["lru", "lru"], through=True)
    assert through.hits.tolist() == [0, 0, 0]  # written through, 1 displaced 0 below as well


def test_move_leaves_the_lower_tier_copy_leaves():
    reqs = [[0], [1], [0], [1]]
    copy = run(reqs, [1, 2], ["lru", "lru"])
    move = run(reqs, [1, 2], ["lru", "lru"], move=True)
    assert copy.hits.tolist() == move.hits.tolist() == [0, 0, 1, 1]
    # copy: promoting 0 keeps its DRAM copy, so evicting it from HBM again writes nothing
    assert copy.written == [4, 2] and move.written == [4, 3]


def test_the_timeline_marks_each_request_on_the_tier_its_hit_ended_in():
    from kvviz.mechanisms.prefix_cache import build_trace
    # HBM holds 1 block, DRAM 2 (write-back): [0] miss; [1] miss (0 goes down); [0] hits in DRAM
    # (it comes up, 1 goes down); [0, 1] hits 0 in HBM and 1 in DRAM: its hit ends in DRAM
    reqs = [[0], [1], [0], [0, 1], [0]]
    b = blocks_of(reqs)
    out = replay(prepare(b, ALL, "always"), [1, 2], ["lru", "lru"], False, False, "always", record=True)
    assert out.hits.tolist() == [0, 0, 1, 2, 1] and out.hit_tier.tolist() == [-1, -1, 1, 1, 0]
    tr = build_trace(b, out, ["hbm", "dram"], block_bytes=100)
    assert tr.lanes["name"].tolist() == ["hbm · hits ending here", "dram · hits ending here",
                                         "no hit · computed in full"]
    by_ref = tr.instants[np.argsort(tr.instants["ref"])]
    assert by_ref["lane"].tolist() == [2, 2, 1, 1, 0]
    assert by_ref["t"].tolist() == [0, 1_000_000_000, 2_000_000_000, 3_000_000_000, 4_000_000_000]  # arrivals
    assert [tr.facts_of(m) for m in by_ref] == [{"job": 0}, {"job": 1}, {"job": 2, "items": 1, "bytes": 100},
                                                {"job": 3, "items": 2, "bytes": 200},
                                                {"job": 4, "items": 1, "bytes": 100}]
    assert run(reqs, [1, 2], ["lru", "lru"]).hit_tier is None  # recorded only for the shown run


def test_admission_rules():
    reqs = [[0, 1], [0, 1], [0, 1], [5]]
    assert run(reqs, [4], ["lru"], admission="second_hit").hits.tolist() == [0, 0, 2, 0]
    # min_reuse 2: a block enters only if asked for at least twice more after this request
    assert run(reqs, [4], ["lru"], admission="min_reuse", min_reuse=2).hits.tolist() == [0, 2, 2, 0]
    assert run(reqs, [4], ["lru"], admission="min_reuse", min_reuse=3).hits.tolist() == [0, 0, 0, 0]


# --- properties over random traces ----------------------------------------------------------

SEMANTICS = [dict(), dict(through=True), dict(move=True), dict(admission="second_hit")]


@pytest.mark.parametrize("seed", range(6))
def test_per_tier_hits_sum_to_the_total_and_pins_hold(seed):
    reqs = random_requests(seed, longest=16)
    for sem in SEMANTICS:
        for ev in ("lru", "leaf_lru", "fifo"):  # belady ignores pins (the reference)
            log = []
            out = run(reqs, [5, 9, 20], [ev] * 3, log=log, **sem)
            assert sum(out.hit_blocks) == out.hits.sum()
            assert sum(out.hit_requests) >= int((out.hits > 0).sum())
            b = blocks_of(reqs)
            for r, j, k, v in log:  # nothing the request has reached is evicted from HBM
                if k == 0:
                    assert v not in b.ids[b.offsets[r]:j + 1].tolist(), (sem, ev, r, j, v)
            assert any(k == 0 for _, _, k, _ in log)


@pytest.mark.parametrize("seed", range(10))
def test_a_larger_lower_tier_never_lowers_the_hit_rate_with_inclusive_lru(seed):
    reqs = random_requests(seed, n=150, pool=10, longest=14)
    for lower in (1, 2):
        rates = []
        for extra in range(0, 40, 3):
            caps = [4, 8, 12]
            caps[lower] += extra
            rates.append(run(reqs, caps, ["lru"] * 3, through=True).hits.sum())
        assert rates == sorted(rates), (lower, rates)
        assert rates[-1] > rates[0]  # the sweep moves something


@pytest.mark.parametrize("seed", range(6))
def test_belady_at_least_lru_on_random_traces(seed):
    reqs = random_requests(seed, n=150, longest=10)
    for cap in (10, 15, 25):
        assert run(reqs, [cap], ["belady"]).hits.sum() >= run(reqs, [cap], ["lru"]).hits.sum()


@pytest.mark.slow  # the bundled run (shared with the other bundled-run tests) and four more
def test_belady_at_least_lru_on_the_bundled_trace(bundled):
    m = bundled["prefix_cache_mooncake"].metrics
    assert m["policies"]["belady"]["token_hit_rate"] >= m["policies"]["lru"]["token_hit_rate"]
    assert m["policies"]["lru"]["belady_gap"] > 0 and m["policies"]["belady"]["belady_gap"] == 0
    assert m["hit_rate_ceiling"] >= m["policies"]["belady"]["token_hit_rate"]
    got = prompts.read(MOONCAKE)
    b = Blocks(got.hashes, got.hash_offsets, got.input_tokens, got.times_s, 512, "mooncake")
    for cap in (500, 4000):  # one tier, as `kvviz replay --prefix` has it
        assert run(b, [cap], ["belady"]).hits.sum() >= run(b, [cap], ["lru"]).hits.sum()


# --- the scenario -------------------------------------------------------------------------------

def scenario(tmp_path, body: str, sets=()):
    p = tmp_path / "s.toml"
    p.write_text('kind = "prefix_cache"\n' + body, encoding="utf-8")
    return load_scenario(p, list(sets))


def test_generated_workload_is_seeded_and_its_knobs_act(tmp_path):
    small = "[workload]\nrequests = 150\ndocuments = 20\n"
    a = simulate(scenario(tmp_path, small)).metrics
    b = simulate(scenario(tmp_path, small)).metrics
    assert a == b and a["workload"]["requests"] == 150
    assert 0 < a["policies"]["lru"]["token_hit_rate"] <= a["hit_rate_ceiling"] < 1
    nothing_shared = small + ("system_prompt_tokens = 0\ndocument_share = 0.0\nmulti_turn_share = 0.0\n"
                              "agent_share = 0.0\n")
    assert simulate(scenario(tmp_path, nothing_shared)).metrics["hit_rate_ceiling"] == 0.0
    agents = small + "agent_share = 1.0\n"
    assert simulate(scenario(tmp_path, agents)).metrics["hit_rate_ceiling"] > a["hit_rate_ceiling"]


def test_result_carries_tiers_and_occupancy_counters(tmp_path):
    r = simulate(scenario(tmp_path, "policies = [\"lru\", \"fifo\"]\n[workload]\nrequests = 100\n"))
    m = r.metrics
    for p in ("lru", "fifo"):
        tiers = m["policies"][p]["tiers"]
        assert list(tiers) == ["hbm", "dram", "ssd"]
        assert sum(t["hit_tokens"] for t in tiers.values()) == m["policies"][p]["prefill_tokens_saved"]
    assert r.trace.counter_names == ("hbm occupancy", "dram occupancy", "ssd occupancy")
    assert len(r.trace.counter("hbm occupancy")) == 100 and len(r.trace.instants) == 100


@pytest.mark.parametrize("sets, field", [
    (["store.prefetch=true"], "store.prefetch"),
    (["serving.timing=true", "store.prefetch=true", "store.prefetch_tier=ssd"], "store.prefetch_tier"),
    (['policies=["lru", "mru"]'], "policies[1]"),
    (['tiers=[{name = "dram"}, {name = "hbm"}]'], "tiers[1].name"),
    (['tiers=[{name = "hbm", capacity_gb = 1, capacity_blocks = 3}]'], "tiers[0].capacity_blocks"),
    (['trace_policy="fifo"'], "trace_policy"),
])
def test_bad_fields_are_named(tmp_path, sets, field):
    with pytest.raises(ScenarioError) as e:
        scenario(tmp_path, "", sets)
    assert field in str(e.value)


def test_bad_sizes_found_at_run_time_are_named(tmp_path):
    body = f'[workload]\ntrace_file = "{MOONCAKE}"\n'
    with pytest.raises(ScenarioError) as e:
        simulate(scenario(tmp_path, body, ["workload.block_tokens=768"]))
    assert e.value.field == "workload.block_tokens"
    with pytest.raises(ScenarioError) as e:
        simulate(scenario(tmp_path, body, ['tiers=[{name = "hbm", capacity_gb = 0.1}]']))
    assert e.value.field == "tiers[0].capacity_gb"


def test_cli_exits_2_naming_the_field(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text('kind = "prefix_cache"\n[store]\nprefetch = true\n', encoding="utf-8")
    p = subprocess.run([sys.executable, "-m", "kvviz", "run", str(f)], capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    assert p.returncode == 2 and "store.prefetch" in p.stderr and "serving.timing" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_coarser_blocks_group_the_traces_own(tmp_path):
    body = f'[workload]\ntrace_file = "{MOONCAKE}"\nmax_requests = 200\n'
    own = simulate(scenario(tmp_path, body)).metrics["workload"]
    two = simulate(scenario(tmp_path, body, ["workload.block_tokens=1024"])).metrics["workload"]
    assert own["block_tokens"] == 512 and two["block_tokens"] == 1024 and own["requests"] == 200
    got = prompts.read(MOONCAKE)
    assert own["block_lookups"] == int(np.minimum(got.input_tokens[:200] // 512, got.hash_counts[:200]).sum())
    assert two["block_lookups"] == int(np.minimum(got.input_tokens[:200] // 1024, got.hash_counts[:200] // 2).sum())


# --- the size guard with a trace ----------------------------------------------------------------

def _trace_scenario(tmp_path, trace, sets=()):
    return scenario(tmp_path, f'[workload]\ntrace_file = "{trace}"\n', sets)


def test_a_trace_is_sized_from_its_file_on_the_safe_side(tmp_path):
    from kvviz.mechanisms.prefix_cache.sizing import trace_lookups
    ids = len(prompts.read(MOONCAKE).hashes)
    guess = trace_lookups(MOONCAKE)
    assert ids <= guess <= 3 * ids  # above the truth, not absurdly so
    assert trace_lookups(MOONCAKE, max_requests=10) < guess / 50
    est = mechanisms()["prefix_cache"].estimate(_trace_scenario(tmp_path, MOONCAKE))
    assert est.bytes >= ids * 200 and est.field == "workload.max_requests"
    # one line longer than the head the estimate reads: the floor of two bytes per id bounds it
    giant = tmp_path / "giant.jsonl"
    giant.write_text('{"timestamp": 0, "input_length": 9, "output_length": 1, "hash_ids": ['
                     + ", ".join(map(str, range(200_000))) + "]}\n", encoding="utf-8")
    assert trace_lookups(giant) == giant.stat().st_size / 2 >= 200_000


def test_a_huge_trace_is_refused_before_it_is_read(tmp_path, monkeypatch):
    from kvviz.simulation import check_run_size
    huge = tmp_path / "huge.jsonl"
    head = MOONCAKE.read_bytes()[:300_000]
    with open(huge, "wb") as f:
        f.write(head[:head.rfind(b"\n") + 1])
        f.truncate(3 * 2 ** 30)  # 3 GiB on paper (sparse): never read, only its size looked at
    sc = _trace_scenario(tmp_path, huge)

    def no_reading(*_a, **_k):
        raise AssertionError("the trace was read")
    monkeypatch.setattr(prompts, "read", no_reading)
    with pytest.raises(ScenarioError) as e:
        check_run_size(sc)
    assert "too large to simulate" in e.value.message and e.value.field == "workload.max_requests"
    with pytest.raises(ScenarioError):
        simulate(sc)
    with pytest.raises(ScenarioError) as e:  # cut to 1,000 requests, it is still read whole
        check_run_size(_trace_scenario(tmp_path, huge, ["workload.max_requests=1000"]))
    assert e.value.field == "workload.trace_file"
    assert check_run_size(_trace_scenario(tmp_path, huge, ["workload.max_requests=1000"]), max_memory_gb=64)


@pytest.mark.parametrize("what, words", [("folder", "not a regular file"), ("/dev/null", "not a regular file"),
                                         ("zst", "a zstd-compressed trace: decompress it first"),
                                         ("missing", "trace file not found")])
def test_an_odd_trace_file_is_named_as_what_it_is(tmp_path, what, words):
    """Issue 23: a folder or /dev/null was "not found", and a .zst trace (which replay --prefix
    reads) "not a Mooncake or Qwen/Bailian request trace"."""
    import zstandard
    path = {"folder": tmp_path, "/dev/null": "/dev/null", "missing": tmp_path / "nope.jsonl",
            "zst": tmp_path / "t.jsonl.zst"}[what]
    if what == "zst":
        path.write_bytes(zstandard.ZstdCompressor().compress(open(MOONCAKE, "rb").read(4000)))
    with pytest.raises(ScenarioError) as e:
        scenario(tmp_path, f'[workload]\ntrace_file = "{path}"\n')
    assert e.value.field == "workload.trace_file" and words in e.value.message


def test_a_file_of_no_trace_format_lists_every_format(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text('{"a": 1}\n')
    with pytest.raises(ScenarioError) as e:
        simulate(scenario(tmp_path, f'[workload]\ntrace_file = "{f}"\n'))
    assert "not a Mooncake, Qwen/Bailian or plain request trace" in e.value.message and e.value.field == "line 1"
