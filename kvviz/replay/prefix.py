"""Block-level prefix caching through one cache of whole blocks, no timing (`kvviz replay
--prefix`): the single-tier special case of the prefix_cache mechanism, run by the same code
(kvviz.mechanisms.prefix_cache.engine.replay with one tier, promote = copy, write = back,
admission = always), so `kvviz replay --prefix` and `kvviz run` on a one-tier prefix_cache
scenario with `cache.partial_block = true` give the same counts for every policy (tests hold
them equal, and to a literal oracle in tests/test_replay_prefix.py).

Semantics (issue 30, item 4). Requests in file order; the cache holds whole blocks, capacity C
blocks (or infinite). For each request:
1. its hit = the longest prefix of its `hash_ids` resident when it arrives (the chain stops at
   the first block not resident; a resident block behind it is not a hit);
2. then every block of the request, in order, is touched if resident or inserted if not,
   evicting one block per insertion once the cache holds C;
3. pinning (`--pin-running`, the default; `--no-pin-running`; the scenario's
   `cache.pin_running`, same default): a block the request has reached cannot be evicted while
   the request runs, as vLLM holds a running request's blocks. A request with more distinct
   blocks than C keeps its first C and its later new blocks are not inserted (misses, as any
   block not resident). Without pinning nothing is held: the request's insertions may evict its
   own earlier blocks, as a plain cache on the stream of blocks does. Policies
   (kvviz.serving.eviction, one file each; kvviz.mechanisms.prefix_cache.evictors adapts them):
   - lru: touching moves the block to most recent; evicts the least recently touched.
   - fifo: touching changes nothing; evicts the earliest inserted block.
   - leaf_lru: the least recently touched block with no child resident (a radix tree's leaf).
   - belady (the offline reference, clairvoyant over the trace): the resident block or the
     entering one, whichever's next use in the trace's stream of blocks (all requests'
     hash_ids one after another) is farthest (never again = farthest), is left out: an entering
     block used furthest ahead is not inserted (Belady's MIN with bypass). It IGNORES pinning:
     it may evict any block, so it is the bound every policy is compared with. Next use in
     stream positions, not request indices, so a later block of a future request goes first:
     a prefix chain needs its head more than its tail. On hash-chained traces the blocks a
     request has reached are the entering block's ancestors, each used again before it, so
     belady never evicts one of them there: pinning changes nothing for it (no pinned variant).
   Every other policy's insertion is forced (no bypass but the pins').

Belady is not provably optimal here: its proof (furthest next use minimises misses) is for
independent objects, and under prefix counting a block hits only if every block before it in
its request hits. An exact optimum (every eviction choice searched, leaving the entering block
out allowed: tests/prefix_optimum.py) on tiny random traces, 3-6 requests of 1-4 blocks,
C = 1..4, 4,000 cases each (the measurement behind tests/test_prefix_semantics.py):
- hash-chained (an id names its whole prefix, as Mooncake's and vLLM's hashes): belady met the
  optimum in every case (and in 6,000 more with 3-8 requests of 1-6 blocks); no policy, pinned
  or not, beat it;
- any ids in any order: belady fell short in 411 of 4,000 cases (10.3%), by 1.44 blocks on
  average (at most 5), 5.2% of the optimum's hits; lru, fifo or leaf_lru (pinned or not) beat it
  in 58 (1.5%).
With insertion forced (the entering block always kept, which the issue first measured) belady
fell short of the forced optimum in 3.3% of the chained cases and 4.7% of the others, and the
pinned policies beat it in 24% of the chained cases, each one a request longer than C (pins keep
a request's head, forced insertion keeps its tail): the reason the entering block is a
candidate. On the Mooncake conversation trace belady is above lru, fifo and leaf_lru at 1,000,
5,000 and 20,000 blocks (55,019, 98,448 and 105,710 hit blocks; forced, 54,994 and 98,444 at
1,000 and 5,000; the former pinned one, 51,705 and 97,995).

Reported per policy and capacity: block_hit_ratio = hit blocks / requested blocks (every
hash id counts, the partial last block too), request_hit_ratio = requests with >= 1 hit block /
requests (a request with no blocks counts, and never hits).

LRU and FIFO in compiled code: the compiled block cache's `prefix_counts` (the cache `kvviz run`
uses, its lru and fifo those of serving/native/policies.pxi) takes every request in one call, one
pass over the stream per capacity, pinned or not, the registry's policies exactly (tests hold
them equal on random streams); `benchmarks/bench_replay_prefix.py --versus` prints its CPU
seconds per capacity. Where it is not built (no C compiler) or stale, LRU is counted as below
and `lru_note()` says why.

Belady (and FIFO, or LRU below the longest request, where that pass cannot run) run the
prefix_cache engine on the compiled block cache (kvviz/serving/native/_block_cache.pyx, the cache `kvviz run` uses; equal
counts to the Python one: tests/test_block_cache_twin.py); leaf_lru, which has no compiled twin,
and any policy where that cache cannot run, on the Python one (`cache_note()` says why).

LRU, every capacity in one pass, where it is exact. Plain LRU on the block stream holds the C
most recently touched blocks, so block x is resident at the start of request r at C iff D ≤ C,
D = the number of distinct blocks touched since x's last touch, itself included (its stack
distance, Mattson et al. 1970). The prefix rule composes with that: while the blocks before
position j of request r were all resident, touching them evicted nothing, so the cache at j is
the cache at r's start, and block j is resident at the start iff its stack distance at j, D_j,
is <= C. Hence block j is a hit at C iff max(D_1..D_j) over the request <= C: one pass computing
the D_j (numpy, kvviz.replay.stack_distance) and a running maximum per request answer every
capacity. Pinned LRU is plain LRU while every request has at most C distinct blocks: the pinned
blocks are the ones the request touched, the most recent of all, so the least recent block is
pinned only when every resident block is, i.e. when the request reaches its (C + 1)-th distinct
block. So with pinning the curve answers the capacities >= the longest request (in distinct
blocks), and the engine the smaller ones (`longest_request`).

Runs make that pass small: a block b that always comes right after a (in the same request), where
a is always followed by b, is touched with a every time, so its D equals a's. Such chains (a
document's blocks, a system prompt) collapse into one object of their length, and the byte
stack distance of that object (its own length plus the lengths of the distinct runs since) is
the D of its first block. On the bundled Mooncake trace 121,877 blocks become 6,157 runs.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from ..mechanisms.prefix_cache import engine
from ..mechanisms.prefix_cache.evictors import POLICIES  # a live view of the registry
from ..mechanisms.prefix_cache.workload import Blocks
from ..requests.common import first_request_ids
from ..requests.prompts import PromptRequests
from ..serving.tiered_cache import fallback_note
from . import native
from .prefix_result import BLOCK_CACHE, ENGINE, STACK, PrefixResult  # noqa: F401 (PrefixResult: its home was here)
from .stack_distance import byte_stack_distances

ALIASES = {"opt": "belady", "min": "belady"}


def block_ids(reqs: PromptRequests) -> np.ndarray:
    """The hash ids as small non-negative ints (for arrays indexed by block): as they are when
    they already are (Mooncake's and Bailian's are remapped to 0..k), else numbered by first
    appearance."""
    h = reqs.hashes
    return h if _dense(h) else first_request_ids(h)


def _dense(h: np.ndarray) -> bool:
    """Ids small and non-negative enough to index an array by (or none at all)."""
    return not len(h) or (int(h.min()) >= 0 and int(h.max()) < 4 * len(h) + 1024)


def distinct_blocks(reqs: PromptRequests) -> int:
    """How many different hash ids the trace has: counted, not listed (np.unique sorts and
    builds the array of uniques, 1.1-1.4 s for the 2.9M ids of the 10x conversation trace). Ids
    already small non-negative ints (Mooncake's, Bailian's): the non-zero entries of a bincount,
    O(n); any other ids: a sort, then the places where the value changes."""
    h = reqs.hashes
    if not len(h):
        return 0
    if _dense(h):
        return int(np.count_nonzero(np.bincount(h)))
    s = np.sort(h)
    return int(np.count_nonzero(s[1:] != s[:-1])) + 1


def request_of_block(reqs: PromptRequests) -> np.ndarray:
    return np.repeat(np.arange(len(reqs), dtype=np.int64), reqs.hash_counts)


def _sole(x: np.ndarray, other: np.ndarray, k: int) -> np.ndarray:
    """Per block id, the one value `other` takes at every occurrence of it, or -1 where
    occurrences differ."""
    out = np.full(k, -1, dtype=np.int64)
    out[x] = other                        # some occurrence's value (numpy keeps the last)
    out[x[other != out[x]]] = -1          # any occurrence that disagrees: none
    return out


def runs(x: np.ndarray, req: np.ndarray) -> np.ndarray:
    """Start positions of the maximal runs a b c ... in which, within a request, each block is
    always followed by the next and the next always preceded by it (over the whole stream)."""
    n = len(x)
    if n < 2:
        return np.zeros(n, dtype=np.int64)
    k = int(x.max()) + 1
    same = req[1:] == req[:-1]
    after = np.append(np.where(same, x[1:], -1), -1)      # the block after, within the request
    before = np.concatenate(([-1], np.where(same, x[:-1], -1)))
    succ, pred = _sole(x, after, k), _sole(x, before, k)
    a, b = x[:-1], x[1:]
    joined = same & (succ[a] == b) & (pred[b] == a)
    return np.flatnonzero(np.concatenate(([True], ~joined)))


def lru_distances(reqs: PromptRequests) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(E, sizes, first): per run of blocks, E = the running maximum over its request of the
    stack distances (n + 1 for a block never seen before), so its blocks hit at C iff E <= C;
    its length in blocks; and whether it opens its request."""
    x = block_ids(reqs)
    n = len(x)
    req = request_of_block(reqs)
    starts = runs(x, req)
    sizes = np.diff(np.append(starts, n))
    d = byte_stack_distances(x[starts], sizes)
    never = n + 1
    d[d < 0] = never
    r = req[starts]
    # A running maximum that restarts per request: each request's values sit above all earlier
    # requests' (offset r × (never + 1)), so one global maximum.accumulate does it.
    big = np.int64(never + 1)
    e = np.maximum.accumulate(r * big + d) - r * big
    first = np.concatenate(([True], r[1:] != r[:-1])) if len(r) else np.zeros(0, bool)
    return e, sizes, first


def lru_counts(reqs: PromptRequests, capacities: list[int | None]) -> list[tuple[int, int]]:
    """(hit blocks, hit requests) of prefix LRU at every capacity (None: infinite), one pass."""
    e, sizes, first = lru_distances(reqs)
    order = np.argsort(e, kind="stable")
    e_sorted = e[order]
    blocks_upto = np.concatenate(([0], np.cumsum(sizes[order])))
    heads = np.sort(e[first])
    never = len(reqs.hashes) + 1
    out = []
    for c in capacities:
        limit = never - 1 if c is None else min(c, never - 1)
        out.append((int(blocks_upto[np.searchsorted(e_sorted, limit, side="right")]),
                    int(np.searchsorted(heads, limit, side="right"))))
    return out


def lru_note(policies: Iterable[str]) -> str:
    """Why LRU among `policies` is not counted by the compiled pass, in one line; "" if it is
    (or LRU is not asked for)."""
    return native.why_not() if "lru" in policies else ""


def canonical(name: str, source: str = "--policy") -> str:
    from ..errors import ScenarioError
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in POLICIES:
        raise ScenarioError(f"unknown policy {name!r} for --prefix (one of: {', '.join(POLICIES)})", source)
    return key


def longest_request(reqs: PromptRequests) -> int:
    """The most distinct blocks any one request has (0 for none)."""
    x = block_ids(reqs)
    if not len(x):
        return 0
    req = request_of_block(reqs)
    order = np.lexsort((x, req))
    xs, rs = x[order], req[order]
    new = np.concatenate(([True], (xs[1:] != xs[:-1]) | (rs[1:] != rs[:-1])))
    return int(np.bincount(rs[new]).max())


def prepared(reqs: PromptRequests, policies: Iterable[str]) -> engine.Prepared:
    """The engine's inputs for these requests: every hash id a block (the partial last one too)."""
    blocks = Blocks(block_ids(reqs), reqs.hash_offsets, reqs.input_tokens, np.zeros(len(reqs)),
                    reqs.block_tokens or 1, "kvviz replay --prefix")
    return engine.prepare(blocks, set(policies), "always")


def engine_counts(prep: engine.Prepared, policy: str, cap: int | None, pin: bool,
                  compiled: bool = False) -> tuple[tuple[int, int], str]:
    """((hit blocks, hit requests), the engine that counted them) of the prefix_cache engine's
    single-tier replay: on the Python block cache, or (`compiled`) on its compiled twin where
    the policy has one and the build runs (the same counts; `cache_note` says why not)."""
    if cap is None:  # infinite: nothing is ever evicted
        cap = len(prep.ids) + 1
    out = engine.replay(prep, [cap], [policy], False, False, "always", pin=pin, compiled=compiled)
    return (out.hit_blocks[0], out.hit_requests[0]), BLOCK_CACHE if compiled and not out.note else ENGINE


def cache_note(policies: Iterable[str]) -> str:
    """Why a policy other than LRU among `policies` is counted on the Python block cache rather
    than its compiled twin, in one line; "" if none is (LRU has its own pass: `lru_note`)."""
    return fallback_note(p for p in policies if p != "lru")


def prefix_replay(reqs: PromptRequests, policies: Iterable[str], capacities: list[int | None],
                  on_result: Callable[[PrefixResult], object] | None = None, pin: bool = True) -> list[PrefixResult]:
    """Every policy at every capacity (blocks; None infinite), policy-major; `pin`: whether a
    request holds the blocks it has reached (the semantics above). `on_result(result)` is called
    as each is known."""
    names = [canonical(p) for p in policies]
    caps = list(capacities)
    total, n_req = len(reqs.hashes), len(reqs)
    out: list[PrefixResult] = []

    def deliver(policy: str, cap: int | None, counts: tuple[int, int], how: str) -> None:
        res = PrefixResult(policy, cap, n_req, total, counts[0], counts[1], how, pin)
        out.append(res)
        if on_result:
            on_result(res)

    compiled = native.prefix_pass() if {"lru", "fifo"} & set(names) else None
    one_pass: dict[tuple[str, str], tuple[tuple[int, int], str]] = {}  # (policy, str(capacity)) -> (counts, how)
    if compiled is not None:
        x = block_ids(reqs)
        for policy in {"lru", "fifo"} & set(names):
            counts = compiled.prefix_counts(x, reqs.hash_counts, caps, pin, int(x.max()) + 1 if len(x) else 0, policy)
            one_pass.update({(policy, str(c)): (got, BLOCK_CACHE) for c, got in zip(caps, counts)})
    elif "lru" in names:
        # LRU's one-pass curve is exact for every capacity without pins, and with them for the
        # capacities no request outgrows (the docstring's proof)
        longest = longest_request(reqs) if pin else 0
        curve = [c for c in caps if c is None or c >= longest]
        one_pass = {("lru", str(c)): (got, STACK) for c, got in zip(curve, lru_counts(reqs, curve))} if curve else {}
    prep = None
    for policy in names:
        for cap in caps:
            if (policy, str(cap)) in one_pass:
                deliver(policy, cap, *one_pass[policy, str(cap)])
                continue
            if prep is None:
                prep = prepared(reqs, names)
            deliver(policy, cap, *engine_counts(prep, policy, cap, pin, compiled=True))
    return out
