"""The libCacheSim engine: kvviz.replay's requests through the `libcachesim` Python package
(libCacheSim's C simulator; the optional extra `kvviz[replay]`, pinned).

The requests go to libCacheSim as an oracleGeneral binary file (24-byte records: clock time,
object id, size, index of the object's next request), written once per trace with numpy and
read by libCacheSim's C reader, so no request crosses into Python one by one. Every eviction
policy the package exports is offered by its lower-cased class name (`s3fifo`, `wtinylfu`,
`lruk`, ...), with the class's own docstring as its description.

libCacheSim 0.3.5 aborts, crashes or loops on some policies when the cache is about as small
as one object (S3-FIFO and FlashProb below 10 and 20 bytes, LFUDA and BeladySize near the largest
object: found by replaying every policy at 1 to 100 bytes). A crash in C would take kvviz down
with it, so capacities below GUARD_OBJECTS x the largest object (or GUARD_BYTES) replay in a
child process, whose failure becomes a message; larger ones replay here.

Where this differs from kvviz's own kernels: an object whose size changes between requests
is handled as libCacheSim handles it (slightly different miss counts on such traces; on traces
with one size per object, like every bundled one, the two agree exactly).
"""
from __future__ import annotations

import functools
import json
import math
import os
import subprocess
import sys
import threading
import weakref
from typing import Any

import libcachesim as lcs
import numpy as np
from numpy.typing import ArrayLike

from ..errors import ScenarioError
from ..io import remove_scratch, scratch_file
from ..requests.oracle_general import ORACLE_RECORD
from .c_output import captured_c_output, summarise
from .kernels import next_use_array

VERSION = lcs.__version__
RECORD = ORACLE_RECORD  # next request: -1 for never again
MAX_SIZE = 2**32 - 1
GUARD_OBJECTS = 4
GUARD_BYTES = 4096
GUARD_SECONDS = 60


@functools.cache
def policies() -> dict[str, str]:
    """name -> description of every eviction policy class the package exports."""
    out = {}
    for name in lcs.__all__:
        cls = getattr(lcs, name, None)
        if not (isinstance(cls, type) and issubclass(cls, lcs.CacheBase)) or cls in (lcs.CacheBase, lcs.PluginCache):
            continue
        doc = (cls.__doc__ or name).strip().splitlines()[0]
        out[name.lower()] = doc.replace("(no special parameters)", "").strip()
    return dict(sorted(out.items()))


def _class(policy: str) -> Any:  # a libcachesim cache class: the package ships no types (pyproject.toml)
    return next(getattr(lcs, n) for n in lcs.__all__ if n.lower() == policy)


def hashpower(n_objects: int) -> int:
    """log2 of the hash table's buckets: about one bucket per object. libCacheSim's default,
    2^24 buckets, costs more to allocate and walk than a million-request replay itself."""
    return min(28, max(10, math.ceil(math.log2(max(n_objects, 1))) + 1))


# Policies that read the future (each request's next request); the others ignore that field,
# so it is computed (a sort of the whole trace) only for these.
ORACLE = {"belady", "beladysize"}


def write_oracle_general(path: str, ids: np.ndarray, sizes: np.ndarray, times: np.ndarray | None,
                         future: bool = True) -> None:
    n = len(ids)
    if n == 0:
        open(path, "wb").close()
        return
    # Fields go straight into the mapped file: one set of page faults, not an array and a copy
    # (10M requests: 0.19 s against 0.38-0.57 s with tofile). No msync: libCacheSim reads the
    # same page cache.
    rec = np.memmap(path, dtype=RECORD, mode="w+", shape=(n,))
    # libCacheSim's clock is whole seconds in 32 bits; kvviz's semantics ignore time, so a
    # trace that does not fit is shifted to start at 0 and clipped rather than refused.
    if times is None:
        rec["time"] = 0
    else:
        t = np.subtract(times, times[0], dtype=np.float64)  # one new array, changed in place
        np.floor(t, out=t)
        rec["time"] = np.clip(t, 0, 2**32 - 1, out=t)
    rec["id"] = ids
    rec["size"] = sizes
    if future:
        nxt = next_use_array(ids)
        nxt[nxt == n] = -1
        rec["next"] = nxt
    else:
        rec["next"] = -1
    del rec


class OracleTraceFile:
    """A request trace written once as oracleGeneral, replayed at any policy and capacity.
    Picklable (a path and counts), so process-pool workers share the one file; the object that
    wrote the file removes it (close, or when it is collected)."""
    carry = False  # pickled with the file's bytes, for workers that cannot see this machine's files
    _done: weakref.finalize[..., OracleTraceFile] | None = None  # removes the file this object wrote

    def __init__(self, ids: ArrayLike, sizes: ArrayLike, times: np.ndarray | None = None, directory: str | None = None,
                 objects: int | None = None, future: bool = True) -> None:
        ids, sizes = np.asarray(ids), np.asarray(sizes, dtype=np.int64)
        if len(sizes) and int(sizes.max()) > MAX_SIZE:
            raise ScenarioError(f"libCacheSim holds objects below 4 GiB; the largest here is {int(sizes.max()):,} B "
                                f"(--engine python has no such limit)")
        self._own(len(ids) * RECORD.itemsize, directory)
        write_oracle_general(self.path, ids, sizes, times, future)
        self.future = future
        self.requests = len(ids)
        self.bytes = int(sizes.sum())
        self.objects = objects if objects is not None else (int(len(np.unique(ids))) if len(ids) else 0)
        self.largest = int(sizes.max()) if len(sizes) else 0

    def _own(self, nbytes: int, directory: str | None = None) -> None:
        self.path, lock = scratch_file(nbytes, ".oracleGeneral", directory)
        self._done = weakref.finalize(self, remove_scratch, self.path, lock)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_done", None)
        if self.carry:
            with open(self.path, "rb") as f:
                state["content"] = f.read()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        content = state.pop("content", None)
        self.__dict__.update(state)
        if content is not None:  # a worker elsewhere: its own copy, removed with this object
            # Still carried: Dask broadcasts by copying worker to worker, and a copy that named
            # this file would outlive it (or be on a machine that never had it).
            self._own(len(content))
            with open(self.path, "wb") as f:
                f.write(content)

    def close(self) -> None:
        if self._done is not None:
            self._done()

    def __enter__(self) -> OracleTraceFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, policy: str, capacity: int) -> tuple[int, int, tuple[str, ...]]:
        """(misses, bytes missed, what libCacheSim printed meanwhile). libCacheSim reports
        ratios; counts come back exactly for any trace below 2^52 requests and bytes."""
        if policy in ORACLE and not self.future:
            raise ValueError(f"{policy} needs the trace written with future=True")
        if not os.path.exists(self.path):  # libCacheSim would abort the whole process
            raise ScenarioError(f"the replay's trace file {self.path} is gone (removed while the replay ran)")
        if capacity >= max(GUARD_BYTES, GUARD_OBJECTS * self.largest):
            ratios, said = replay_file(self.path, policy, capacity, hashpower(self.objects))
        else:
            ratios, said = self._run_in_child(policy, capacity)
        return round(ratios[0] * self.requests), round(ratios[1] * self.bytes), said

    def _run_in_child(self, policy: str, capacity: int) -> tuple[tuple[float, float], tuple[str, ...]]:
        cmd = [sys.executable, "-m", __name__, self.path, policy, str(capacity), str(hashpower(self.objects))]
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        tail = bytearray()
        stdout, stderr = child.stdout, child.stderr
        assert stdout is not None and stderr is not None  # both PIPE

        def drain() -> None:  # keep the last lines only: a looping policy can log gigabytes
            for chunk in iter(lambda: stderr.read(65536), b""):
                tail.extend(chunk)
                del tail[:-2000]
        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        try:
            # wait first: reading stdout first blocked until the child exited, so a looping
            # policy (BeladySize at a cache of about one object) hung the replay for good.
            # The one line it prints fits the pipe.
            child.wait(GUARD_SECONDS)
            out = stdout.read()
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            raise ScenarioError(f"libCacheSim {VERSION}'s {policy} did not finish in {GUARD_SECONDS} s at capacity "
                                f"{capacity:,} B (about the size of the largest object, {self.largest:,} B)",
                                "--capacity") from None
        finally:
            reader.join(5)
        if child.returncode:
            said = [ln for ln in tail.decode("utf-8", "replace").splitlines() if "ERROR" in ln]
            why = said[-1].split("):", 1)[-1].replace("\x1b[0m", "").strip() if said else \
                (f"crashed (signal {-child.returncode})" if child.returncode < 0 else f"exit {child.returncode}")
            raise ScenarioError(f"libCacheSim {VERSION}'s {policy} failed at capacity {capacity:,} B: {why}",
                                "--capacity")
        a, b = json.loads(out.decode("utf-8").splitlines()[-1])
        # what it printed went to its stderr (kept there, so a crash's last words are read above)
        return (float(a), float(b)), summarise(tail.decode("utf-8", "replace").splitlines())


def replay_file(path: str, policy: str, capacity: int, power: int,
                capture: bool = True) -> tuple[tuple[float, float], tuple[str, ...]]:
    """(request miss ratio, byte miss ratio) of one policy over an oracleGeneral file, and what
    libCacheSim printed while it ran (c_output.summarise), as warnings of that point; with
    `capture` False its output goes where it goes (the guarded child's stderr)."""
    reader = lcs.TraceReader(path, lcs.TraceType.ORACLE_GENERAL_TRACE, lcs.ReaderInitParam(ignore_size_zero_req=False))
    if not capture:
        ratios: tuple[float, float] = _class(policy)(capacity, hashpower=power).process_trace(reader)
        return ratios, ()
    with captured_c_output() as lines:
        ratios = _class(policy)(capacity, hashpower=power).process_trace(reader)
    return ratios, summarise(lines)


if __name__ == "__main__":  # a guarded run: python -m kvviz.replay.libcachesim_engine PATH POLICY CAPACITY POWER
    result_fd = os.dup(1)
    os.dup2(2, 1)  # libCacheSim's printing to stderr, all of it (the parent reads it): stdout has the result only
    r, _ = replay_file(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), capture=False)
    os.write(result_fd, (json.dumps([r[0], r[1]]) + "\n").encode())
