"""Whether a served run kept up with the load offered to it, for the mechanisms that serve on this
core's batcher (AttentionStore's open-loop arrivals, prefix_cache's timed engine).
An overloaded run's TTFT measures its backlog (hours, growing with the trace's length), not the
cache: the run says so in metrics.overload.

The rule (ours), both parts measured by the simulation:
- the completion rate, requests / (last completion - first arrival), is below RATE_SHARE of the
  arrival rate, requests / (last arrival - first arrival): the requests came faster than they
  were served, and
- the queue grew: the mean queue wait (admission - arrival) of the last quarter of requests by
  arrival is more than WAIT_GROWTH times the first quarter's plus SERVICE_SHARE of the mean time
  a request is served (admission to last token: waits of a few ms that double are no backlog).
  A short trace whose last requests are long misses the first part's share with no backlog
  (prefix_cache_tiers at 60 requests and 0.02 sessions/s: 0.162 vs 0.183/s, waits 0.004 ->
  0.87 s, service 12 s); this part tells them apart. A burst the batch absorbs (admitted at
  once, served slower) is not flagged until the queue grows.
Both are per run (a policy's); each run's rates are in its metrics either way.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

RATE_SHARE = 0.9
WAIT_GROWTH, SERVICE_SHARE = 2.0, 0.1
MIN_REQUESTS = 8  # fewer: no quarters to compare


def served_load(arrival_ns: ArrayLike, admit_ns: ArrayLike, end_ns: ArrayLike) -> dict[str, float | bool]:
    """A run's rates (requests/s) and whether it was overloaded (the module's rule)."""
    arr, adm, end = (np.asarray(x, dtype=np.float64) for x in (arrival_ns, admit_ns, end_ns))
    n = len(arr)
    span, makespan = (arr.max() - arr.min()) / 1e9 if n else 0.0, (end.max() - arr.min()) / 1e9 if n else 0.0
    if n < MIN_REQUESTS or span <= 0 or makespan <= 0:
        return {"overloaded": False}
    wait = (adm - arr)[np.argsort(arr, kind="stable")] / 1e9
    q = n // 4
    first, last = float(wait[:q].mean()), float(wait[-q:].mean())
    service = float((end - adm).mean()) / 1e9
    arrival_rate, completion_rate = float(n / span), float(n / makespan)
    grew = last > WAIT_GROWTH * first + SERVICE_SHARE * service
    return {"overloaded": bool(completion_rate < RATE_SHARE * arrival_rate and grew),
            "arrival_rate_per_s": arrival_rate, "completion_rate_per_s": completion_rate,
            "queue_wait_first_quarter_s": first, "queue_wait_last_quarter_s": last}


def _s(x: float) -> str:
    return f"{x:,.0f} s" if x >= 100 else f"{x:.3g} s"


def overload_note(policies: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The run's note when any policy's run was overloaded (each policy's metrics carry
    served_load's figures), naming the rates; None otherwise."""
    over = {p: m for p, m in policies.items() if m.get("overloaded")}
    if not over:
        return None
    m = next(iter(over.values()))
    served = ", ".join(f"{x['completion_rate_per_s']:.3g}/s ({p})" for p, x in over.items())
    waits = ", ".join(f"{_s(x['queue_wait_first_quarter_s'])} → {_s(x['queue_wait_last_quarter_s'])} ({p})"
                      for p, x in over.items())
    return (f"overloaded: requests arrive at {m['arrival_rate_per_s']:.3g}/s (requests over the span of their "
            f"arrivals) and are completed at {served} (requests over first arrival to last completion); the "
            f"queue wait grew from the first quarter of arrivals to the last: {waits}. TTFT here measures the "
            f"backlog, not the cache: fewer requests, a lower rate or more GPUs")
