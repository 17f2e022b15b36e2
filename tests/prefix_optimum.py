"""The exact optimum of prefix hits on tiny traces, for holding `belady` to it: a search over
every eviction choice, one cache state at a time.

The model is the prefix cache's (kvviz.mechanisms.prefix_cache.engine, one tier): requests in
order; a request's hit is the longest prefix of its blocks resident when it arrives; then each
of its blocks, in order, is kept if resident, else inserted, evicting one resident block of the
optimiser's choice once the cache holds `cap` (no pins: any block may go, the request's own
too). With `bypass` the optimiser may also leave a new block out when the cache is full, which
a pinned cache does when every resident block is pinned: that optimum bounds every policy,
pinned or not; the forced one (`bypass` false) is the best `belady`'s own choices could do.

Only the cache's contents between requests matter (hits are counted at arrival), so the search
keeps, per reachable set of resident blocks, the most hits that reach it. Exponential in the
capacity and the number of distinct blocks: a few requests, capacities 1-4.
"""
from __future__ import annotations


def request_ends(state: frozenset, request, cap: int, bypass: bool) -> set:
    """Every set of resident blocks the request can leave behind, starting from `state`."""
    states = {state}
    for b in request:
        nxt = set()
        for s in states:
            if b in s:
                nxt.add(s)
            elif len(s) < cap:
                nxt.add(s | {b})
            else:
                nxt.update((s - {v}) | {b} for v in s)
                if bypass:
                    nxt.add(s)
        states = nxt
    return states


def prefix_hits(state: frozenset, request) -> int:
    h = 0
    while h < len(request) and request[h] in state:
        h += 1
    return h


def optimum(requests, cap: int, bypass: bool = False) -> int:
    """The most hit blocks any sequence of eviction choices gets (see the module's model)."""
    best = {frozenset(): 0}
    for r in requests:
        nxt: dict = {}
        for s, score in best.items():
            total = score + prefix_hits(s, r)
            for t in request_ends(s, r, cap, bypass):
                if nxt.get(t, -1) < total:
                    nxt[t] = total
        best = nxt
    return max(best.values())
