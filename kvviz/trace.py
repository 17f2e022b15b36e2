"""The one event format every mechanism emits and every view and exporter reads.

A Trace is a handful of numpy structured arrays (a million spans cost tens of megabytes,
not a million Python objects). Times are integer nanoseconds. Kinds, labels and counter
names are small integers indexing the string tables below or on the Trace, so the arrays
stay fixed-width.
"""
from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import numpy.typing as npt

# A structured array (rows of one of the dtypes below); integer ids, as numpy makes them
Rows = npt.NDArray[np.void]
Ints = npt.NDArray[np.integer[Any]]
# A fact's value: a count, or a tier by name (src, dst) or by index into TIERS
FactValue = int | np.integer[Any] | str
# packed rows as the builder keeps them and a compiled recorder hands them over
Packed = bytes | bytearray | memoryview

# Span and instant kinds are a closed vocabulary shared by all mechanisms, so a colour
# or legend entry is defined once (resources/palette.toml) and works for every scenario.
SPAN_KINDS: tuple[str, ...] = (
    "compute", "fetch", "load", "save", "stall", "prefill", "decode",
    "hash", "issue", "copy", "evict_write", "prefetch", "idle",
)
INSTANT_KINDS: tuple[str, ...] = ("hit", "miss", "evict", "issue", "land", "arrive", "overflow")
# Memory tiers a transfer moves between, also a closed vocabulary (a fact's src and dst).
TIERS: tuple[str, ...] = ("HBM", "host DRAM", "DRAM", "CXL", "RDMA", "SSD", "flash")

LANE_DTYPE = np.dtype([("name", "U96"), ("group", "U64")])
SPAN_DTYPE = np.dtype([("lane", "i4"), ("start", "i8"), ("end", "i8"), ("kind", "u1"),
                       ("label", "i4"), ("ref", "i8"), ("fact", "i4")])
INSTANT_DTYPE = np.dtype([("lane", "i4"), ("t", "i8"), ("kind", "u1"), ("ref", "i8"), ("fact", "i4")])
# What a span or mark knows beyond its time (the side table `Trace.facts`, indexed by a row's
# `fact`; rows share one when their facts are equal; row 0 knows nothing, so a block made with
# np.zeros says nothing). -1 = not known / not applicable.
# bytes moved; items (positions, rows, layers) moved; src/dst tier (index into TIERS); the job
# (session, conversation), turn (or decode step, batch), token position (or row) and layer it
# belongs to; flow: an id shared by a transfer and the events that consume what it brought.
FACT_DTYPE = np.dtype([("bytes", "i8"), ("items", "i8"), ("src", "i1"), ("dst", "i1"), ("job", "i8"),
                       ("turn", "i8"), ("pos", "i8"), ("layer", "i4"), ("flow", "i8")])
FACT_FIELDS: tuple[str, ...] = FACT_DTYPE.names or ()
NO_FACT = 0
_UNKNOWN = (-1,) * len(FACT_FIELDS)  # a fact row that knows nothing
_FACT_AT = {name: i for i, name in enumerate(FACT_FIELDS)}
COUNTER_DTYPE = np.dtype([("name", "i4"), ("t", "i8"), ("value", "f8")])
RESIDENCY_DTYPE = np.dtype([("slot", "i4"), ("start", "i8"), ("end", "i8"), ("item", "i8")])

NO_LABEL = -1


def _codes(dtype: np.dtype[np.void]) -> str:
    """struct's codes for one row of `dtype` (native order, no padding: as numpy lays it out)."""
    codes = {"i1": "b", "u1": "B", "i4": "i", "i8": "q", "f8": "d"}
    return "".join(codes[dtype[n].str[1:]] for n in dtype.names or ())


# TraceBuilder gathers rows as packed bytes, so they become arrays without a per-value conversion.
# A span's or an instant's row (SPAN_ROW_DTYPE, INSTANT_ROW_DTYPE: the table's columns, then the
# fact's) carries its fact inline (its `fact` INLINE) or by id (the fact columns then ignored).
INLINE = np.iinfo(np.int32).min
SPAN_ROW_DTYPE, INSTANT_ROW_DTYPE = (np.dtype(d.descr + FACT_DTYPE.descr) for d in (SPAN_DTYPE, INSTANT_DTYPE))
_SPAN, _INSTANT = (struct.Struct(f"={_codes(d)}{FACT_DTYPE.itemsize}x") for d in (SPAN_DTYPE, INSTANT_DTYPE))
_SPAN_F, _INSTANT_F = (struct.Struct("=" + _codes(d)) for d in (SPAN_ROW_DTYPE, INSTANT_ROW_DTYPE))
_RESIDENCY, _FACT = (struct.Struct("=" + _codes(d)) for d in (RESIDENCY_DTYPE, FACT_DTYPE))
assert _SPAN.size == _SPAN_F.size == SPAN_ROW_DTYPE.itemsize == SPAN_DTYPE.itemsize + FACT_DTYPE.itemsize
assert _INSTANT.size == INSTANT_ROW_DTYPE.itemsize and _FACT.size == FACT_DTYPE.itemsize


def _tier(v: FactValue) -> int:
    return TIERS.index(v) if isinstance(v, str) else int(v)


def fact_row(**facts: FactValue) -> tuple[int, ...]:
    """One FACT_DTYPE row from keyword facts (tiers by name); the rest unknown (-1)."""
    row = list(_UNKNOWN)
    for name, v in facts.items():
        i = _FACT_AT.get(name)
        if i is None:
            raise TypeError(f"unknown facts: {sorted(set(facts) - set(FACT_FIELDS))}")
        row[i] = _tier(v) if name in ("src", "dst") else int(v)
    return tuple(row)


@dataclass(frozen=True, eq=False)
class Trace:
    """Immutable timeline of one run. Build it with TraceBuilder."""

    lanes: Rows
    spans: Rows
    instants: Rows
    counters: Rows
    residency: Rows
    labels: tuple[str, ...] = ()
    counter_names: tuple[str, ...] = ()
    counter_units: tuple[str, ...] = ()
    slots: int = 0          # rows of the residency grid
    item_name: str = "item"  # what a residency item is: token position, session, row
    # FACT_DTYPE rows that spans' and instants' `fact` index (default: row 0 alone, nothing known)
    facts: Rows = field(default_factory=lambda: np.full(1, -1, dtype=FACT_DTYPE))
    slot_tier: str = ""  # the memory tier (a name in TIERS) whose slots the residency fills; "" unknown

    def __post_init__(self) -> None:  # however built (CSV, unpickling), the arrays are read-only
        for a in (self.lanes, self.spans, self.instants, self.counters, self.residency, self.facts):
            a.flags.writeable = False

    def __reduce__(self) -> tuple[type[Trace], tuple[Any, ...]]:  # unpickle through __init__: __post_init__ again
        return (Trace, tuple(getattr(self, f.name) for f in fields(self)))

    @property
    def t_end(self) -> int:
        ends = [a.max() for a in (self.spans["end"], self.instants["t"], self.counters["t"],
                                  self.residency["end"]) if len(a)]
        return int(max(ends)) if ends else 0

    def lane_index(self, name: str) -> int:
        hits = np.flatnonzero(self.lanes["name"] == name)
        if not len(hits):
            raise KeyError(name)
        return int(hits[0])

    def spans_of(self, lane: str, kind: str | None = None) -> Rows:
        s: Rows = self.spans[self.spans["lane"] == self.lane_index(lane)]
        return s if kind is None else s[s["kind"] == SPAN_KINDS.index(kind)]

    def instants_of(self, kind: str, lane: str | None = None) -> Rows:
        s: Rows = self.instants[self.instants["kind"] == INSTANT_KINDS.index(kind)]
        return s if lane is None else s[s["lane"] == self.lane_index(lane)]

    def counter(self, name: str) -> Rows:
        rows: Rows = self.counters[self.counters["name"] == self.counter_names.index(name)]
        return rows

    def label(self, i: int) -> str:
        return self.labels[i] if i >= 0 else ""

    def facts_of(self, row: np.void) -> dict[str, object]:
        """The known facts of one span or instant row: {field: value}, tiers by name."""
        i = int(row["fact"])
        if i <= NO_FACT:
            return {}
        f = self.facts[i]
        return {name: (TIERS[int(f[name])] if name in ("src", "dst") else int(f[name]))
                for name in FACT_FIELDS if int(f[name]) >= 0}

    def fact_column(self, rows: Rows, name: str) -> npt.NDArray[np.int64]:
        """One fact of many rows at once (-1 where unknown)."""
        out = np.full(len(rows), -1, dtype=np.int64)
        has = rows["fact"] > NO_FACT
        out[has] = self.facts[name][rows["fact"][has]]
        return out

    def fingerprint(self) -> str:
        """A digest of every array: equal traces have equal fingerprints."""
        import hashlib
        h = hashlib.sha256()
        for a in (self.lanes, self.spans, self.instants, self.counters, self.residency, self.facts):
            h.update(a.tobytes())
        h.update("\x00".join(self.labels + self.counter_names).encode())
        return h.hexdigest()


def _first_use(ids: Ints, n: int) -> Ints:
    """The distinct values of `ids` (ints in 0..n-1) in the order they first occur: the values at
    their first positions, taken in position order (no sort)."""
    first = np.full(n, len(ids), dtype=np.int64)
    np.minimum.at(first, ids, np.arange(len(ids)))
    at_first = np.zeros(len(ids), dtype=bool)
    at_first[first[first < len(ids)]] = True
    return ids[at_first]


def _canonical_labels(spans: Rows, labels: tuple[str, ...]) -> tuple[Rows, tuple[str, ...]]:
    """Renumber labels by first use in the (sorted) spans and drop unused ones, so equal
    timelines have equal arrays however their labels were created. In place (build()'s arrays)."""
    used = spans["label"] >= 0
    if not used.any():
        return spans, ()
    order = _first_use(spans["label"][used], len(labels))
    remap = np.full(len(labels), NO_LABEL, dtype=np.int32)
    remap[order] = np.arange(len(order), dtype=np.int32)
    spans["label"][used] = remap[spans["label"][used]]
    return spans, tuple(labels[i] for i in order)


_HASH_MUL = np.uint64(0x9E3779B97F4A7C15)  # odd: a row hashes as the polynomial in it of its columns


def _as_bytes(a: Rows) -> Rows:
    """Each row as one opaque value of its bytes (packed dtypes: no padding, so equal bytes are
    equal values), which numpy compares and gathers in one piece rather than field by field."""
    return a.view(np.dtype((np.void, a.dtype.itemsize)))


def _value_classes(facts: Rows) -> tuple[Ints, Ints]:
    """(class of each row, a row of each class): rows share a class iff their values are equal.
    Grouped by a polynomial hash of the row (a sort of one integer column), every row then
    checked against its class's row; on a collision (never seen) the rows themselves are sorted."""
    h = np.zeros(len(facts), dtype=np.uint64)
    for name in FACT_FIELDS:
        h *= _HASH_MUL  # wraps: arithmetic mod 2**64
        h += facts[name].astype(np.int64).view(np.uint64)
    perm = np.argsort(h)
    hs = h[perm]
    start = np.empty(len(hs), dtype=bool)
    start[:1] = True
    np.not_equal(hs[1:], hs[:-1], out=start[1:])
    cls = np.empty(len(hs), dtype=np.int64)
    cls[perm] = np.cumsum(start) - 1
    rep = perm[start]
    # each row against its class's row (a class's own row is equal to itself: not compared)
    rows, step, other = _as_bytes(facts), 1 << 16, np.flatnonzero(rep[cls] != np.arange(len(cls)))
    if all((rows[other[i:i + step]] == rows[rep[cls[other[i:i + step]]]]).all()  # in pieces: no temporary
           for i in range(0, len(other), step)):                                 # the size of the table
        return cls, rep
    _, rep, cls = np.unique(facts, return_index=True, return_inverse=True)
    return cls.reshape(-1), rep


def _canonical_facts(spans: Rows, instants: Rows, facts: Rows) -> tuple[Rows, Rows, Rows]:
    """Equal facts share one row, numbered by first use in spans then instants; unused rows go.
    Row 0 (nothing known) stays first. In place (build()'s arrays)."""
    ids = np.concatenate([spans["fact"], instants["fact"]])
    used = ids > NO_FACT
    if not used.any():
        return spans, instants, facts[:1].copy()
    cls, first = _value_classes(facts[1:])
    c = cls[ids[used] - 1]
    order = _first_use(c, len(first))
    rank = np.zeros(len(first), dtype=np.int32)
    rank[order] = np.arange(1, len(order) + 1, dtype=np.int32)
    ids[used] = rank[c]
    spans["fact"], instants["fact"] = ids[:len(spans)], ids[len(spans):]
    return spans, instants, _as_bytes(facts)[np.concatenate([[0], first[order] + 1])].view(FACT_DTYPE)


# a part's rows, which of them carry their fact inline, and those facts' bytes (as _unpack gives them)
InlineFacts = tuple[Rows, npt.NDArray[np.intp], npt.NDArray[np.uint8]]


def _unpack(parts: Sequence[Packed], row_dtype: np.dtype[np.void], dtype: np.dtype[np.void]
            ) -> tuple[Rows, list[InlineFacts]]:
    """Packed span or instant rows, in parts (bytes-likes, in order): (every row as `dtype`, and per
    part: (its rows: a view of those, which of them carry their fact inline, the part's facts' bytes:
    a view, to be copied where they go)). The parts are not joined: a row's columns are copied once."""
    views = [np.frombuffer(p, dtype=np.uint8).reshape(-1, row_dtype.itemsize) for p in parts]
    out = np.empty(sum(len(b) for b in views), dtype=dtype)
    heads = out.view(np.uint8).reshape(-1, dtype.itemsize)  # packed dtypes: a row is its bytes
    pieces: list[InlineFacts] = []
    i = 0
    for b in views:
        rows = out[i:i + len(b)]
        heads[i:i + len(b)] = b[:, :dtype.itemsize]
        pieces.append((rows, np.flatnonzero(rows["fact"] == INLINE), b[:, dtype.itemsize:]))
        i += len(b)
    return out, pieces


def _gather_facts(table: Rows, *inline: InlineFacts) -> Rows:
    """The facts made by id, then each table's inline facts (their rows get the ids in turn)."""
    n = len(table) + sum(len(at) for _, at, _ in inline)
    facts = np.empty(n, dtype=FACT_DTYPE)
    facts[:len(table)] = table
    into = facts.view(np.uint8).reshape(n, FACT_DTYPE.itemsize)
    i = len(table)
    for rows, at, fact_bytes in inline:
        np.take(fact_bytes, at, axis=0, out=into[i:i + len(at)], mode="clip")  # at is in range
        rows["fact"][at] = np.arange(i, i + len(at))
        i += len(at)
    return facts


def _time_order(a: Rows, t: str) -> Rows:
    """`a` in stable order of column `t`; as it is when already in that order (recorded runs
    mostly emit in time order: a test of order is far cheaper than a sort)."""
    col = a[t]
    if len(col) < 2 or not (col[1:] < col[:-1]).any():
        return a
    return a[np.argsort(col, kind="stable")]


@dataclass
class TraceBuilder:
    """Collects events during a run; `build()` freezes them into a Trace.

    Rows are gathered as packed bytes (a struct.pack per row; arrays are views of them at the
    end, with no per-value conversion) or as whole numpy blocks (for mechanisms that emit
    vectorised batches). Equal facts are merged once, at build().

    Two ways to record. The keyword calls (`span`, `instant`, `counter`: kinds and labels as
    text, facts as keywords) suit code that records little. A run that records an event per job
    or per iteration uses the positional calls, whose arguments are ints resolved once, so a
    call is one pack and one append; they suit compiled callers too:
      - `SPAN_KINDS.index(kind)` / `INSTANT_KINDS.index(kind)`: a kind's number, once per kind;
      - `label(text)`: a label's id, once per distinct text (keep the ids in a dict or list keyed
        by what the text is made of, rather than formatting the text per call); NO_LABEL: none;
      - a fact is nine ints in FACT_FIELDS order (bytes, items, src, dst, job, turn, pos, layer,
        flow), -1 where unknown, tiers as TIERS indices;
      - `add_span_facts(lane, start, end, kind, label, ref, <fact>)`: a span and its fact;
        `add_instant_facts(lane, t, kind, ref, <fact>)`: an instant and its fact;
      - `add_span(lane, start, end, kind, label, ref, fact)`, `add_instant(lane, t, kind, ref,
        fact)`: with a fact id (NO_FACT: none; `fact_id(<fact>)` makes one, e.g. to share);
      - `residency(slot, start, end, item)`;
      - `counter_series(names, units)` once, then `counter_row(series, t, values)`: a point for
        each value that differs from the series' previous row (every value of its first row),
        compared as float64. A series' names are registered at build(), after `counter`'s;
      - a compiled recorder may skip the call per event: it packs the same rows into its own
        buffer (SPAN_ROW_DTYPE: the span's columns, then the fact's, `fact` INLINE for a fact
        given inline; INSTANT_ROW_DTYPE; RESIDENCY_DTYPE; native byte order, no padding) and hands
        them over with `add_rows(table, rows)`; a series' rows (t int64, then its values as
        float64) with `counter_rows(series, rows)`. Rows keep their order among calls'.
    Every value must be an int (or a numpy integer) in its column's range: a float is refused
    (struct.error). A span that ends before it starts is refused at build().
    The kinds of call may be mixed; the Trace does not depend on which made a row.
    """

    slots: int = 0
    item_name: str = "item"
    slot_tier: str = ""
    _lanes: list[tuple[str, str]] = field(default_factory=list)
    # Packed rows made by calls since the last add_rows; the earlier rows, in order, in _parts
    _spans: bytearray = field(default_factory=bytearray)
    _instants: bytearray = field(default_factory=bytearray)
    _counters: list[tuple[int, int, float]] = field(default_factory=list)
    _residency: bytearray = field(default_factory=bytearray)
    _parts: dict[str, list[Packed]] = field(default_factory=lambda: {"spans": [], "instants": [], "residency": []})
    _blocks: dict[str, list[Rows]] = field(default_factory=lambda: {"spans": [], "instants": [], "counters": [],
                                                     "residency": []})
    _labels: dict[str, int] = field(default_factory=dict)
    _counter_names: dict[str, int] = field(default_factory=dict)
    _counter_units: list[str] = field(default_factory=list)
    # (names, units, the pack of a row, packed rows)
    _series: list[tuple[tuple[str, ...], tuple[str, ...], Callable[..., bytes], bytearray]] = field(default_factory=list)
    # Facts by id from 1 (row 0 is "nothing known"): FACT_DTYPE arrays, then the packed rows
    # made since the last of them
    _fact_parts: list[Rows] = field(default_factory=list)
    _facts: bytearray = field(default_factory=bytearray)
    _n_facts: int = 1

    def lane(self, name: str, group: str) -> int:
        self._lanes.append((name, group))
        return len(self._lanes) - 1

    def label(self, text: str) -> int:
        return self._labels.setdefault(text, len(self._labels))

    def span(self, lane: int, start: int, end: int, kind: str, label: str = "", ref: int = -1,
             **facts: FactValue) -> None:
        """A span; keyword `facts` (bytes=, src="DRAM", job=, ...: FACT_FIELDS) say what it moved."""
        if end < start:
            raise ValueError(f"span ends before it starts: {start}..{end}")
        self._spans += _SPAN.pack(int(lane), int(start), int(end), SPAN_KINDS.index(kind),
                                  self.label(label) if label else NO_LABEL, int(ref),
                                  self.fact(**facts) if facts else NO_FACT)

    def instant(self, lane: int, t: int, kind: str, ref: int = -1, **facts: FactValue) -> None:
        self._instants += _INSTANT.pack(int(lane), int(t), INSTANT_KINDS.index(kind), int(ref),
                                        self.fact(**facts) if facts else NO_FACT)

    def add_span(self, lane: int, start: int, end: int, kind: int, label: int, ref: int, fact: int) -> None:
        self._spans += _SPAN.pack(lane, start, end, kind, label, ref, fact)

    def add_span_facts(self, lane: int, start: int, end: int, kind: int, label: int, ref: int, bytes_: int,
                       items: int, src: int, dst: int, job: int, turn: int, pos: int, layer: int, flow: int) -> None:
        self._spans += _SPAN_F.pack(lane, start, end, kind, label, ref, INLINE,
                                    bytes_, items, src, dst, job, turn, pos, layer, flow)

    def add_instant(self, lane: int, t: int, kind: int, ref: int, fact: int) -> None:
        self._instants += _INSTANT.pack(lane, t, kind, ref, fact)

    def add_instant_facts(self, lane: int, t: int, kind: int, ref: int, bytes_: int, items: int, src: int,
                          dst: int, job: int, turn: int, pos: int, layer: int, flow: int) -> None:
        self._instants += _INSTANT_F.pack(lane, t, kind, ref, INLINE,
                                          bytes_, items, src, dst, job, turn, pos, layer, flow)

    def fact(self, **facts: FactValue) -> int:
        """The id of a fact row (for a span or instant's `fact`, or a prebuilt block's)."""
        return self.fact_id(*fact_row(**facts))

    def fact_id(self, *row: int) -> int:
        """The id of a fact given positionally (see the class docstring)."""
        self._facts += _FACT.pack(*row)
        self._n_facts += 1
        return self._n_facts - 1

    def fact_block(self, n: int, **columns: FactValue | npt.ArrayLike) -> npt.NDArray[np.int32]:
        """Ids of n fact rows given as columns (arrays or one value each; tiers by name or index),
        for mechanisms that emit vectorised blocks."""
        block = np.full(n, -1, dtype=FACT_DTYPE)
        for name, v in columns.items():
            if name not in FACT_FIELDS:
                raise TypeError(f"unknown fact: {name}")
            block[name] = _tier(v) if name in ("src", "dst") and isinstance(v, str) else v
        if self._facts:
            self._fact_parts.append(np.frombuffer(bytes(self._facts), dtype=FACT_DTYPE))
            self._facts = bytearray()
        self._fact_parts.append(block)
        self._n_facts += n
        return np.arange(self._n_facts - n, self._n_facts, dtype=np.int32)

    def fact_table(self) -> Rows:
        """Every fact row made by id (row 0: nothing known), not those given inline."""
        return np.concatenate([np.array([_UNKNOWN], dtype=FACT_DTYPE), *self._fact_parts,
                               np.frombuffer(self._facts, dtype=FACT_DTYPE)])

    def counter_id(self, name: str, unit: str = "") -> int:
        if name not in self._counter_names:
            self._counter_names[name] = len(self._counter_names)
            self._counter_units.append(unit)
        return self._counter_names[name]

    def counter(self, name: str, t: int, value: float, unit: str = "") -> None:
        self._counters.append((self.counter_id(name, unit), t, value))

    def counter_series(self, names: tuple[str, ...], units: tuple[str, ...]) -> int:
        """Counters sampled together (see the class docstring): the series' id for counter_row."""
        self._series.append((tuple(names), tuple(units), struct.Struct("=q" + "d" * len(names)).pack, bytearray()))
        return len(self._series) - 1

    def counter_row(self, series: int, t: int, values: Sequence[float]) -> None:
        _, _, pack, rows = self._series[series]
        rows += pack(t, *values)

    def counter_rows(self, series: int, rows: Packed) -> None:
        """Whole packed rows of a series (see the class docstring), as if each were a counter_row."""
        names, _, _, mine = self._series[series]
        size = 8 * (1 + len(names))
        if memoryview(rows).nbytes % size:
            raise ValueError(f"counter series {series}: {memoryview(rows).nbytes} bytes is not a whole number of "
                             f"{size}-byte rows")
        mine.extend(rows)

    def residency(self, slot: int, start: int, end: int, item: int) -> None:
        self._residency += _RESIDENCY.pack(slot, start, end, item)

    def add_rows(self, table: str, rows: Packed) -> None:
        """Whole packed rows (bytes-like) of "spans" (SPAN_ROW_DTYPE), "instants" (INSTANT_ROW_DTYPE)
        or "residency" (RESIDENCY_DTYPE), as if each were a call, in order: for a compiled recorder
        that fills its own buffer and hands it over now and then instead of calling per event."""
        dtype = {"spans": SPAN_ROW_DTYPE, "instants": INSTANT_ROW_DTYPE, "residency": RESIDENCY_DTYPE}[table]
        if memoryview(rows).nbytes % dtype.itemsize:
            raise ValueError(f"{table}: {memoryview(rows).nbytes} bytes is not a whole number of {dtype.itemsize}-byte rows")
        # Kept as a part, not appended: a bytearray grown block by block is copied at each growth
        parts, mine = self._parts[table], getattr(self, f"_{table}")
        if mine:  # the calls' rows so far come first
            parts.append(mine)
            setattr(self, f"_{table}", bytearray())
        parts.append(bytes(rows))

    def _rows(self, table: str) -> list[Packed]:
        """A table's packed rows in order: the parts, then the calls' rows since."""
        return [*self._parts[table], getattr(self, f"_{table}")]

    def add_block(self, table: str, block: Rows) -> None:
        """Append a prebuilt structured array (dtype must match the table's)."""
        self._blocks[table].append(block)

    def _table(self, first: Rows, table: str, extra: Iterable[Rows] = ()) -> Rows:
        parts = [first, *extra, *self._blocks[table]]
        return np.concatenate(parts) if len(parts) > 1 else first

    def _series_points(self) -> list[Rows]:
        out = []
        for names, units, _, rows in self._series:
            if not rows:
                continue
            ids = np.array([self.counter_id(n, u) for n, u in zip(names, units)], dtype=np.int32)
            m = np.frombuffer(rows, dtype=np.dtype([("t", "i8"), ("v", "f8", len(names))]))
            v = m["v"]
            changed = np.ones(v.shape, dtype=bool)
            changed[1:] = v[1:] != v[:-1]
            r, c = np.nonzero(changed)  # row-major: a row's points in the series' order
            block = np.empty(len(r), dtype=COUNTER_DTYPE)
            block["name"], block["t"], block["value"] = ids[c], m["t"][r], v[r, c]
            out.append(block)
        return out

    def build(self) -> Trace:
        spans, span_rows = _unpack(self._rows("spans"), SPAN_ROW_DTYPE, SPAN_DTYPE)
        instants, instant_rows = _unpack(self._rows("instants"), INSTANT_ROW_DTYPE, INSTANT_DTYPE)
        late = np.flatnonzero(spans["end"] < spans["start"])
        if len(late):
            raise ValueError(f"span ends before it starts: {spans['start'][late[0]]}..{spans['end'][late[0]]}")
        facts = _gather_facts(self.fact_table(), *span_rows, *instant_rows)
        del span_rows, instant_rows  # views of the packed rows
        spans, instants = self._table(spans, "spans"), self._table(instants, "instants")
        counters = self._table(np.array(self._counters, dtype=COUNTER_DTYPE), "counters", self._series_points())
        residency = self._table(np.concatenate([np.frombuffer(p, dtype=RESIDENCY_DTYPE) for p in self._rows("residency")]),
                                "residency")
        # Stable time order makes traces comparable and lets views binary-search.
        spans, instants, counters = _time_order(spans, "start"), _time_order(instants, "t"), _time_order(counters, "t")
        spans, labels = _canonical_labels(spans, tuple(self._labels))
        spans, instants, facts = _canonical_facts(spans, instants, facts)
        return Trace(
            lanes=np.array(self._lanes, dtype=LANE_DTYPE),  # every array made read-only by Trace
            spans=spans, instants=instants, counters=counters, residency=residency,
            labels=labels, counter_names=tuple(self._counter_names),
            counter_units=tuple(self._counter_units), slots=self.slots, item_name=self.item_name,
            facts=facts, slot_tier=self.slot_tier,
        )
