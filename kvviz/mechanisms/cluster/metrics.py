"""A cluster run's metrics, at top level (one run = one router), named as the prefix cache's.

- TTFT per served request = its first token (prefill instance) − its arrival; mean, p50, p90,
  p99 (ms). tpot_ms: (end − first token) / (reply − 1) over requests with a reply > 1 token.
  e2e_mean_ms: end − arrival.
- token_hit_rate = hit tokens / prompt tokens of the served requests; block_hit_ratio = hit
  blocks / cacheable blocks looked up (served requests). A hit is the longest prefix its
  instance held at admission (a block fetched from a peer or the pool is held by then).
- hit_split (token-weighted and block-weighted, of the served requests' prompt tokens /
  cacheable blocks): local (the instance's own), peer (fetched from another instance by the
  router's decision), pool (fetched from the shared pool), miss (the rest;
  tokens outside cacheable blocks count as miss).
- throughput_tokens_per_s: reply tokens / (last end − first arrival).
- rejected: requests refused by SLO admission (never served).
- per_instance: role, requests, GPU busy seconds, prefill tokens computed, preemptions, and (prefill
  instances) token hit rate and hit blocks.
- recomputed_hit_blocks / _tokens: hit blocks the load-or-recompute choice recomputed (still hits).
- gpu_busy_s, prefill_gpu_s: GPU busy time summed over every instance (all; prefill iterations).
- load_imbalance: max / mean GPU busy time over the routed (prefill) instances.
- links: bytes over the peer links, the busiest peer link's busy seconds, fetches from peers,
  bytes to and from the shared pool.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...serving.request_metrics import mean, percentile, tpot_ms, ttft_ms
from . import cache

if TYPE_CHECKING:
    from .run import ClusterRun


def metrics(run: ClusterRun) -> dict[str, Any]:
    work = run.work
    n = len(work)
    served = np.array([not r for r in run.rejected], dtype=bool)
    where = np.array(run.where, dtype=np.int64)
    arrival = np.array(run.times, dtype=np.int64)
    first = np.zeros(n, dtype=np.int64)
    end = np.zeros(n, dtype=np.int64)
    hits = np.zeros(n, dtype=np.int64)
    local = np.zeros(n, dtype=np.int64)  # hit blocks its instance held itself at admission
    for inst in run.inst[:run.n_route]:  # each instance's per-job state holds its own jobs (jobs.py)
        js = [j for j in inst.jobs if where[j] == inst.index]
        b, c = inst.batcher, inst.cache
        assert c is not None  # a routed (prefill) instance has its cache
        first[js] = [b.first_token[j] for j in js]
        end[js] = [b.end[j] for j in js]
        hits[js] = [c.hits.get(j, 0) for j in js]
        local[js] = [c.own_hits.get(j, 0) for j in js]
    dec = np.array(run.decoder, dtype=np.int64)
    for inst in run.inst[run.n_route:]:
        js = [j for j in inst.jobs if dec[j] == inst.index]
        end[js] = [inst.batcher.end[j] for j in js]
    ttft, tpot = ttft_ms(arrival, first, served), tpot_ms(first, end, work.output_tokens, served)
    e2e = (end - arrival)[served] / 1e6
    cum = np.asarray(run.cum_tokens, dtype=np.int64)
    off = work.offsets
    hit_tok = cum[off[:-1] + hits] - cum[off[:-1]]
    peer = np.clip(hits - local, 0, np.array(run.fetched, dtype=np.int64))  # fetched: peer first, then pool
    peer_tok = cum[off[:-1] + local + peer] - cum[off[:-1] + local]
    pool = np.clip(hits - local - peer, 0, np.array(run.pooled, dtype=np.int64))
    pool_tok = cum[off[:-1] + local + peer + pool] - cum[off[:-1] + local + peer]
    prompt = int(work.input_tokens[served].sum())
    blocks = int(np.diff(off)[served].sum())
    hit_t, hit_b = int(hit_tok[served].sum()), int(hits[served].sum())
    peer_t, peer_b = int(peer_tok[served].sum()), int(peer[served].sum())
    pool_t, pool_b = int(pool_tok[served].sum()), int(pool[served].sum())

    def share(a: float, b: float) -> float:
        return a / b if b else 0.0

    span_ns = int(end[served].max() - arrival[served].min()) if served.any() else 0
    routed = run.inst[:run.n_route]
    caches = [c for c in (i.cache for i in routed) if c is not None]  # every routed instance has one
    busy = np.array([i.batcher.busy_ns for i in routed], dtype=np.float64) / 1e9
    per_instance = []
    for inst in run.inst:
        b = inst.batcher
        mine = (where == inst.index) & served
        row = {"index": inst.index, "role": inst.role, "requests": inst.served, "busy_s": b.busy_ns / 1e9,
               "prefill_tokens_computed": b.prefill_tokens, "preemptions": b.preemptions}
        if inst.cache is not None:
            hb, ht = cache.counts(inst.cache)
            row["token_hit_rate"] = share(int(hit_tok[mine].sum()), int(work.input_tokens[mine].sum()))
            row["hit_blocks"] = int(sum(hb))
        per_instance.append(row)
    ends = run.peers.out + run.peers.inn
    notes = sorted({c.note for c in caches if c.note})
    m: dict[str, Any] = {
        "routing_policy": run.sc.routing.policy,
        "instances": len(run.inst),
        "prefill_instances": run.n_route if run.split else 0,
        "requests": n,
        "served": int(served.sum()),
        "rejected": int(n - served.sum()),
        "mean_ttft_ms": mean(ttft),
        "ttft_p50_ms": percentile(ttft, 50),
        "ttft_p90_ms": percentile(ttft, 90),
        "ttft_p99_ms": percentile(ttft, 99),
        "tpot_ms": mean(tpot),
        "e2e_mean_ms": float(e2e.mean()) if len(e2e) else None,
        "token_hit_rate": share(hit_t, prompt),
        "block_hit_ratio": share(hit_b, blocks),
        "hit_split": {
            "tokens": {"local": share(hit_t - peer_t - pool_t, prompt), "peer": share(peer_t, prompt),
                       "pool": share(pool_t, prompt), "miss": share(prompt - hit_t, prompt)},
            "blocks": {"local": share(hit_b - peer_b - pool_b, blocks), "peer": share(peer_b, blocks),
                       "pool": share(pool_b, blocks), "miss": share(blocks - hit_b, blocks)},
        },
        "throughput_tokens_per_s": float(work.output_tokens[served].sum()) / (span_ns / 1e9) if span_ns else None,
        "makespan_s": span_ns / 1e9,
        "recomputed_hit_blocks": int(sum(c.recomputed_blocks for c in caches)),
        "recomputed_hit_tokens": int(sum(c.recomputed_tokens for c in caches)),
        "gpu_busy_s": float(sum(i.batcher.busy_ns for i in run.inst)) / 1e9,
        "prefill_gpu_s": float(sum(i.batcher.prefill_ns for i in run.inst)) / 1e9,
        "load_imbalance": float(busy.max() / busy.mean()) if len(busy) and busy.mean() > 0 else None,
        "per_instance": per_instance,
        "links": {"peer_bytes": int(sum(e.bytes for e in run.peers.out)),
                  "peer_busiest_s": max((e.busy_ns for e in ends), default=0) / 1e9,
                  "fetches": int(sum(1 for f in run.fetched if f)),
                  "pool_bytes": int(sum(lk.bytes for lk in run.pool.links)) if run.pool is not None else 0},
        "workload": {"source": work.source, "requests": n, "block_lookups": len(work.ids),
                     "input_tokens": int(work.input_tokens.sum()), "block_tokens": work.block_tokens,
                     "kv_bytes_per_token": run.kv},
    }
    if notes:  # the compiled block cache could not run: the Python one did, and says why
        m["notes"] = notes
    return m
