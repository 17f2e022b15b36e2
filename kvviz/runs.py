"""A run as independent parts plus a combine step, each part keyed by what it reads.

A mechanism whose run is several independent simulations (AttentionStore: one per placement
policy, and the truncation run) gives its record a `plan`: scenario -> Plan. Each Part is a pure
function of the scenario's fields its `key` hashes; `combine` builds a Result from whichever
outputs have arrived (a partial one, or None while the parts it cannot do without are missing).
So the app can draw a run as its parts complete, and keep parts whose inputs an edit did not
change; `kvviz run --cache DIR` keeps them on disk. Which fields a part does not read is
declared by the mechanism (lists of field paths), never decided at run time.
"""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import stat
import tempfile
from collections import OrderedDict
from concurrent.futures import Executor
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterable, Protocol, TypeVar

from .errors import ScenarioError
from .executor import map_indexed, workers, worth_a_pool

if TYPE_CHECKING:  # pydantic is imported by the scenario's loading, not here
    from pydantic import BaseModel

    from .result import Result
    from .scenario import ScenarioBase

# A plan's scenario model, what its `prepare` gives every part, and a part's output
S = TypeVar("S", bound="ScenarioBase")
Prepared = TypeVar("Prepared")
Output = TypeVar("Output")

# ScenarioBase's fields no simulation reads: titles, and the checks and claims held against the
# metrics after the run.
DISPLAY_FIELDS = ("name", "description", "expect", "claim", "robustness")


@dataclass(frozen=True)
class Part:
    name: str          # unique within its plan ("workload", "lru", "truncation coupled")
    key: str           # content hash of exactly the inputs it reads
    # its run time, relative to its plan's other parts (× the plan's `scale`: seconds in one
    # process on the reference machine); the longest start first when parts run in parallel
    cost: float = 1.0
    needed: bool = False  # combine can do nothing without it (a partial result waits for it)
    # the key under which its output also answers for a part that needs less of it (a recorded
    # run's metrics answer for the same run unrecorded), or "" for none
    also: str = ""


@dataclass(frozen=True)
class Plan(Generic[S, Prepared, Output]):
    parts: tuple[Part, ...]
    prepare: Callable[[S], Prepared]                # scenario -> what every part reads (once per process)
    run: Callable[[S, Prepared, str], Output]       # (scenario, prepared, part name) -> output (picklable)
    combine: Callable[[S, dict[str, Output]], Result | None]  # (scenario, {part name: output}) -> Result or None
    # what the parts' costs (and `dispatch`) are multiplied by to give their seconds (one
    # process, the machine kvviz.calibration's reference was measured on): a pool is used when
    # those are worth it (kvviz.executor.worth_a_pool); 0: never
    scale: Callable[[Prepared], float] = lambda prepared: 0.0
    # sending every part's inputs to a pool's worker and its output back, per unit of `scale`
    dispatch: float = 0.0
    # a part's output as the part that needs less of it reads it (see Part.also), or None
    strip: Callable[[Output], Output] | None = None

    def part(self, name: str) -> Part:
        return next(p for p in self.parts if p.name == name)

    def order(self) -> list[Part]:
        return run_order(self.parts)


def run_order(parts: Iterable[Part]) -> list[Part]:
    """The needed parts first (the first partial result), then the longest first."""
    return sorted(parts, key=lambda p: (not p.needed, -p.cost))


# --- keys ---------------------------------------------------------------------------------------

@cache
def code_version() -> str:
    """A hash of kvviz's own source (the compiled engine's too): a part's output is only reusable
    by the code that made it."""
    h = hashlib.sha256()
    root = Path(__file__).parent
    for f in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".pyx", ".pxi", ".pxd")):
        h.update(str(f.relative_to(root)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


@cache
def _file_digest(path: str, mtime_ns: int, size: int) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _file_fields(model: BaseModel) -> set[str]:
    from .scenario import file_fields
    return {".".join(p) for p in file_fields(type(model))}


def inputs(scenario: BaseModel, unread: Iterable[str] = ()) -> dict[str, Any]:
    """The scenario as a run reads it: every field (dotted paths) but DISPLAY_FIELDS and
    `unread` (a field or a whole section), and a file field's content rather than its name."""
    data = scenario.model_dump(mode="json")
    d: Any  # a section of the plain data, or None past a path's end
    for path in (*DISPLAY_FIELDS, *unread):
        *head, last = path.split(".")
        d = data
        for k in head:
            d = d.get(k) if isinstance(d, dict) else None
        if isinstance(d, dict):
            d.pop(last, None)
    for path in _file_fields(scenario):
        *head, last = path.split(".")
        d = data
        for k in head:
            d = d.get(k) if isinstance(d, dict) else None
        if isinstance(d, dict) and d.get(last):
            st = os.stat(d[last])
            d[last] = {"sha256": _file_digest(d[last], st.st_mtime_ns, st.st_size)}
    return data


def key_of(scenario: ScenarioBase, unread: Iterable[str] = (), **extra: object) -> str:
    """A part's key: its inputs (see `inputs`), `extra` (which run it is), the kind and the code."""
    blob = json.dumps({"kind": scenario.kind, "code": code_version(), "inputs": inputs(scenario, unread),
                       "extra": extra}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


# --- keeping outputs ------------------------------------------------------------------------------

def size_of(output: object) -> int:
    """Rough bytes an output holds: its numpy arrays (a trace's columns) plus a little."""
    total = 4096
    stack, seen = [output], set[int]()
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        nbytes = getattr(x, "nbytes", None)
        if isinstance(nbytes, int):
            total += nbytes
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, (list, tuple)):
            if len(x) < 1000:
                stack.extend(x)
            else:
                total += 8 * len(x)
        elif hasattr(x, "__dict__"):
            stack.extend(vars(x).values())
    return total


class MemoryCache:
    """Recent parts' outputs by key, least recently used dropped beyond `max_bytes`."""

    def __init__(self, max_bytes: float) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[str, tuple[Any, int]] = OrderedDict()
        self.bytes = 0

    def __contains__(self, key: str) -> bool:
        return key in self._items

    def get(self, key: str) -> Any:
        if key not in self._items:
            return None
        self._items.move_to_end(key)
        return self._items[key][0]

    def put(self, key: str, output: object) -> None:
        if key in self._items:
            self.bytes -= self._items.pop(key)[1]
        n = size_of(output)
        self._items[key] = (output, n)
        self.bytes += n
        while self.bytes > self.max_bytes and len(self._items) > 1:
            self.bytes -= self._items.popitem(last=False)[1][1]


class DiskCache:
    """Outputs as pickles in a folder, one file per key. A write goes to a temporary file in the
    same folder, then is renamed over the key's name (atomic): concurrent writers of one key
    write the same bytes, and a reader never sees half a file. A file holds (MARK, key, output):
    one that is not a regular file, does not unpickle, or holds anything else (a truncated,
    corrupt or swapped file) is a miss, and the part runs again. Never a reason to fail a run:
    the cache only saves time. (Pickle runs code while loading: the folder must be yours.)"""

    MARK = "kvviz-part-1"

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.write_error = ""  # why a write failed (a full disk): the run goes on uncached

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.pkl"

    def __contains__(self, key: str) -> bool:
        return self._path(key).is_file()

    def get(self, key: str) -> Any:
        path = self._path(key)
        try:
            # a FIFO or device under the key's name would block or never end: regular files only
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as f:
                if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                    return None
                data = f.read()
        except OSError:
            return None  # absent, unreadable, a folder: run it again
        try:
            got = pickle.loads(data)
        except Exception:  # noqa: BLE001 - corrupt or from another version: any error is a miss
            return None
        if not (isinstance(got, tuple) and len(got) == 3 and got[0] == self.MARK and got[1] == key):
            return None
        return got[2]

    def put(self, key: str, output: object) -> None:
        if self.write_error:
            return
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{key[:12]}-", suffix=".tmp", dir=self.folder)
            with os.fdopen(fd, "wb") as f:
                pickle.dump((self.MARK, key, output), f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self._path(key))
        except OSError as e:  # a cache that cannot be written is no reason to lose the run
            self.write_error = e.strerror or str(e)
            if tmp:
                Path(tmp).unlink(missing_ok=True)
        except BaseException:
            if tmp:
                Path(tmp).unlink(missing_ok=True)
            raise


def disk_cache(folder: str | None) -> DiskCache | None:
    """`--cache DIR`: the folder (made if need be, in a folder that exists: a typo in a path is no
    new tree of folders, as for every output), or None without the flag."""
    if not folder:
        return None
    where = f"--cache {folder}"
    try:
        Path(folder).mkdir(exist_ok=True)
    except FileExistsError:
        raise ScenarioError("not a folder", where) from None
    except FileNotFoundError:
        raise ScenarioError(f"the folder {Path(folder).parent} does not exist", where) from None
    except OSError as e:
        raise ScenarioError(e.strerror or str(e), where) from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ScenarioError("the folder is not writable", where)
    return DiskCache(folder)


class PartCache(Protocol):
    """Where parts' outputs are kept by key (MemoryCache, DiskCache). An output comes back as
    it went in, or unpickled (DiskCache): Any."""

    def get(self, key: str) -> Any: ...

    def put(self, key: str, output: object) -> None: ...


def lookup(cache: PartCache | None, part: Part) -> Any:
    """A cached output for `part`, or None."""
    return None if cache is None else cache.get(part.key)


def keep(cache: PartCache | None, plan: Plan[S, Prepared, Output], part: Part, output: Output) -> None:
    """Keep `output` under the part's key, and (stripped of what only it has) under `also`."""
    if cache is None:
        return
    cache.put(part.key, output)
    if part.also and plan.strip is not None:
        cache.put(part.also, plan.strip(output))


# --- running ---------------------------------------------------------------------------------------

def _call(task: tuple[Callable[[S, Prepared, str], Output], S, Prepared, str]) -> Output:
    run, scenario, prepared, name = task
    return run(scenario, prepared, name)


def run_parts(plan: Plan[S, Prepared, Output], scenario: S, names: list[str], on_output: Callable[[str, Output], None],
              pool: Executor | None = None, pool_workers: int | None = None, needed_first: bool = False) -> None:
    """Run the named parts (in the plan's order), calling on_output(name, output) as each
    ends: in parallel when there is more than one and their estimated seconds are worth a pool
    (kvviz.executor.worth_a_pool): on `pool` (a pool of `pool_workers` kept across calls, already
    started: the app's) or else a pool of this call's own (kvviz.executor), which must start first.
    `needed_first`: the needed parts (those a partial result waits for) run alone, the others
    only once they have ended, so that on cores other programs also use they are not slowed by
    the rest (the app's first result sooner; the whole run a little later)."""
    if not names:
        return
    order = [p.name for p in plan.order() if p.name in set(names)]
    prepared = plan.prepare(scenario)
    needed = [name for name in order if plan.part(name).needed]
    if needed_first and needed and len(needed) < len(order):
        # on a kept pool the needed parts go side by side however short one is (the workload's
        # figures): one after the other, the first result waited for both
        _run_batch(plan, scenario, prepared, needed, on_output, pool, pool_workers, side_by_side=pool is not None)
        _run_batch(plan, scenario, prepared, [n for n in order if n not in needed], on_output, pool, pool_workers)
    else:
        _run_batch(plan, scenario, prepared, order, on_output, pool, pool_workers)


def _run_batch(plan: Plan[S, Prepared, Output], scenario: S, prepared: Prepared, order: list[str],
               on_output: Callable[[str, Output], None], pool: Executor | None, pool_workers: int | None,
               side_by_side: bool = False) -> None:
    """The parts named in `order`, together: on a pool when they are worth one (see run_parts),
    or (`side_by_side`) whenever there is more than one."""
    scale = plan.scale(prepared)
    seconds = [scale * plan.part(name).cost for name in order]
    dispatch = scale * plan.dispatch * len(order) / len(plan.parts)  # the parts sent, of all
    # the kept pool's own size: this process's KVVIZ_WORKERS may not be what it was started with
    n = pool_workers if pool is not None and pool_workers else workers()
    parallel = (side_by_side and n > 1 and len(order) > 1) or worth_a_pool(seconds, n, pool is not None, dispatch)
    map_indexed(_call, [(plan.run, scenario, prepared, name) for name in order],
                executor=pool if parallel else None, n_workers=None if parallel else 1,
                on_result=lambda i, out: on_output(order[i], out))


def complete(plan: Plan[S, Prepared, Output], scenario: S, cache: PartCache | None = None,
             counter: list[str] | None = None) -> Result:
    """The whole Result: every part from `cache` or run (and kept there), then combined.
    `counter`, if given, gets the names of the parts that ran."""
    outputs: dict[str, Output] = {}
    for p in plan.parts:
        hit = lookup(cache, p)
        if hit is not None:
            outputs[p.name] = hit
    missing = [p.name for p in plan.parts if p.name not in outputs]

    def got(name: str, output: Output) -> None:
        outputs[name] = output
        keep(cache, plan, plan.part(name), output)
        if counter is not None:
            counter.append(name)

    run_parts(plan, scenario, missing, got)
    result = plan.combine(scenario, outputs)
    if result is None:  # a plan's combine makes a Result of every part's output
        raise RuntimeError(f"{type(scenario).__name__}: the plan combined all its parts into no result")
    return result
