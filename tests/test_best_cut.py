"""The load-or-recompute cut (kvviz.serving.tiered_cache.best_cut) and its two walks: on random
hits (tiers, tokens, bookings, link queues, prefetch landings, both sides of FEW_CUTS), the
plain-Python walk and the array walk give the cut that the iteration's own end
(layerwise_prefill.booked_end over the bookings and that cut's loads, quoted on the links)
makes soonest, ties to the larger cut."""
import random

import numpy as np
import pytest

from kvviz.serving import tiered_cache
from kvviz.serving.layerwise_prefill import booked_end
from kvviz.serving.links import Link
from kvviz.serving.roofline import Roofline
from kvviz.serving.tiered_cache import FEW_CUTS, best_cut


def folded(booked, now, L):
    A = B = now
    for start, t1 in booked:
        A, B = max(A, int(start + (t1 - start) / L)), max(B, t1)
    return A, B


def by_hand(src, tok, booked, links, now, L, bb, compute, landing):
    """Each candidate cut's end as the iteration would meet it: its loads quoted on the links
    (one transfer per tier, no earlier than its blocks land), then booked_end."""
    cands = [i for i, q in enumerate(src) if q] + [len(src)]
    ends = []
    for cut in cands:
        loads = list(booked)
        for q in sorted(set(src[:cut]) - {0}):
            mine = [i for i in range(cut) if src[i] == q]
            ready = max([now] + ([landing(i) for i in mine] if landing else []))
            t0, t1 = links[q].quote(len(mine) * bb, ready, False)
            loads.append((t0 + links[q].read_lat, t1))
        ends.append(booked_end(loads, now, compute(sum(tok[:cut])), L)[0])
    return max(c for c, e in zip(cands, ends) if e == min(ends))


def random_hit(rng: random.Random, cuts: int):
    """best_cut's arguments for a hit with `cuts` − 1 blocks below HBM."""
    K = rng.randint(2, 5)
    below = [rng.randint(1, K - 1) for _ in range(cuts - 1)]
    src = below + [0] * rng.randint(0, cuts)
    rng.shuffle(src)
    if rng.random() < 0.3:  # a long run of one tier, as an LRU demotes them
        src.sort(key=lambda q: q == 0)
    tok = [rng.choice([16, 512, rng.randint(1, 512)]) for _ in src]
    now = rng.randint(0, 10**12)
    L = rng.choice([1, 2, 7, 32, 80])
    bb = rng.choice([16, 5_242_880, rng.randint(1, 10**7)])
    links = [None]
    for _ in range(1, K):
        lk = Link("t", rng.uniform(0.5, 500), 1.0, rng.choice([0, rng.randint(0, 50_000)]), 0)
        lk.free = now + rng.choice([-10**6, 0, rng.randint(0, 10**7)])
        links.append(lk)
    booked = []
    for _ in range(rng.randint(0, 3)):
        start = now + rng.randint(-10**5, 10**7)
        booked.append((start, start + rng.randint(0, 10**7)))
    landing = None
    if rng.random() < 0.4:
        lands = [rng.choice([0, now - 5, now + rng.randint(0, 10**7)]) for _ in src]
        landing = lands.__getitem__
    if rng.random() < 0.2:  # compute not depending on the cut: every end ties or loading only delays
        compute = lambda kept: 2e6 + 0 * kept  # noqa: E731
    else:
        gpu = Roofline(rng.uniform(1e8, 7e10), rng.choice([1, 4, 8]), 312.0, rng.uniform(0.2, 0.6), 2.0, 0.8,
                       1, layers=rng.choice([0, 32, 80]), d_model=rng.choice([0, 4096, 8192]))
        comp, total = rng.choice([0.0, rng.uniform(0, 1e9)]), sum(tok) + rng.randint(0, 5000)
        compute = lambda kept: comp + gpu.prefill_ns(total - kept, kept)  # noqa: E731
    return src, np.array(tok, dtype=np.int64), booked, links, now, L, bb, compute, landing


@pytest.mark.parametrize("seed", range(8))
def test_both_walks_give_the_cut_whose_iteration_ends_soonest(seed):
    rng = random.Random(seed)
    for _ in range(40):
        cuts = rng.choice([1, 2, 3, FEW_CUTS - 1, FEW_CUTS, FEW_CUTS + 1, rng.randint(1, 3 * FEW_CUTS)])
        src, tok, booked, links, now, L, bb, compute, landing = hit = random_hit(rng, cuts)
        want = by_hand(src, tok.tolist(), booked, links, now, L, bb, compute, landing)
        A, B = folded(booked, now, L)
        rest = (links, now, L, bb, compute, landing)
        assert tiered_cache._few_cuts(src, tok.tolist(), A, B, *rest) == want
        assert tiered_cache._many_cuts(src, tok, A, B, *rest) == want
        assert best_cut(*hit) == want


def test_ties_go_to_loading_and_a_slow_link_to_recomputing():
    # compute the same whatever the cut: with free, instant links every cut ends alike (the
    # whole hit is used); with a busy link each block loaded delays the end (none is)
    src = [0, 1, 0, 2, 1] * (FEW_CUTS // 2)
    tok = np.full(len(src), 16, dtype=np.int64)
    const = lambda kept: 1e6 + 0 * kept  # noqa: E731
    fast = [None] + [Link("t", 1e12, 1.0, 0, 0) for _ in range(2)]
    slow = [None] + [Link("t", 1e-3, 1.0, 10**6, 0) for _ in range(2)]
    for n in (5, len(src)):  # few cuts, many
        assert best_cut(src[:n], tok[:n], [], fast, 0, 8, 64, const) == n
        assert best_cut(src[:n], tok[:n], [], slow, 0, 8, 64, const) == 1
