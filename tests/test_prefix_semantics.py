"""Issue 30, item 4: the block prefix cache's semantics stated once. `kvviz replay --prefix` and
`kvviz run` on a one-tier prefix_cache scenario give the same counts for every policy, pinned or
not; belady (the unpinned reference, the entering block a candidate) against an exact optimum on
tiny traces, and above lru, fifo and leaf_lru."""
import json
from pathlib import Path

import numpy as np
import pytest

from kvviz import load_scenario, simulate
from kvviz.mechanisms.prefix_cache.engine import prepare, replay
from kvviz.mechanisms.prefix_cache.evictors import POLICIES
from kvviz.mechanisms.prefix_cache.workload import Blocks
from kvviz.replay.prefix import longest_request, prefix_replay
from kvviz.requests import prompts

from .conftest import ROOT
from .prefix_optimum import optimum

MOONCAKE = ROOT / "resources" / "traces" / "mooncake_synthetic_trace.jsonl"
CONVERSATION = ROOT / "resources" / "traces" / "mooncake_conversation_trace.jsonl"  # bundled


def one_tier(tmp_path, trace: Path, cap: int, pin: bool, max_requests: int = 0):
    p = tmp_path / "s.toml"
    p.write_text(f'kind = "prefix_cache"\nname = "one tier"\npolicies = {json.dumps(list(POLICIES))}\n'
                 f'[workload]\ntrace_file = "{trace}"\nmax_requests = {max_requests}\n'
                 f'[[tiers]]\nname = "hbm"\ncapacity_blocks = {cap}\n'
                 f'[cache]\npartial_block = true\npin_running = {str(pin).lower()}\n')
    return load_scenario(p)


def run_counts(sc) -> dict:
    m = simulate(sc).metrics
    R = m["workload"]["requests"]
    return {p: (v["tiers"]["hbm"]["hit_blocks"], round(v["tiers"]["hbm"]["request_hit_rate"] * R))
            for p, v in m["policies"].items()}


def replay_counts(reqs, caps, pin) -> dict:
    return {(r.policy, r.capacity): (r.hit_blocks, r.hit_requests)
            for r in prefix_replay(reqs, list(POLICIES), caps, pin=pin)}


@pytest.mark.parametrize("pin", [True, False])
def test_replay_and_run_agree_for_every_policy(tmp_path, pin):
    n = 600
    whole = prompts.read(MOONCAKE)
    head = tmp_path / "head.jsonl"
    head.write_text("".join(MOONCAKE.read_text().splitlines(keepends=True)[:n]))
    reqs = prompts.read(head)
    assert len(reqs) == n and len(whole) > n
    caps = [40, 300, 2000]  # 40, 300: below the longest request, where pins bind (LRU falls back to the engine)
    assert min(caps) < longest_request(reqs) < max(caps)
    got = replay_counts(reqs, caps, pin)
    for cap in caps:
        want = run_counts(one_tier(tmp_path, head, cap, pin))
        assert {p: got[(p, cap)] for p in POLICIES} == want, cap


def blocks_of(requests) -> Blocks:
    counts = np.array([len(r) for r in requests], dtype=np.int64)
    offsets = np.r_[0, np.cumsum(counts)].astype(np.int64)
    flat = np.array([b for r in requests for b in r], dtype=np.int64)
    return Blocks(flat, offsets, counts.copy(), np.arange(len(requests), dtype=np.float64), 1, "test")


def hits(requests, cap, policy, pin=True) -> int:
    prep = prepare(blocks_of(requests), set(POLICIES), "always")
    return int(replay(prep, [cap], [policy], False, False, "always", pin=pin).hits.sum())


def chained(rng, n_requests, longest, streams, alphabet=2):
    """Requests as prefix hashes name blocks: an id stands for its whole prefix of tokens."""
    table: dict = {}
    ss = [rng.integers(0, alphabet, size=longest) for _ in range(streams)]
    out = []
    for _ in range(n_requests):
        s = ss[int(rng.integers(0, streams))]
        out.append([table.setdefault(tuple(s[:k + 1]), len(table)) for k in range(int(rng.integers(1, longest + 1)))])
    return out


def unchained(rng, n_requests, longest, ids):
    return [[int(x) for x in rng.integers(0, ids, int(rng.integers(1, longest + 1)))] for _ in range(n_requests)]


HAND = [  # (requests, capacity, belady's hits, the optimum's)
    # pinned LRU keeps 0 (1 is not kept: every block held); belady leaves 1 out (never used
    # again). With insertion forced the best is 0: why the entering block is belady's candidate
    ([[0, 1], [0, 2]], 1, 1, 1),
    ([[0, 1, 2], [0, 1, 2], [0, 1]], 2, 4, 4),  # forced insertion: 2 at best; unpinned LRU 0
    ([[0], [1], [2], [0], [1]], 2, 2, 2),       # LRU 0
    # not chained (2 follows 5, then 0): belady keeps 2 for request 2, whose head 0 is missing,
    # and loses 3's chain; the optimum keeps 3, 5
    ([[3, 5, 2], [0, 2], [3, 5]], 2, 1, 2),
]


@pytest.mark.parametrize("requests, cap, belady, best", HAND)
def test_belady_against_the_exact_optimum_on_hand_made_traces(requests, cap, belady, best):
    assert hits(requests, cap, "belady") == belady
    assert optimum(requests, cap, bypass=True) == best


def test_belady_is_the_optimum_on_tiny_chained_traces_and_bounds_every_policy():
    """On hash-chained traces (what real prefix caches see) belady met the exact optimum in every
    case searched (6,000 more offline: tests hold 600); no policy, pinned or not, beat it."""
    rng = np.random.default_rng(30)
    for _ in range(150):
        reqs = chained(rng, int(rng.integers(3, 7)), int(rng.integers(1, 5)), int(rng.integers(1, 4)))
        for cap in (1, 2, 3, 4):
            b = hits(reqs, cap, "belady")
            assert b == optimum(reqs, cap, bypass=True), (reqs, cap)
            for policy in ("lru", "fifo", "leaf_lru"):
                assert hits(reqs, cap, policy) <= b and hits(reqs, cap, policy, pin=False) <= b, (reqs, cap, policy)


def test_belady_on_tiny_unchained_traces_never_above_the_optimum():
    """Without the chain (any ids in any order) furthest-next-use is not optimal under prefix
    counting: measured, not assumed. The optimum bounds every policy, pinned or not."""
    rng = np.random.default_rng(31)
    short = cases = 0
    for _ in range(150):
        reqs = unchained(rng, int(rng.integers(3, 7)), int(rng.integers(1, 5)), int(rng.integers(3, 7)))
        for cap in (1, 2, 3, 4):
            best = optimum(reqs, cap, bypass=True)
            b = hits(reqs, cap, "belady")
            assert b <= best
            assert all(hits(reqs, cap, p, pin) <= best for p in ("lru", "fifo", "leaf_lru") for pin in (True, False))
            short += b < best
            cases += 1
    assert 0 < short < cases * 0.2  # about one case in ten (411 of 4,000 in the measurement)


CAPS = [1000, 5000, 20000]


@pytest.fixture(scope="module")
def conversation():
    if not CONVERSATION.is_file():
        pytest.skip(f"{CONVERSATION} is not on this machine")
    return prompts.read(CONVERSATION)


@pytest.mark.slow
def test_belady_bounds_every_policy_on_the_conversation_trace(conversation):
    got = replay_counts(conversation, CAPS, True)
    for cap in CAPS:
        assert all(got[(p, cap)][0] <= got[("belady", cap)][0] for p in ("lru", "fifo", "leaf_lru")), cap


@pytest.mark.slow
def test_replay_and_run_agree_on_the_conversation_trace(tmp_path, conversation):
    got = replay_counts(conversation, [1000, 5000], True)
    for cap in (1000, 5000):
        assert {p: got[(p, cap)] for p in POLICIES} == run_counts(one_tier(tmp_path, CONVERSATION, cap, True))
    assert got[("fifo", 1000)] == (12824, 12030) and got[("belady", 1000)] == (55019, 12030)


def test_belady_bounds_every_policy_on_the_bundled_trace():
    reqs = prompts.read(MOONCAKE)
    caps = [100, 1000, 5000]
    got = replay_counts(reqs, caps, True)
    for cap in caps:
        assert all(got[(p, cap)][0] <= got[("belady", cap)][0] for p in ("lru", "fifo", "leaf_lru")), cap
