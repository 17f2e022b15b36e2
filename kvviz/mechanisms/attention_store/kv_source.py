"""The seam between the continuous-batching engine (batching.py) and a KV store: what the
batcher asks, and nothing else. AttentionStore's session store (store.py with host_load.py)
and prefix_cache's block store (prefix_cache/timed_store.py) both implement it.

- `stores`: whether finished jobs save new KV (the batcher then books each save HBM→DRAM at
  `BatchConfig.save_gbps`, async or sync, and `_new_kv` says how much).
- `arrived(j)`: job j joined the waiting queue.
- `admit(j, hbm_hit)`: j enters the running batch now. The answer (outcome, bytes a, bytes b,
  ready): outcome >= HIT_HBM means the job's cached tokens (`run.keep[j]`) are attended, not
  recomputed, and only `run.inn[j]` tokens are computed; a and b are bytes to load into HBM
  during the prefill iteration (what they are is the store's: DRAM and SSD bytes for
  AttentionStore, bytes over any tier link for prefix_cache), not before `ready`.
- `load(jobs, a, b, ready, S, comp_ns)`: the iteration starting at S computes `comp_ns` and
  its jobs `jobs` load a + b bytes (the sums of admit's answers) layer by layer: the answer is
  (end of the iteration, ns its layers waited on loads, the layer schedule for the trace:
  (T0, a, c, k, S_c) of `layers.prefill_end`, or None).
- `finished(j)`: called by the run when j's last token is out (the run's `job_done`).
"""
from __future__ import annotations

from typing import Protocol


class KVSource(Protocol):
    stores: bool

    def arrived(self, j: int) -> None: ...

    def admit(self, j: int, hbm_hit: bool) -> tuple[int, int, int, int]: ...

    def load(self, jobs: list[int], a: int, b: int, ready: int, S: int, comp_ns: float) -> tuple[int, int, tuple | None]: ...

    def finished(self, j: int) -> None: ...
