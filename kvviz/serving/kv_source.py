"""The seam between the continuous-batching engine (batching.py) and a KV store: what the
batcher asks, and nothing else, and the outcome codes a store answers `admit` with.
AttentionStore's session store (mechanisms/attention_store/store.py with host_load.py) and
prefix_cache's block store (mechanisms/prefix_cache/timed_store.py) both implement it.

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
  (T0, a, c, k, S_c) of `layerwise_prefill.prefill_end`, or None).
- `finished(j)`: called by the run when j's last token is out (the run's `job_done`).
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

# Job outcomes (`admit`'s first answer); hits are >= HIT_HBM: the batcher attends a hit's history
# rather than recomputing it. RECOMPUTE_FASTER: the history was in a slow tier (AttentionStore's
# SSD), but recomputing it beat loading it (load_or_recompute.py): a miss of its own kind. A store
# answers with the codes its tiers have (prefix_cache's block store: FIRST or HIT_HBM).
FIRST, MISS, RECOMPUTE_FASTER, HIT_HBM, HIT_DRAM, HIT_SSD = 0, 1, 2, 3, 4, 5
OUTCOME = {FIRST: "no history", MISS: "miss (history recomputed)",
           RECOMPUTE_FASTER: "on SSD, but recomputing it was faster", HIT_HBM: "HBM hit", HIT_DRAM: "DRAM hit",
           HIT_SSD: "SSD hit"}


# (T0, a, c, k, S_c) of layerwise_prefill.prefill_end: one prefill iteration's layer schedule
LayerSchedule = tuple[int, int, int, int, int]


class KVSource(Protocol):
    stores: bool

    def arrived(self, j: int) -> None: ...

    def admit(self, j: int, hbm_hit: bool) -> tuple[int, int, int, int]: ...

    def load(self, jobs: list[int], a: int, b: int, ready: int, S: int, comp_ns: float) \
            -> tuple[int, int, LayerSchedule | None]: ...

    def finished(self, j: int) -> None: ...


@runtime_checkable
class ResumableKVSource(KVSource, Protocol):
    """A store that can serve a preempted request's return from what it still holds
    (BatchConfig.resume_from_cache; the prefix cache's timed store): (tokens kept, bytes loaded)."""

    def resume(self, j: int, context: int) -> tuple[int, int]: ...
