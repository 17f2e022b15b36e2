"""Block-level prefix caching through one cache of whole blocks, no timing (`kvviz replay
--prefix`): the single-tier special case of the prefix_cache mechanism, with semantics simple
enough for a twenty-line oracle to check exactly (tests/test_replay_prefix.py holds them to it).

Semantics (issue 21, item 8). Requests in file order; the cache holds whole blocks, capacity C
blocks (or infinite). For each request:
1. its hit = the longest prefix of its `hash_ids` resident when it arrives (the chain stops at
   the first block not resident; a resident block behind it is not a hit);
2. then every block of the request, in order, is touched if resident or inserted if not,
   evicting one block per insertion once the cache holds C:
   - lru: touching moves the block to most recent; evicts the least recently touched. A request
     longer than C evicts its own first blocks (plain LRU on the stream of blocks).
   - fifo: touching changes nothing; evicts the earliest inserted block.
   - belady (an offline bound, clairvoyant over the trace): touching sets the block's next use
     to its next position in the trace's stream of blocks (all requests' hash_ids one after
     another); evicts the resident block whose next use is farthest (never again = farthest).
     ASSUMPTION (ours): the blocks of the current request are pinned while it is inserted: a
     request with more distinct blocks than C keeps its first C and the rest are not inserted
     (misses, as any block not resident). Insertion is otherwise forced, as in LRU and FIFO.
     Next use in stream positions, not request indices, so a later block of a future request
     goes first: a prefix chain needs its head more than its tail. It is not optimal for prefix
     hits (Belady's proof is for independent objects), only a reference the tests find >= LRU.
Reported per policy and capacity: block_hit_ratio = hit blocks / requested blocks (every
hash id counts, the partial last block too), request_hit_ratio = requests with >= 1 hit block /
requests (a request with no blocks counts, and never hits).

LRU, every capacity in one pass. LRU on the block stream holds the C most recently touched
blocks, so block x is resident at the start of request r at C iff D ≤ C, D = the number of
distinct blocks touched since x's last touch, itself included (its stack distance, Mattson et
al. 1970). The prefix rule composes with that: while the blocks before position j of request r
were all resident, touching them evicted nothing, so the cache at j is the cache at r's start,
and block j is resident at the start iff its stack distance at j, D_j, is <= C. Hence block j
is a hit at C iff max(D_1..D_j) over the request <= C: one pass computing the D_j (numpy,
kvviz.replay.stack_distance) and a running maximum per request answer every capacity.

Runs make that pass small: a block b that always comes right after a (in the same request), where
a is always followed by b, is touched with a every time, so its D equals a's. Such chains (a
document's blocks, a system prompt) collapse into one object of their length, and the byte
stack distance of that object (its own length plus the lengths of the distinct runs since) is
the D of its first block. On the bundled Mooncake trace 121,877 blocks become 6,157 runs.
FIFO and Belady replay the stream per capacity (kvviz.replay.prefix_kernels).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..requests.common import first_request_ids
from ..requests.prompts import PromptRequests
from . import prefix_kernels
from .stack_distance import byte_stack_distances

POLICIES = {
    "lru": "evicts the block touched longest ago (all capacities in one stack-distance pass)",
    "fifo": "evicts the block inserted earliest; a touch changes nothing",
    "belady": "evicts the block whose next use in the stream is farthest (offline; the current request's "
              "blocks pinned)",
}
ALIASES = {"opt": "belady", "min": "belady"}
STACK = "stack distances"
KERNEL = "python"


@dataclass(frozen=True)
class PrefixResult:
    policy: str
    capacity: int | None      # blocks; None: infinite
    requests: int
    blocks: int               # requested blocks (every hash id of every request)
    hit_blocks: int
    hit_requests: int         # requests with >= 1 hit block
    engine: str = ""

    @property
    def block_hit_ratio(self) -> float:
        return self.hit_blocks / self.blocks if self.blocks else 0.0

    @property
    def request_hit_ratio(self) -> float:
        return self.hit_requests / self.requests if self.requests else 0.0

    def to_dict(self) -> dict:
        return {"policy": self.policy, "capacity": self.capacity, "block_hit_ratio": self.block_hit_ratio,
                "request_hit_ratio": self.request_hit_ratio, "requests": self.requests, "blocks": self.blocks,
                "hit_blocks": self.hit_blocks, "hit_requests": self.hit_requests, "engine": self.engine}


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


def canonical(name: str, source: str = "--policy") -> str:
    from ..errors import ScenarioError
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in POLICIES:
        raise ScenarioError(f"unknown policy {name!r} for --prefix (one of: {', '.join(POLICIES)})", source)
    return key


def prefix_replay(reqs: PromptRequests, policies, capacities: list[int | None],
                  on_result=None) -> list[PrefixResult]:
    """Every policy at every capacity (blocks; None infinite), policy-major. `on_result(result)`
    is called as each is known."""
    names = [canonical(p) for p in policies]
    caps = list(capacities)
    total, n_req = len(reqs.hashes), len(reqs)
    out = []

    def deliver(policy, cap, counts, engine):
        res = PrefixResult(policy, cap, n_req, total, counts[0], counts[1], engine)
        out.append(res)
        if on_result:
            on_result(res)

    lru = dict(zip(map(str, caps), lru_counts(reqs, caps))) if "lru" in names else {}
    stream = None
    for policy in names:
        for cap in caps:
            if policy == "lru":
                deliver(policy, cap, lru[str(cap)], STACK)
                continue
            if stream is None:
                stream = prefix_kernels.Stream(block_ids(reqs).tolist(), reqs.hash_offsets.tolist())
            deliver(policy, cap, prefix_kernels.run(policy, stream, cap), KERNEL)
    return out
