"""LRU and FIFO set the pinned blocks their victim search meets aside until `unpin` (issue 30:
walking them on every placement into a full HBM was most of a timed run). The victims must be
those of the plain walk: the first unpinned block of the order, on random streams."""
import random
from collections import OrderedDict

import pytest

from kvviz.serving.eviction.fifo import Fifo
from kvviz.serving.eviction.lru import Lru


@pytest.mark.parametrize("cls", [Lru, Fifo])
@pytest.mark.parametrize("seed", range(40))
def test_victims_equal_the_plain_walk(cls, seed):
    rng = random.Random(seed)
    ev, ref, pins = cls(), OrderedDict(), set()
    for _ in range(600):
        op, res = rng.random(), list(ref)
        if op < 0.3:
            b = rng.randrange(60)
            if b not in ref:
                ev.insert(b)
                ref[b] = None
        elif op < 0.5 and res:
            b = rng.choice(res)
            ev.touch(b)
            if cls is Lru:
                ref.move_to_end(b)
        elif op < 0.6 and res:
            b = rng.choice(res)
            ev.remove(b)
            del ref[b]
        elif op < 0.75 and res:
            pins.add(rng.choice(res))  # pins only grow between unpins, as in both engines
        elif op < 0.8:
            for b in rng.sample(sorted(pins), k=min(len(pins), rng.randrange(4))):
                pins.discard(b)
            ev.unpin()
        else:
            assert ev.victim(pins) == next((b for b in ref if b not in pins), None)
