"""Cache replay: a (time, id, size) request trace through one byte-capacity cache tier.

Semantics, as in the cache-simulation literature (libCacheSim and others):
- A request for a cached object is a hit. If its size changed, the cached size is updated
  (evicting others if it no longer fits; an object now larger than the cache leaves it).
- A miss inserts the object, evicting until it fits; an object larger than the whole cache is
  not admitted (the request still counts as a miss).
- lru evicts the least recently requested object, fifo the earliest inserted, belady the one
  whose next request is furthest away (never requested again = furthest).
- Request miss ratio = misses / requests; byte miss ratio = bytes of missed requests / bytes
  requested.

The loops are plain Python over lists (ids mapped to small ints first): an OrderedDict's
move_to_end and popitem are C calls, which is as tight as a per-request loop gets without
compiled code.
"""
from __future__ import annotations

import csv
import heapq
import re
from collections import OrderedDict, deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import ScenarioError
from .io import read_text
from .limits import MAX_BYTES

POLICIES = ("lru", "fifo", "belady")
COLUMNS = ("time", "id", "size")


@dataclass(frozen=True)
class Requests:
    ids: list[int]    # dense object ids, 0..n_objects-1
    sizes: list[int]  # bytes per request

    def __len__(self) -> int:
        return len(self.ids)


@dataclass(frozen=True)
class ReplayResult:
    policy: str
    capacity: int
    requests: int
    misses: int
    bytes_requested: int
    bytes_missed: int

    @property
    def request_miss_ratio(self) -> float:
        return self.misses / self.requests if self.requests else 0.0

    @property
    def byte_miss_ratio(self) -> float:
        return self.bytes_missed / self.bytes_requested if self.bytes_requested else 0.0

    def to_dict(self) -> dict:
        return {"policy": self.policy, "capacity": self.capacity, "requests": self.requests,
                "misses": self.misses, "request_miss_ratio": self.request_miss_ratio,
                "byte_miss_ratio": self.byte_miss_ratio}


_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9,
          "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_size(text: str, source: str = "--capacity") -> int:
    """`1000`, `64MiB`, `1.5GB` (decimal and binary units) -> bytes."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][0-9]+)?)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).lower() not in _UNITS:
        raise ScenarioError(f"expected a size like 1000, 64MiB or 1.5GB, got {text!r}", source)
    number = float(m.group(1)) * _UNITS[m.group(2).lower()]
    if not number <= MAX_BYTES:  # also inf (1e400)
        raise ScenarioError(f"capacity is beyond {MAX_BYTES:.3g} bytes (got {text!r})", source)
    value = int(number)
    if value <= 0:
        raise ScenarioError(f"capacity must be > 0 bytes (got {text!r})", source)
    return value


def read_requests(path: str | Path) -> Requests:
    """Read a CSV with header `time,id,size` (extra columns ignored; rows in request order)."""
    path = Path(path)
    lines = read_text(path).splitlines()
    rows = list(csv.reader(lines))
    if not rows:
        raise ScenarioError("empty trace", str(path), "line 1")
    header = [h.strip() for h in rows[0]]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise ScenarioError(f"missing column(s) {', '.join(missing)} (the header must name time,id,size)",
                            str(path), "line 1")
    it, ii, isz = (header.index(c) for c in COLUMNS)
    body = rows[1:]
    width = len(header)
    if any(len(row) != width for row in body):
        n = next(i for i, row in enumerate(body, 2) if len(row) != width)
        raise ScenarioError(f"expected {width} fields, got {len(body[n - 2])}", str(path), f"line {n}")
    if not body:
        raise ScenarioError("the trace has no requests", str(path), "line 2")
    cols = list(zip(*body))
    try:  # fast path; on failure, find the offending line for the message
        times = np.fromiter(map(float, cols[it]), np.float64, len(body))
        sizes = np.fromiter(map(int, cols[isz]), np.int64, len(body))
    except (ValueError, OverflowError):
        for n, row in enumerate(body, 2):
            for name, idx, conv in (("time", it, float), ("size", isz, int)):
                try:
                    conv(row[idx])
                except ValueError:
                    raise ScenarioError(f"{name}: expected a number, got {row[idx]!r}", str(path),
                                        f"line {n}") from None
            if int(row[isz]) > MAX_BYTES:
                raise ScenarioError(f"size: beyond {MAX_BYTES:.3g} bytes (got {row[isz].strip()})", str(path),
                                    f"line {n}")
        raise
    bad = np.flatnonzero(sizes < 0)
    if len(bad):
        raise ScenarioError(f"size: must be >= 0 (got {sizes[bad[0]]})", str(path), f"line {bad[0] + 2}")
    bad = np.flatnonzero(sizes > MAX_BYTES)
    if len(bad):
        raise ScenarioError(f"size: beyond {MAX_BYTES:.3g} bytes (got {sizes[bad[0]]})", str(path),
                            f"line {bad[0] + 2}")
    bad = np.flatnonzero(~np.isfinite(times) | (times < 0))
    if len(bad):
        raise ScenarioError(f"time: must be a finite number >= 0 (got {cols[it][bad[0]].strip()})", str(path),
                            f"line {bad[0] + 2}")
    back = np.flatnonzero(np.diff(times) < 0)
    if len(back):
        i = back[0] + 1
        raise ScenarioError(f"time goes backwards ({times[i]} after {times[i - 1]}); requests must be in time "
                            f"order", str(path), f"line {i + 2}")
    index: dict[str, int] = {}
    ids = [index.setdefault(x, len(index)) for x in cols[ii]]
    return Requests(ids, sizes.tolist())


# --- policies ------------------------------------------------------------------------------------

def _lru(ids, sizes, cap):
    cache: OrderedDict = OrderedDict()
    used = misses = missed = 0
    move, pop = cache.move_to_end, cache.popitem
    for k, s in zip(ids, sizes):
        old = cache.get(k)
        if old is not None:
            move(k)
            if old == s:
                continue
            used += s - old  # size changed: update in place, then evict as on insert
            cache[k] = s
        else:
            misses += 1
            missed += s
            if s > cap:
                continue
            cache[k] = s
            used += s
        while used > cap:
            used -= pop(last=False)[1]  # the newest (k) is last: it goes only if alone and too big
    return misses, missed


def _fifo(ids, sizes, cap):
    cache: dict = {}
    order: deque = deque()
    used = misses = missed = 0
    for k, s in zip(ids, sizes):
        old = cache.get(k)
        if old is not None:
            if old == s:
                continue
            used += s - old
            cache[k] = s
        else:
            misses += 1
            missed += s
            if s > cap:
                continue
            cache[k] = s
            order.append(k)
            used += s
        while used > cap:
            v = order.popleft()
            used -= cache.pop(v)
    return misses, missed


def next_use(ids: list[int]) -> list[int]:
    """For each request, the index of the next request for the same object (len(ids) if none)."""
    a = np.asarray(ids, dtype=np.int64)
    n = len(a)
    order = np.argsort(a, kind="stable")       # by object, then by time
    nxt = np.full(n, n, dtype=np.int64)
    same = a[order[1:]] == a[order[:-1]]
    nxt[order[:-1][same]] = order[1:][same]
    return nxt.tolist()


def _belady(ids, sizes, cap):
    nxt = next_use(ids)
    cache: dict = {}       # id -> size
    when: dict = {}        # id -> its next request index (the key of its live heap entry)
    heap: list = []        # (-next request, id); stale entries skipped on pop
    used = misses = missed = 0
    for i, (k, s) in enumerate(zip(ids, sizes)):
        nu = nxt[i]
        old = cache.get(k)
        if old is not None:
            when[k] = nu
            heapq.heappush(heap, (-nu, k))
            if old == s:
                continue
            used += s - old
            cache[k] = s
            if s > cap:
                used -= cache.pop(k)
                continue
        else:
            misses += 1
            missed += s
            if s > cap:
                continue
            cache[k] = s
            when[k] = nu
            used += s
            heapq.heappush(heap, (-nu, k))
        held = None  # the object just requested is never its own victim
        while used > cap:
            neg, v = heapq.heappop(heap)
            if cache.get(v) is None or when[v] != -neg:
                continue  # stale entry
            if v == k:
                held = (neg, v)
                continue
            used -= cache.pop(v)
        if held:
            heapq.heappush(heap, held)
    return misses, missed


_RUN = {"lru": _lru, "fifo": _fifo, "belady": _belady}


def replay(reqs: Requests, policy: str, capacity: int) -> ReplayResult:
    if policy not in _RUN:
        raise ScenarioError(f"unknown policy {policy!r} (one of: {', '.join(POLICIES)})", "--policy")
    misses, missed = _RUN[policy](reqs.ids, reqs.sizes, capacity)
    return ReplayResult(policy, capacity, len(reqs), misses, int(sum(reqs.sizes)), missed)


# --- miss-ratio curves --------------------------------------------------------------------------

def footprint(reqs: Requests) -> int:
    """Bytes of every distinct object at its largest size: a cache this big never evicts."""
    if not len(reqs):
        return 0
    ids, sizes = np.asarray(reqs.ids, dtype=np.int64), np.asarray(reqs.sizes, dtype=np.int64)
    biggest = np.zeros(int(ids.max()) + 1, dtype=np.int64)
    np.maximum.at(biggest, ids, sizes)
    return int(biggest.sum())


def default_capacities(reqs: Requests, points: int = 12) -> list[int]:
    """Log-spaced capacities from 0.1% of the footprint to all of it: where a miss-ratio curve
    bends, whatever the trace's scale."""
    top = footprint(reqs)
    if top <= 0:
        return [1]
    caps = np.geomspace(max(top / 1000, 1), top, points)
    return sorted({max(1, int(round(c))) for c in caps})


def parse_capacities(text: str, reqs: Requests, source: str = "--capacities") -> list[int]:
    """`auto` (default_capacities of the trace) or sizes `64MiB, 1GB, …`, in the order given."""
    if text.strip().lower() == "auto":
        return default_capacities(reqs)
    entries = text.split(",")
    if not text.strip():
        raise ScenarioError("give at least one capacity (or auto)", source)
    if any(not t.strip() for t in entries):
        raise ScenarioError(f"an empty entry in {text!r}", source)
    caps = [parse_size(t, source) for t in entries]
    return caps


def miss_ratio_curve(reqs: Requests, policies, capacities, progress=None) -> list[ReplayResult]:
    """Every policy at every capacity, policy by policy. `progress(done, total)` is called after
    each replay (it may raise to stop early)."""
    for p in policies:
        if p not in _RUN:
            raise ScenarioError(f"unknown policy {p!r} (one of: {', '.join(POLICIES)})", "--policy")
    total, out = len(policies) * len(capacities), []
    for p in policies:
        for c in capacities:
            out.append(replay(reqs, p, c))
            if progress is not None:
                progress(len(out), total)
    return out
