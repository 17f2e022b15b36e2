"""Cache replay: a request trace through one byte-capacity cache tier, at one capacity or as a
miss-ratio curve over many.

Semantics, as in the cache-simulation literature (libCacheSim and others):
- A request for a cached object is a hit. If its size changed, the cached size is updated
  (evicting others if it no longer fits; an object now larger than the cache leaves it).
- A miss inserts the object, evicting until it fits; an object larger than the whole cache is
  not admitted (the request still counts as a miss).
- lru evicts the least recently requested object, fifo the earliest inserted, belady the one
  whose next request is furthest away (never requested again = furthest).
- Request miss ratio = misses / requests; byte miss ratio = bytes of missed requests / bytes
  requested.

Engines (kvviz.replay.engines): libCacheSim's C simulator where the `libcachesim` package is
installed, with every policy it has; kvviz's own Python LRU/FIFO/Belady otherwise. Each result
says which ran. A curve's LRU points come from one pass over the trace (stack distances,
kvviz.replay.stack_distance); other policies' points are independent replays, spread over
processes (kvviz.executor).
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ScenarioError
from ..io import scratch_tree
from ..limits import MAX_BYTES
from ..numbers import split_unit, toml_number
from . import engines
from .engines import FALLBACK_NOTE, LIBCACHESIM, PYTHON, has_libcachesim, resolve
from .model import ReplayResult

if TYPE_CHECKING:
    from concurrent.futures import Executor

    import numpy as np

    from ..requests.objects import Requests

# (misses, bytes missed) of one replay; libCacheSim's also what it printed meanwhile
Counts = tuple[int, int] | tuple[int, int, tuple[str, ...]]


class _Trace(Protocol):
    """A trace the replay's tasks run: _PythonTrace, or libcachesim_engine.OracleTraceFile."""
    carry: bool

    def run(self, policy: str, capacity: int) -> Counts: ...


# numpy, the kernels and the readers are imported where they are used: the lean prefix replay
# (kvviz.replay.prefix_lean, kvviz.replay.native) imports this package without them.
STACK = "stack distances"               # the engine label of a one-pass LRU curve point

# Below this many request-replays in all, starting worker processes (~1 s each: numpy and
# libCacheSim imported anew) costs more than it saves.
PARALLEL_WORK = 5_000_000
# The one-pass LRU curve costs about as much as 6 libCacheSim LRU runs (0.35 s against 0.06 s
# each at 1M Zipf requests), or 1.3 Python ones (benchmarks/bench_replay.py): below that many
# capacities each is replayed instead.
ONE_PASS_FROM = {LIBCACHESIM: 6, PYTHON: 2}
# Capacities beyond this many footprints are a typo, not a question (nothing is ever evicted).
MAX_FOOTPRINTS = 1000
# A SHARDS curve rests on the objects its sample holds. Measured (benchmarks/bench_replay.py, Zipf,
# R = 0.01): ~900 objects were off by up to 0.13 in miss ratio, ~9,000 by up to 0.02.
FEW_SAMPLED_OBJECTS = 5_000

__all__ = ["FALLBACK_NOTE", "POLICIES", "ReplayResult", "default_capacities", "footprint", "has_libcachesim",
           "miss_ratio_curve", "next_use", "parse_capacities", "parse_size", "policies", "replay", "sampling_note",
           "check_sample_rate"]


def __getattr__(name: str) -> tuple[str, ...]:
    if name == "POLICIES":  # kvviz's own kernels: available with any engine
        from .kernels import DESCRIPTIONS
        return tuple(DESCRIPTIONS)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def shards_label(rate: float) -> str:
    """The engine label of an LRU point estimated from a SHARDS sample at `rate`."""
    return f"SHARDS R={rate:g} {STACK}"


def sampling_note(reqs: Requests, rate: float | None, policies: Iterable[str] = ("lru",)) -> str | None:
    """A warning where LRU is among `policies` and its SHARDS sample holds too few objects for
    its curve to be trusted."""
    if rate is None or rate >= 1 or "lru" not in policies:
        return None
    import numpy as np

    from .stack_distance import sampled_objects
    kept = int(np.count_nonzero(sampled_objects(reqs.objects, rate)))
    if kept >= FEW_SAMPLED_OBJECTS:
        return None
    return (f"the SHARDS sample holds {kept:,} of {reqs.objects:,} objects (R={rate:g}): its LRU curve is rough, "
            f"worst at small capacities; a higher rate, or the exact pass, is better for this trace")


def check_sample_rate(rate: object, source: str = "--sample-rate") -> float | None:
    """None (exact), or a sampling rate in (0, 1]."""
    if rate is None:
        return None
    value = toml_number(rate) if isinstance(rate, str) else rate  # as a scenario's (kvviz.numbers)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise ScenarioError(f"sample rate must be a number in (0, 1], e.g. 0.01 (got {rate!r})", source)
    if not 0 < value <= 1:  # also nan
        raise ScenarioError(f"sample rate must be in (0, 1], e.g. 0.01 (got {rate})", source)
    return value


def _check_sample(reqs: Requests, rate: float) -> None:
    """An empty SHARDS sample estimates no miss at all (a perfect cache): refused, with the
    rate that would sample the trace's first object to hash low enough."""
    import numpy as np

    from .stack_distance import sampled_objects, shards_hash
    if not len(reqs) or sampled_objects(reqs.objects, rate).any():
        return
    lowest = int(shards_hash(np.arange(reqs.objects)).min())
    need = (lowest + 1) / 2.0**64  # kept: hash < int(rate * 2**64)
    step = 10 ** (math.floor(math.log10(need)) - 1)
    enough = math.ceil(need / step) * step  # two significant digits, rounded up
    raise ScenarioError(f"the SHARDS sample at R={rate:g} holds no request (none of the trace's {reqs.objects:,} "
                        f"objects); a rate of {enough:.2g} or more samples at least one", "--sample-rate")


_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
          "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_size(text: str, source: str = "--capacity", footprint: int | None = None) -> int:
    """`1000`, `64MiB`, `1.5GB` (decimal and binary units) -> bytes; `1%` is a share of the
    trace's `footprint` (without one, only the form is checked: the trace is not read yet). The
    number is read as a scenario's (kvviz.numbers: `1e3` and `0x10` alike)."""
    got = split_unit(text, _UNITS)
    if got is None:
        raise ScenarioError(f"expected a size like 1000, 64MiB, 1.5GB or 1% (of the trace's footprint), "
                            f"got {text!r}", source)
    value, unit = got
    try:
        if unit == "%":
            share = value / 100
            if not share <= MAX_FOOTPRINTS:  # also inf and nan
                raise ScenarioError(f"a capacity of more than {MAX_FOOTPRINTS}x the footprint is a typo "
                                    f"(got {text!r})", source)
            if footprint is None:
                return 1
            number = footprint * share
        else:
            number = value * _UNITS[unit.lower()]
        if not number <= MAX_BYTES:  # also inf (1e400) and nan
            raise OverflowError
    except OverflowError:  # a whole number too large for a float
        raise ScenarioError(f"capacity is beyond {MAX_BYTES:.3g} bytes (got {text!r})", source) from None
    value = int(round(number)) if unit == "%" else int(number)
    # 0.5 is "> 0" yet no byte count; 1.5 KB is 1,500 B, but 1.5 B a typo
    if unit != "%" and (value < 1 or unit.lower() in ("", "b") and number != value):
        raise ScenarioError(f"capacity must be a whole number of bytes, at least 1 (got {text!r})", source)
    if value <= 0:
        raise ScenarioError(f"capacity must be > 0 bytes (got {text!r}" +
                            (f": {number:.3g} B of a {footprint:,} B footprint)" if unit == "%" else ")"),
                            source)
    return value


def next_use(ids: Sequence[int] | np.ndarray) -> list[int]:
    """For each request, the index of the next request for the same object (len(ids) if none)."""
    from .kernels import next_use_array
    nxt: list[int] = next_use_array(ids).tolist()
    return nxt


def policies(engine: str = "auto") -> dict[str, str]:
    """name -> short description of every policy the engine (default: the installed best) has."""
    return engines.policies(engine)


def _check_capacity(reqs: Requests, capacity: int, source: str = "--capacity") -> None:
    if capacity <= 0:
        raise ScenarioError(f"capacity must be > 0 bytes (got {capacity})", source)
    top = footprint(reqs)
    if top and capacity > top * MAX_FOOTPRINTS:
        raise ScenarioError(f"capacity {capacity:,} B is more than {MAX_FOOTPRINTS}x the trace's footprint "
                            f"({top:,} B: every object once); nothing would ever be evicted", source)


def _result(policy: str, capacity: int, reqs: Requests, counts: Counts, engine: str) -> ReplayResult:
    """`counts`: (misses, bytes missed), and from libCacheSim what it printed meanwhile."""
    said = tuple(counts[2]) if len(counts) > 2 else ()
    return ReplayResult(policy, capacity, len(reqs), counts[0], reqs.bytes, counts[1], engine, said)


def replay(reqs: Requests, policy: str, capacity: int, engine: str = "auto") -> ReplayResult:
    """One policy at one capacity."""
    engine = resolve(engine)
    policy = engines.canonical(policy, engine)
    _check_capacity(reqs, capacity)
    if engine == PYTHON:
        from .kernels import run
        counts: Counts = run(policy, reqs.id_list, reqs.size_list, capacity)
    else:
        from .libcachesim_engine import ORACLE, OracleTraceFile
        with OracleTraceFile(reqs.ids, reqs.sizes, reqs.times, objects=reqs.objects, future=policy in ORACLE) as trace:
            counts = trace.run(policy, capacity)
    return _result(policy, capacity, reqs, counts, engine)


def footprint(reqs: Requests) -> int:
    """Bytes of every distinct object at its largest size: a cache this big never evicts."""
    return reqs.footprint


def default_capacities(reqs: Requests, points: int = 12) -> list[int]:
    """Log-spaced capacities from 0.1% of the footprint to all of it: where a miss-ratio curve
    bends, whatever the trace's scale."""
    top = footprint(reqs)
    if top <= 0:
        return [1]
    import numpy as np
    caps = np.geomspace(max(top / 1000, 1), top, points)
    return sorted({max(1, int(round(c))) for c in caps})


def parse_capacities(text: str, reqs: Requests | None, source: str = "--capacities") -> list[int]:
    """`auto` (default_capacities of the trace) or sizes `64MiB, 1GB, 1%, …`, in the order given.
    Without the trace (`reqs` None) only the form is checked."""
    if text.strip().lower() == "auto":
        return default_capacities(reqs) if reqs is not None else []
    entries = text.split(",")
    if not text.strip():
        raise ScenarioError("give at least one capacity (or auto)", source)
    if any(not t.strip() for t in entries):
        raise ScenarioError(f"an empty entry in {text!r}", source)
    return [parse_size(t, source, footprint(reqs) if reqs is not None else None) for t in entries]


class _PythonTrace:
    """The requests for the Python kernels: in memory here; for pool workers a .npy file (read
    once per worker), or the arrays themselves for workers on other machines (`carry`)."""
    _loaded: tuple[str, tuple[list[int], list[int]] | None] = ("", None)  # (path, (ids, sizes)) in a worker
    carry = False

    def __init__(self, reqs: Requests, directory: str) -> None:
        self.reqs: Requests | None = reqs  # None in a pool worker: the .npy file holds them
        self.path = os.path.join(directory, "requests.npy")

    def __getstate__(self) -> dict[str, Any]:  # on the way to a worker
        import numpy as np

        from ..requests.objects import Requests
        if self.carry:  # and stays carried, for the copies Dask makes worker to worker
            assert self.reqs is not None  # carried: set where it was made, and in every copy since
            return {"reqs": Requests(self.reqs.ids, self.reqs.sizes), "path": self.path, "carry": True}
        if not os.path.exists(self.path):  # the file, written the first time
            assert self.reqs is not None  # the file is written where the trace was made
            np.save(self.path, np.stack([self.reqs.ids, self.reqs.sizes]))
        return {"reqs": None, "path": self.path}

    def run(self, policy: str, capacity: int) -> tuple[int, int]:
        import numpy as np

        from .kernels import run
        if self.reqs is not None:
            return run(policy, self.reqs.id_list, self.reqs.size_list, capacity)
        if _PythonTrace._loaded[0] != self.path:
            a = np.load(self.path)
            _PythonTrace._loaded = (self.path, (a[0].tolist(), a[1].tolist()))
        loaded = _PythonTrace._loaded[1]
        assert loaded is not None  # set just above
        ids, sizes = loaded
        return run(policy, ids, sizes, capacity)


def _run_task(task: tuple[_Trace, str, int]) -> Counts | str:
    """(misses, bytes missed), or the message of an engine that refused this point."""
    trace, policy, capacity = task
    try:
        return trace.run(policy, capacity)
    except ScenarioError as e:
        return e.message


def miss_ratio_curve(reqs: Requests, policies: Iterable[str], capacities: Iterable[int],
                     progress: Callable[[int, int], object] | None = None, engine: str = "auto",
                     executor: Executor | None = None, workers: int | None = None,
                     on_result: Callable[[int, ReplayResult | None], object] | None = None,
                     one_pass_lru: bool | None = None, skipped: list[tuple[str, int, str]] | None = None,
                     sample_rate: float | None = None) -> list[ReplayResult | None]:
    """Every policy at every capacity, in that order (policy-major). LRU's points come from one
    pass over the trace (exact) when there are enough capacities for it to pay (ONE_PASS_FROM;
    `one_pass_lru` True or False decides instead); other points are independent
    replays through `executor` (default: a local process pool of `workers`, see
    kvviz.executor.workers, once the work is worth starting processes for). A point the engine
    refuses (libCacheSim at a capacity about one object small) raises, or, given a `skipped`
    list, is left None there and (policy, capacity, message) appended to it. `on_result(index, ReplayResult)` streams each point as it is
    known; `progress(done, total)` follows, and either may raise to stop. `sample_rate` R in
    (0, 1]: LRU's points are SHARDS estimates from the requests it samples (one pass, whatever
    the number of capacities; engine "SHARDS R=… stack distances"); None: exact."""
    from ..executor import is_remote, map_indexed, share
    from ..requests.oracle_general import ORACLE_RECORD
    from . import kernels

    engine = resolve(engine)
    names = [engines.canonical(p, engine) for p in policies]
    caps = list(capacities)
    for c in caps:
        _check_capacity(reqs, c)
    sample_rate = check_sample_rate(sample_rate)
    if sample_rate is not None and "lru" in names:
        _check_sample(reqs, sample_rate)
    if sample_rate is not None:
        one_pass_lru = True
    elif one_pass_lru is None:
        one_pass_lru = len(set(caps)) >= ONE_PASS_FROM[engine]
    slots = [(p, c) for p in names for c in caps]
    out: list[ReplayResult | None] = [None] * len(slots)
    done = [0]

    def deliver(i: int, r: ReplayResult | None) -> None:
        out[i] = r
        done[0] += 1
        if on_result:
            on_result(i, r)
        if progress:
            progress(done[0], len(slots))

    todo = []
    for i, (p, _) in enumerate(slots):
        if p == "lru" and one_pass_lru:
            continue
        todo.append(i)
    if one_pass_lru and "lru" in names:
        from .stack_distance import lru_curve

        def one(c: int) -> tuple[int, int]:
            return kernels.run("lru", reqs.id_list, reqs.size_list, c)
        counts = lru_curve(reqs.ids, reqs.sizes, caps, one, sample_rate)
        label = STACK if sample_rate is None else shards_label(sample_rate)
        for i, (p, c) in enumerate(slots):
            if p == "lru":
                deliver(i, _result(p, c, reqs, counts[caps.index(c)], label))
    if not todo:
        return out
    with scratch_tree(len(reqs) * ORACLE_RECORD.itemsize) as d:
        trace: _Trace
        if engine == LIBCACHESIM:
            from .libcachesim_engine import ORACLE, OracleTraceFile
            trace = OracleTraceFile(reqs.ids, reqs.sizes, reqs.times, directory=d, objects=reqs.objects,
                          future=any(slots[i][0] in ORACLE for i in todo))
        else:
            trace = _PythonTrace(reqs, d)
        if is_remote(executor):  # workers may not see this machine's files: the trace goes to each once
            trace.carry = True
            trace = share(executor, trace)
        tasks = [(trace, *slots[i]) for i in todo]
        if workers is None and executor is None and len(reqs) * len(tasks) < PARALLEL_WORK:
            workers = 1
        def arrived(k: int, counts: Counts | str) -> None:
            i = todo[k]
            if isinstance(counts, str):
                if skipped is None:
                    raise ScenarioError(counts, "--capacity")
                skipped.append((*slots[i], counts))
                deliver(i, None)
            else:
                deliver(i, _result(*slots[i], reqs, counts, engine))
        map_indexed(_run_task, tasks, executor=executor, n_workers=workers, on_result=arrived)
    return out
