"""Issue 32: each router on hand-computed 2- and 3-instance cases, through a view whose facts are
written down (so every expected pick is worked out beside it)."""
from types import SimpleNamespace

import numpy as np
import pytest

from kvviz.mechanisms.cluster import routers
from kvviz.mechanisms.cluster.routers import Decision

SETTINGS = SimpleNamespace(seed=3, balancing_threshold=1.5, prefix_weight=3.0, kv_weight=2.0, queue_weight=2.0,
                           approx_index_blocks=100)


class Facts:
    """A router's view with stated facts. Prefill of request j after h held blocks =
    (prompt − 10·h) ns (10-token blocks, 1 ns a token); a fetch costs 3 ns a block."""

    def __init__(self, held, queue_ns=None, queue_len=None, kv=None, prompt=100, blocks=None):
        self.held = held                      # held[k]: leading blocks instance k holds of the request
        self.instances = len(held)
        self.q_ns = queue_ns or [0.0] * self.instances
        self.q_len = queue_len or [0] * self.instances
        self.kv = kv or [0.0] * self.instances
        self.prompt = prompt
        self.blocks = blocks if blocks is not None else list(range(prompt // 10))
        self.settings = SETTINGS

    def match(self, k, j):
        return self.held[k]

    def matches(self, j):
        return list(self.held)

    def queue_ns(self, k):
        return self.q_ns[k]

    def queues_ns(self):
        return list(self.q_ns)

    def queue_len(self, k):
        return self.q_len[k]

    def kv_utilisation(self, k):
        return self.kv[k]

    def prefill_ns(self, j, h):
        return self.prompt - 10 * h

    def fetch_ns(self, j, src, dst, have, best):
        return 3 * (best - have)

    def blocks_of(self, j):
        return len(self.blocks)

    def block_ids(self, j):
        return self.blocks


def route(name, view, settings=SETTINGS, j=0):
    return routers.make(name, view, settings).route(j)


def test_every_router_is_registered_once_in_its_own_file():
    assert routers.names() == ("random", "round_robin", "least_loaded", "prefix_affinity", "global_cache_aware",
                               "precise_prefix", "approximate_prefix")
    mods = {routers.ROUTERS[n].__module__ for n in routers.names()}
    assert len(mods) == 7


@pytest.mark.parametrize("n", [2, 3])
def test_random_follows_its_seed(n):
    r = routers.make("random", Facts([0] * n), SETTINGS)
    got = [r.route(j).instance for j in range(50)]
    rng = np.random.default_rng(SETTINGS.seed)
    assert got == [int(rng.integers(n)) for _ in range(50)]
    assert set(got) == set(range(n))


@pytest.mark.parametrize("n, expect", [(2, [0, 1, 0, 1, 0]), (3, [0, 1, 2, 0, 1])])
def test_round_robin_turns(n, expect):
    r = routers.make("round_robin", Facts([0] * n), SETTINGS)
    got = []
    for j in range(5):
        d = r.route(j)
        got.append(d.instance)
        r.routed(j, d)
    assert got == expect


def test_round_robin_a_rejected_request_takes_no_turn():
    r = routers.make("round_robin", Facts([0, 0]), SETTINGS)
    assert r.route(0).instance == 0  # not routed (rejected): the next is offered instance 0 again
    assert r.route(1).instance == 0


@pytest.mark.parametrize("q, expect", [([5.0, 3.0], 1), ([4.0, 4.0, 2.0], 2), ([1.0, 1.0, 1.0], 0)])
def test_least_loaded_picks_the_shortest_queue_lowest_index_on_ties(q, expect):
    # the cache is not looked at: instance 0 holds the whole prompt and still loses on queue
    assert route("least_loaded", Facts([10] + [0] * (len(q) - 1), queue_ns=q)).instance == expect


def test_prefix_affinity_two_instances():
    # 0: queue 0 + prefill 100 - 0 = 100; 1: queue 10 + prefill 100 - 50 = 60  -> 1
    d = route("prefix_affinity", Facts([0, 5], queue_ns=[0.0, 10.0]))
    assert (d.instance, d.local_blocks, d.fetch_from) == (1, 5, -1)


def test_prefix_affinity_three_instances():
    # 0: 50 + (100 - 80) = 70; 1: 0 + (100 - 20) = 80; 2: 30 + (100 - 50) = 80  -> 0
    d = route("prefix_affinity", Facts([8, 2, 5], queue_ns=[50.0, 0.0, 30.0]))
    assert d.instance == 0
    # with instance 0's queue at 61: 0 costs 81, 1 and 2 tie at 80 -> 1 (lowest index)
    assert route("prefix_affinity", Facts([8, 2, 5], queue_ns=[61.0, 0.0, 30.0])).instance == 1


def test_global_cache_aware_fetches_from_the_best_peer():
    # best: instance 0 holds 8. 0: 100 + (100 - 80) = 120.
    # 1 holds 2: 8/2 = 4 > 1.5 -> fetch 6 blocks (18) + queue 0 + prefill after 8 (20) = 38
    # 2 holds 0: fetch 8 blocks (24) + 0 + 20 = 44  -> 1, fetching from 0
    d = route("global_cache_aware", Facts([8, 2, 0], queue_ns=[100.0, 0.0, 0.0]))
    assert d == Decision(1, fetch_from=0, fetch_blocks=8, local_blocks=2)


def test_global_cache_aware_below_the_threshold_uses_its_own_match():
    # 8/6 = 1.33 <= 1.5: instance 1 is costed on its own 6 blocks: 0 + 40 = 40; 0: 25 + 20 = 45 -> 1, no fetch
    d = route("global_cache_aware", Facts([8, 6], queue_ns=[25.0, 0.0]))
    assert d == Decision(1, local_blocks=6)
    # threshold 1.2: 8/6 exceeds it: instance 1 = fetch 2 (6) + 0 + 20 = 26 -> 1, fetching
    low = SimpleNamespace(**{**vars(SETTINGS), "balancing_threshold": 1.2})
    assert route("global_cache_aware", Facts([8, 6], queue_ns=[25.0, 0.0]), low) == Decision(1, 0, 8, 6)


def test_global_cache_aware_with_nothing_cached_is_prefix_affinity():
    f = Facts([0, 0, 0], queue_ns=[9.0, 3.0, 5.0])
    assert route("global_cache_aware", f) == route("prefix_affinity", f) == Decision(1)


def test_precise_prefix_two_instances():
    # 10 blocks. 0: 3·(10/10) + 2·(1 − 0.9) + 2·((5 − 5)/5) = 3.2; 1: 0 + 2·0.9 + 2·1 = 3.8  -> 1
    d = route("precise_prefix", Facts([10, 0], queue_len=[5, 0], kv=[0.9, 0.1]))
    assert d.instance == 1
    # less loaded instance 0 (kv 0.5): 3 + 1.0 + 0 = 4.0 > 3.8  -> 0
    assert route("precise_prefix", Facts([10, 0], queue_len=[5, 0], kv=[0.5, 0.1])).instance == 0


def test_precise_prefix_three_instances():
    # queue lengths 2, 4, 0 -> queue scores 0.5, 0, 1
    # 0: 3·0.5 + 2·0.5 + 2·0.5 = 3.5; 1: 3·1 + 2·0.8 + 0 = 4.6; 2: 0 + 2·1 + 2 = 4.0  -> 1
    d = route("precise_prefix", Facts([5, 10, 0], queue_len=[2, 4, 0], kv=[0.5, 0.2, 0.0]))
    assert d.instance == 1 and d.local_blocks == 10


def test_approximate_prefix_scores_what_it_sent_not_what_is_held():
    f = Facts([0, 0], blocks=[1, 2, 3])
    r = routers.make("approximate_prefix", f, SETTINGS)
    f.q_len = [0, 1]  # instance 1 is busier: with no prefix known, 0 wins (0 + 2 + 2 vs 0 + 2 + 0)
    d = r.route(0)
    assert d.instance == 0
    r.routed(0, Decision(1))  # suppose it was sent to 1: the router remembers 1, 2, 3 there
    f.blocks = [1, 2, 4]
    # queues equal (score 1 each): 1: 3·(2/3) + 2 + 2 = 6; 0: 0 + 2 + 2 = 4  -> 1
    f.q_len = [0, 0]
    assert r.route(1).instance == 1
    assert f.held == [0, 0]  # the instances hold nothing: the index alone decided


def test_approximate_prefix_index_is_an_lru_of_its_capacity():
    small = SimpleNamespace(**{**vars(SETTINGS), "approx_index_blocks": 2})
    f = Facts([0, 0, 0], blocks=[1, 2, 3])
    r = routers.make("approximate_prefix", f, small)
    r.routed(0, Decision(2))
    assert list(r.index[2]) == [2, 3]  # block 1, the least recent, fell out
    assert r.guess(2, 0) == 0  # the prefix starts at block 1: no match


def test_unknown_router_is_refused():
    with pytest.raises(routers.RouterRefused):
        routers.make("magic", Facts([0]), SETTINGS)
