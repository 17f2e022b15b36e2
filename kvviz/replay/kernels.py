"""kvviz's own replay kernel: one plain Python loop over lists (ids mapped to small ints first)
that runs every registered eviction policy it can give the facts of (LRU, FIFO, Belady; each
written once, in kvviz/serving/eviction/). It needs nothing beyond numpy, so `kvviz replay` works
without libCacheSim, and the tests use it as an independent cross-check of it. Semantics: see
kvviz.replay.
"""
from __future__ import annotations

from collections.abc import Container, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..serving.eviction import EVICTION_POLICIES, NO_PINS, Policy, make, policy_class

# The object replay runs every registered eviction policy (kvviz.serving.eviction) whose facts
# it can give: each object's next request (from the trace), not a parent (objects have none).
GIVES = frozenset({"next_use"})


def runnable() -> dict[str, type[Policy[Any]]]:
    """name -> policy class of every registered policy this replay can run."""
    return {n: c for n, c in EVICTION_POLICIES.items() if c.needs <= GIVES}


def describe(cls: type[Policy[Any]]) -> str:
    return cls.object_description or cls.description.replace("blocks", "objects").replace("block", "object")


class _Runnable(Mapping[str, str]):
    """name -> description of every registered policy this replay can run, as the registry is
    now (a policy registered or removed later shows here too: a snapshot kept a test's toy
    policy listed after it was gone)."""

    def __getitem__(self, name: str) -> str:
        return describe(runnable()[name])

    def __iter__(self) -> Iterator[str]:
        return iter(runnable())

    def __len__(self) -> int:
        return len(runnable())


DESCRIPTIONS: Mapping[str, str] = _Runnable()


def _replay(policy: str, ids: Sequence[int], sizes: Sequence[int], cap: int) -> tuple[int, int]:
    """(misses, bytes missed) of one replay of `policy` (the semantics: kvviz.replay). The policy
    orders the cached objects; this loop keeps their sizes and evicts its victims until the
    cache fits. A policy that reads next uses never evicts the object being requested (it is
    always inserted, as in libCacheSim's Belady; an object grown beyond the whole cache leaves
    it, the others stay); any other policy may (LRU's newest goes only when it alone is too big)."""
    clair = "next_use" in policy_class(policy).needs
    next_use: dict[int, int] = {}
    pol: Policy[int] = make(policy, "the object replay", next_use=next_use)
    insert, touch, remove, victim = pol.insert, pol.touch, pol.remove, pol.victim
    nxt: list[int] = next_use_array(ids).tolist() if clair else []
    cache: dict[int, int] = {}  # id -> size
    used = misses = missed = 0
    pins: Container[int] = NO_PINS
    for i, (k, s) in enumerate(zip(ids, sizes)):
        if clair:
            next_use[k] = nxt[i]
            pins = (k,)
        old = cache.get(k)
        if old is not None:
            touch(k)
            if old == s:
                continue
            used += s - old  # size changed: update in place, then evict as on insert
            cache[k] = s
            if clair and s > cap:
                used -= cache.pop(k)
                remove(k)
                continue
        else:
            misses += 1
            missed += s
            if s > cap:
                continue
            cache[k] = s
            insert(k)
            used += s
        while used > cap:
            v = victim(pins)
            assert v is not None  # pins hold only the object just requested, and it alone fits
            remove(v)
            used -= cache.pop(v)
        if clair:
            pol.unpin()
    return misses, missed


def _by_object(ids: np.ndarray) -> np.ndarray:
    """The request indices ordered by object, then time: a stable argsort of the ids, done as
    16-bit radix passes (numpy sorts uint16 stably by radix), about 3x a general stable sort."""
    if len(ids) and ids.min() < 0:  # digits of negative ids would mix objects up
        return np.argsort(ids, kind="stable")
    order = np.arange(len(ids))
    top = int(ids.max()).bit_length() if len(ids) else 0
    for shift in range(0, max(top, 1), 16):  # least significant digit first: each pass keeps the last
        digit = ((ids[order] >> shift) & 0xFFFF).astype(np.uint16)
        order = order[np.argsort(digit, kind="stable")]
    return order


def _same_object_steps(ids: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ids as int64, earlier, later): each pair of consecutive requests for one object, as
    request indices."""
    a = np.asarray(ids, dtype=np.int64)
    order = _by_object(a)
    grouped = a[order]
    same = grouped[1:] == grouped[:-1]
    return a, order[:-1][same], order[1:][same]


def next_use_array(ids: ArrayLike) -> np.ndarray:
    """For each request, the index of the next request for the same object (len(ids) if none)."""
    a, earlier, later = _same_object_steps(ids)
    nxt = np.full(len(a), len(a), dtype=np.int64)
    nxt[earlier] = later
    return nxt


def previous_use_array(ids: ArrayLike) -> np.ndarray:
    """For each request, the index of the previous request for the same object (-1 if none)."""
    a, earlier, later = _same_object_steps(ids)
    prev = np.full(len(a), -1, dtype=np.int64)
    prev[later] = earlier
    return prev


def run(policy: str, ids: list[int], sizes: list[int], capacity: int) -> tuple[int, int]:
    """(misses, bytes missed) of one replay."""
    return _replay(policy, ids, sizes, capacity)
