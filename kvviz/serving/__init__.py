"""The serving core: what one LLM inference instance is, shared by every mechanism that serves
requests in time.

A serving instance is a tensor-parallel GPU group running iteration-level continuous batching
over a waiting queue of requests (jobs). Requests are released by a rule, admitted while their
KV fits the HBM pool, prefilled (their cached history attended, loaded layer by layer, or
recomputed) and decoded one token per iteration; a KV store, the mechanism's own, says where an
admitted request's history is and how long its load takes. The parts, one module each:

- batching.py: the continuous batcher and its BatchConfig (what it reads of a scenario);
- kv_source.py: the seam between the batcher and a KV store (the calls it makes) and the
  outcome codes a store answers an admission with (FIRST, MISS, ..., HIT_HBM, ...);
- roofline.py: iteration times per model and GPU group (prefill and decode), and MFU calibration;
- model_presets.py: the models' architectures and the GPU setups they are served on;
- event_loop.py: the run's event loop (kvviz.engine.EventLoop's order, a cheaper hot path);
- arrivals.py: release rules that re-time a workload's turns (interleaved, saturated,
  conversation_poisson);
- layerwise_prefill.py: when a prefill iteration whose layers wait on loads ends (closed form);
- load_or_recompute.py: load a history from a slow tier, or recompute it when that is faster;
- links.py: links between tiers as shared resources (transfers queue under a named rule).
- overload.py: whether a served run kept up with its arrivals (the rule and the run's note).
- request_metrics.py: per-request latency figures (TTFT, TPOT, their means and percentiles).
- tiered_cache.py: the tiered block cache (tiers, placement, admission, eviction through
  eviction/, pins, prefetch protection, the load-or-recompute cut), written once;
- eviction/: the eviction policies, one file each, and their registry;
- native/: compiled pieces: the block cache's twin (_block_cache.pyx), the compiled lru, fifo and
  belady (policies.pxi), the event loop and roofline, which AttentionStore's compiled engine
  includes too, and the loaders' source hash.

Clients: AttentionStore (kvviz.mechanisms.attention_store: its session store over DRAM and SSD,
its Python engine and the compiled twin of this core in its native/ package) and the prefix
cache's timed engine (kvviz.mechanisms.prefix_cache: its block store over ordered tiers and
links). The serving core never imports a mechanism, and mechanisms never import one another
(import contracts in pyproject.toml): what two of them share lives here.
"""
