"""The prefix cache's time cost model: what a run costs, from counts known before it starts, in
CPU seconds of one process on the machine where kvviz.calibration's REFERENCE_PROBE_US_PER_TURN
was measured (kvviz.calibration scales them by this machine's probe).

What a run's time scales with (profiled with cProfile on scenarios/prefix_cache_tiers.toml and
the Mooncake trace timed, benchmarks/bench_estimate_prefix.py):
- every block lookup: the lookup, placement and eviction bookkeeping (LOOKUP_S);
- the timed engine, every request: its events, admission and decode spans (REQUEST_S);
- the timed engine, the victim search past pinned blocks. A running request's blocks stay
  pinned in HBM until its last token, and the victim is the first unpinned block in eviction
  order: every policy sets the pinned blocks it meets aside (LRU and FIFO from the front of
  their order, the lazy heaps from their top) and walks them again once per request end (and
  per queue change with prefetch, which also protects the queued requests' blocks). Until
  issue 30 LRU and FIFO walked them on every block placed into a full HBM. The pinned blocks
  are bounded by HBM's capacity and by what the running batch can hold
  (serving.running_kv_gb, serving.max_batch of mean prompts): `held_blocks`.
So a timed run costs lookups × LOOKUP_S + requests × REQUEST_S + walked × SCAN_S, the walk
being requests × HEAP_EPOCHS × held. ASSUMPTION (ours):
the running batch fills to its bound, as it does when the GPUs are the bottleneck (both
bundled timed runs); a lightly loaded run with an HBM far larger than its running requests'
blocks walks fewer and is estimated long.

Re-measure with `benchmarks/bench_estimate_prefix.py --constants`.
"""
from __future__ import annotations

# Measured with `benchmarks/bench_estimate_prefix.py --constants --sizes 50,200,1000` (2026-12-02
# ~06:30 UTC, 2 shared cores under other sessions' load, 21 probes median 17.4 µs per turn, CPU
# times × 0.92 to the reference probe), after issue 30 (LRU/FIFO set pinned blocks aside; load or
# recompute on): each timed run of the Mooncake trace (serving.timing = true: 3,993 requests,
# 117,888 lookups, 476 HBM blocks) and of prefix_cache_tiers at 50/200/1,000 requests
# (23,792-487,770 lookups, 381 HBM blocks), lru, lru with prefetch, fifo, leaf_lru, belady, one
# round each:
# - LOOKUP_S: the tiers runs at 1,000 requests, 0.75-1.38 s: 1.4 (fifo) to 2.5 µs (belady) per
#   lookup, 2 µs kept; with prefetch 1.14 s, ~2.1 µs (4 µs before: the walk's share, now apart);
# - REQUEST_S: Mooncake's 0.48-0.85 s over 3,993 requests leaves ~60 µs per request (kept);
# - ordered walks (the set-aside pinned blocks, again once per request end and per queue change
#   with prefetch): not measured apart; two dict operations and a move per block, ~0.1 µs, which
#   puts lru and lru+pf at 0.8× on both workloads. Before, 20-55 ns per block per placement into
#   HBM, 240-313 blocks per lookup: most of a run;
# - heap walks: Mooncake belady popped ~190 entries per request of 476 held (cProfile: 767k
#   heappops), ~0.2 µs per held block per request (kept).
# The untimed replay, per block lookup per run (kept: ~1 µs measured, 2 µs on the safe side).
UNTIMED_LOOKUP_S = 2e-6
# Reading the generator's or trace's workload and preparing it: 0.43-0.77 µs per lookup.
PREPARE_S = 0.6e-6
LOOKUP_S = {False: 2.0e-6, True: 2.5e-6}   # the timed engine, per lookup: without / with prefetch
REQUEST_S = 60e-6                           # the timed engine, per request
# per pinned block walked, once per epoch: LRU/FIFO set it aside and put it back at the front of
# their order; a heap pops and pushes it back
SCAN_S = {("ordered", False): 0.1e-6, ("ordered", True): 0.1e-6, ("heap", False): 0.2e-6, ("heap", True): 0.2e-6}
HEAP_EPOCHS = {False: 1, True: 3}  # walks of the held set per request: at its end; and its arrival and admission
RECORD = 1.3  # the recorded run over an unrecorded one: ASSUMPTION, AttentionStore's reference figure (not measured here)


def scan_kind(eviction: str) -> str:
    return "heap" if eviction in ("leaf_lru", "belady") else "ordered"


def held_blocks(hbm_blocks: int, running_kv_tokens: int, max_batch: int, tokens_per_request: float,
                block_tokens: int) -> float:
    """Pinned blocks a victim search walks: HBM's capacity, or fewer when the running batch
    (its token pool, or max_batch mean prompts) holds fewer blocks."""
    running = min(running_kv_tokens, max_batch * tokens_per_request) / block_tokens
    return max(1.0, min(hbm_blocks, running))


def timed_run_s(eviction: str, prefetch: bool, lookups: float, requests: float, held: float,
                record: bool = False) -> float:
    """One timed run's CPU seconds at the reference probe."""
    kind = scan_kind(eviction)
    walked = requests * HEAP_EPOCHS[prefetch] * held
    s = lookups * LOOKUP_S[prefetch] + requests * REQUEST_S + walked * SCAN_S[kind, prefetch]
    return s * (RECORD if record else 1.0)
