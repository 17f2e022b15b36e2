"""Issue 30, item 3: the compiled tiered block cache (kvviz/serving/native/_block_cache.pyx) equals
its Python definition (kvviz/serving/tiered_cache.py) for every policy with a compiled twin, on
the same random streams of calls (requests admitted and finished out of order, prefetch copies
up, protections), with several seeds, capacities and tier counts: the same hits per lookup, the
same evictions in the same order and the same counters after every call. A run whose cache falls
back to Python says why."""
import random

import numpy as np
import pytest

from kvviz.serving import native, tiered_cache
from kvviz.serving.tiered_cache import TieredCache, compiled_cache, make_cache

mod, why = native.block_cache()
needs_build = pytest.mark.skipif(mod is None, reason=f"the compiled block cache cannot run: {why}")
NEVER = 1 << 62


def workload(rng: random.Random, requests: int):
    """Prefix-shaped requests: a shared head (one of a few documents, cut at a random length)
    then fresh blocks; ids sparse and unordered (as hashes are)."""
    docs = [[rng.randrange(1 << 40) for _ in range(rng.randrange(2, 14))] for _ in range(rng.randrange(2, 7))]
    ids, off = [], [0]
    for _ in range(requests):
        d = rng.choice(docs)
        blocks = d[:rng.randrange(0, len(d) + 1)] + [rng.randrange(1 << 40) for _ in range(rng.randrange(0, 5))]
        if rng.random() < 0.1 and blocks:
            blocks.append(blocks[0])  # a block twice in one request
        ids += blocks
        off.append(len(ids))
    return ids, off


def next_pos(ids):
    nxt, last = [NEVER] * len(ids), {}
    for p in range(len(ids) - 1, -1, -1):
        nxt[p] = last.get(ids[p], NEVER)
        last[ids[p]] = p
    return nxt


def later(ids):
    out, seen = [0] * len(ids), {}
    for p in range(len(ids) - 1, -1, -1):
        out[p] = seen.get(ids[p], 0)
        seen[ids[p]] = out[p] + 1
    return out


def drive(cache, rng: random.Random, off, K, protect: bool, log: list):
    """One stream of calls (rng decides; both caches get the same rng seed): what each call
    answered, and the counters after it."""
    out = []
    R = len(off) - 1
    running, nxt_r = [], 0
    orig = cache.original
    cache.on_evict = lambda k, v: log.append((k, orig(v)))
    counters = ("size", "peak", "hit_blocks", "hit_tokens", "hit_req", "written", "demoted", "evicted")
    while nxt_r < R or running:
        x = rng.random()
        if nxt_r < R and (x < 0.55 or not running):
            r = nxt_r
            nxt_r += 1
            s, e = off[r], off[r + 1]
            src = cache.lookup(s, e)
            cache.place_request(r, s, e, len(src), src)
            running.append(r)
            out.append(("admit", r, list(src)))
        elif x < 0.85 or not protect or nxt_r >= R:
            r = running.pop(rng.randrange(len(running)))
            cache.finish(r)
            out.append(("finish", r))
        else:
            window = range(nxt_r, min(R, nxt_r + rng.randrange(1, 4)))
            if rng.random() < 0.5:
                cache.set_protect([cache.ids[p] for r in window for p in range(off[r], off[r + 1])])
            else:
                cache.protect_ranges([(off[r], off[r + 1]) for r in window])
            t = rng.randrange(K)
            fetch = {k: [orig(b) for b in v] for k, v in cache.copy_up(off[window[0]], off[window[0] + 1], t).items()}
            out.append(("prefetch", t, fetch))
        out.append(tuple(tuple(getattr(cache, c)) for c in counters))
    return out


CASES = [(seed, policies) for seed in range(6) for policies in (["lru"], ["fifo"], ["belady"], ["lru", "fifo", "belady"])]


@needs_build
@pytest.mark.parametrize("seed,policies", CASES)
def test_compiled_cache_equals_python_on_random_streams(seed, policies):
    rng = random.Random(seed * 31 + len(policies))
    evictions_seen = 0
    for trial in range(6):
        ids, off = workload(rng, rng.randrange(10, 60))
        toks = [rng.randrange(1, 17) for _ in ids]
        K = rng.randrange(1, 5)
        caps = [rng.randrange(1, 12) for _ in range(K)]
        evictions = [rng.choice(policies) for _ in range(K)]
        kw = dict(move=rng.random() < 0.3, through=rng.random() < 0.3,
                  admission=rng.choice(("always", "second_hit", "min_reuse")), min_reuse=rng.randrange(1, 3),
                  pin=rng.random() < 0.7, protect=rng.random() < 0.5, next_pos=next_pos(ids), later=later(ids))
        py = TieredCache(ids, toks, caps, evictions, **kw)
        py.ids = ids
        c = compiled_cache(mod, ids, toks, caps, evictions, **kw)
        logs = [], []
        a = drive(py, random.Random(trial), off, K, kw["protect"], logs[0])
        b = drive(c, random.Random(trial), off, K, kw["protect"], logs[1])
        case = f"seed {seed}, trial {trial}: caps {caps}, {evictions}, {kw['admission']}"
        assert a == b, case
        assert logs[0] == logs[1], case
        evictions_seen += sum(a[-1][-1])
    assert evictions_seen > 0  # the streams made the policies choose


@needs_build
def test_a_stream_the_python_cache_evicts_in_is_equal_at_scale():
    """A longer stream over one tier of each twin: thousands of evictions, equal counters."""
    rng = random.Random(7)
    ids, off = workload(rng, 3000)
    toks = [16] * len(ids)
    for policy in native.TWINS:
        for caps in ([20], [8, 30, 60]):
            kw = dict(next_pos=next_pos(ids), later=None)
            py = TieredCache(ids, toks, caps, [policy] * len(caps), **kw)
            c = compiled_cache(mod, ids, toks, caps, [policy] * len(caps), **kw)
            for r in range(len(off) - 1):
                s, e = off[r], off[r + 1]
                ha, hb = py.lookup(s, e), c.lookup(s, e)
                assert ha == hb
                py.place_request(r, s, e, len(ha), ha)
                c.place_request(r, s, e, len(hb), hb)
                py.finish(r)
                c.finish(r)
            assert py.evicted == c.evicted and py.hit_tokens == c.hit_tokens and py.written == c.written
            assert py.evicted[0] > 100


def test_a_policy_without_a_compiled_twin_runs_in_python_and_says_so():
    cache, note = make_cache([1, 2, 3], [16] * 3, [2], ["leaf_lru"], parent={1: None, 2: 1, 3: 2})
    assert isinstance(cache, TieredCache)
    assert "leaf_lru" in note and "no compiled twin" in note and "Python block cache" in note


def test_a_python_run_asked_for_says_so(monkeypatch):
    monkeypatch.setenv("KVVIZ_ENGINE", "python")
    cache, note = make_cache([1, 2, 3], [16] * 3, [2], ["lru"])
    assert isinstance(cache, TieredCache)
    assert note.startswith("KVVIZ_ENGINE=python") and "Python block cache" in note


def test_a_missing_or_stale_build_runs_python_and_says_why(monkeypatch, tmp_path):
    monkeypatch.setattr(native, "block_cache", lambda: (None, "the compiled block cache is not built (...)"))
    cache, note = make_cache([1, 2, 3], [16] * 3, [2], ["lru"])
    assert isinstance(cache, TieredCache) and "not built" in note
    # a folder whose sources differ from the ones the module was built from: refused by its hash
    (tmp_path / "_block_cache.pyx").write_text("# other sources\n")
    module, why = native.load_built(native.__name__, "_block_cache", tmp_path, "the compiled block cache")
    if mod is not None:
        assert module is None and "built from other sources" in why
    module, why = native.load_built(native.__name__, "_no_such_module", tmp_path, "the compiled block cache")
    assert module is None and "not built" in why


@needs_build
def test_the_timed_run_notes_a_fallback_and_not_a_compiled_run(monkeypatch):
    from kvviz import load_scenario, simulate
    sets = ['workload.requests=30', 'policies=["lru"]']
    res = simulate(load_scenario("scenarios/prefix_cache_tiers.toml", sets))
    assert "notes" not in res.metrics
    monkeypatch.setattr(tiered_cache.native, "block_cache", lambda: (None, "the compiled block cache is cut short"))
    slow = simulate(load_scenario("scenarios/prefix_cache_tiers.toml", sets))
    assert list(slow.metrics["notes"]) == ["the compiled block cache is cut short: the Python block cache runs, "
                                           "several times slower"]
    a, b = res.metrics_dict(), slow.metrics_dict()
    del b["notes"]
    assert a == b  # the same run either way


@needs_build
@pytest.mark.parametrize("policy", native.TWINS)
def test_the_untimed_replay_gives_the_same_outcome_and_log_compiled(policy):
    """kvviz run with serving.timing = false runs engine.replay on the compiled cache: the same
    counts, per-request hits, occupancy and eviction log (request, position, tier, block)."""
    from kvviz.mechanisms.prefix_cache.engine import prepare, replay
    from kvviz.mechanisms.prefix_cache.workload import Blocks
    rng = random.Random(11)
    ids, off = workload(rng, 400)
    blocks = Blocks(np.array(ids, dtype=np.int64), np.array(off, dtype=np.int64),
                    np.full(len(off) - 1, 64, dtype=np.int64), np.zeros(len(off) - 1), 16, "test")
    prep = prepare(blocks, {policy}, "always")
    for caps, move, through in (([12], False, False), ([6, 10, 30], True, False), ([6, 10], False, True)):
        logs = [], []
        a = replay(prep, caps, [policy] * len(caps), move, through, "always", record=True, log=logs[0])
        b = replay(prep, caps, [policy] * len(caps), move, through, "always", record=True, log=logs[1], compiled=True)
        assert b.note == ""
        for f in ("hit_blocks", "hit_tokens", "hit_requests", "written", "demoted", "evicted", "peak"):
            assert getattr(a, f) == getattr(b, f), (f, caps)
        assert (a.hits == b.hits).all() and (a.occupancy == b.occupancy).all() and (a.hit_tier == b.hit_tier).all()
        assert logs[0] == logs[1] and len(logs[0]) > 50


@needs_build
def test_replay_prefix_runs_fifo_and_belady_on_the_compiled_cache_with_the_python_counts(capsys):
    """`kvviz replay --prefix`: fifo and belady on the compiled block cache (its `engine` says so),
    the counts the Python block cache gives; leaf_lru (no twin) on the Python one, said on stderr."""
    import json

    from kvviz.cli import main
    from kvviz.replay.prefix import engine_counts, prepared
    from kvviz.replay.prefix_result import BLOCK_CACHE, ENGINE
    from kvviz.requests import prompts

    from .conftest import ROOT
    trace = ROOT / "resources" / "traces" / "mooncake_synthetic_trace.jsonl"
    assert main(["replay", str(trace), "--prefix", "--unit", "blocks", "--capacities", "300,3000",
                 "--policy", "fifo,belady,leaf_lru", "--json"]) == 0
    out, err = capsys.readouterr()
    rows = {(r["policy"], r["capacity"]): r for r in json.loads(out)}
    prep = prepared(prompts.read(trace), ["fifo", "belady"])
    for policy in ("fifo", "belady"):
        for cap in (300, 3000):
            row = rows[(policy, cap)]
            assert row["engine"] == BLOCK_CACHE
            assert (row["hit_blocks"], row["hit_requests"]) == engine_counts(prep, policy, cap, True)[0]  # Python's
    assert {rows[("leaf_lru", c)]["engine"] for c in (300, 3000)} == {ENGINE}
    assert "note: eviction policy leaf_lru has no compiled twin: the Python block cache runs" in err


@needs_build
def test_resident_prefixes_counts_each_cache_as_its_matched_does():
    """The cluster router's count over several caches on one stream (one compiled call) equals
    sum(matched) of each, request by request, while the caches diverge (different capacities);
    positions outside the stream are refused."""
    rng = random.Random(11)
    ids, off = workload(rng, 600)
    toks = [16] * len(ids)
    arrays: dict = {}
    caches = [compiled_cache(mod, ids, toks, caps, ["lru"] * len(caps), arrays=arrays)
              for caps in ([6], [12, 20], [40])]
    assert tiered_cache.prefix_counter(caches) is mod.resident_prefixes
    assert tiered_cache.prefix_counter([TieredCache(ids, toks, [6], ["lru"])]) is None
    seen = set()
    for r in range(len(off) - 1):
        s, e = off[r], off[r + 1]
        got = mod.resident_prefixes(caches, s, e)
        assert got == [sum(c.matched(c.ids[s:e])) for c in caches]
        seen.add(tuple(got))
        c = caches[r % len(caches)]  # one cache takes each request: their contents differ
        h = c.lookup(s, e)
        c.place_request(r, s, e, len(h), h)
        c.finish(r)
    assert len(seen) > 10  # the counts varied, across requests and caches
    with pytest.raises(IndexError):
        mod.resident_prefixes(caches, 0, len(ids) + 1)
