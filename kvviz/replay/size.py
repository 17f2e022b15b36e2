"""What `kvviz replay` will take, estimated from the trace file's size (its records counted
cheaply, kvviz.requests.extent) and the number of runs, before the trace is read: a trace and a
curve that would exhaust memory are refused with the estimate, as a scenario's run is.

Measured here (2M-request CSV, 40 MB, Python 3.11): one FIFO run, 323 MB peak (libCacheSim) and
357 MB (kvviz's engine) in the parent, 1.2-2 s; eight runs in two processes, 330-370 MB in each
worker, 5-10 s. Taken as 180 B per request in the parent (the trace read and held, and a run in
the same process) and 185 B per request in each worker process replaying it, 0.6 µs per request
read and 1.2 µs per request and run (ours; the records are counted on the safe side).
"""
from __future__ import annotations

from ..requests.extent import Extent
from ..size_guard import Estimate

BYTES_PER_REQUEST, BYTES_PER_REQUEST_WORKER = 180, 185
SECONDS_PER_REQUEST_READ, SECONDS_PER_REQUEST_RUN = 0.6e-6, 1.2e-6


def replay_estimate(ext: Extent | None, runs: int, processes: int) -> Estimate | None:
    """`runs` replays (policies x capacities) over `processes` at once (1: in this process);
    a JSONL request trace counts its hash ids, each a request for one block."""
    if ext is None:
        return None
    n = ext.blocks if ext.kind == "jsonl" else ext.lines
    workers = 0 if processes <= 1 else min(processes, runs)
    return Estimate(n * (BYTES_PER_REQUEST + BYTES_PER_REQUEST_WORKER * workers),
                    n * (SECONDS_PER_REQUEST_READ + SECONDS_PER_REQUEST_RUN * runs / max(workers, 1)),
                    "the trace or the runs (--policy x --capacities)")
