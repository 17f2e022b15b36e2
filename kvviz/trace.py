"""The one event format every mechanism emits and every view and exporter reads.

A Trace is a handful of numpy structured arrays (a million spans cost tens of megabytes,
not a million Python objects). Times are integer nanoseconds. Kinds, labels and counter
names are small integers indexing the string tables below or on the Trace, so the arrays
stay fixed-width.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

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
FACT_FIELDS: tuple[str, ...] = FACT_DTYPE.names
NO_FACT = 0
COUNTER_DTYPE = np.dtype([("name", "i4"), ("t", "i8"), ("value", "f8")])
RESIDENCY_DTYPE = np.dtype([("slot", "i4"), ("start", "i8"), ("end", "i8"), ("item", "i8")])

NO_LABEL = -1


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _tier(v) -> int:
    return TIERS.index(v) if isinstance(v, str) else int(v)


def fact_row(**facts) -> tuple:
    """One FACT_DTYPE row from keyword facts (tiers by name); the rest unknown (-1)."""
    unknown = set(facts) - set(FACT_FIELDS)
    if unknown:
        raise TypeError(f"unknown facts: {sorted(unknown)}")
    return tuple(_tier(facts[f]) if f in ("src", "dst") and f in facts else int(facts.get(f, -1))
                 for f in FACT_FIELDS)


@dataclass(frozen=True, eq=False)
class Trace:
    """Immutable timeline of one run. Build it with TraceBuilder."""

    lanes: np.ndarray
    spans: np.ndarray
    instants: np.ndarray
    counters: np.ndarray
    residency: np.ndarray
    labels: tuple[str, ...] = ()
    counter_names: tuple[str, ...] = ()
    counter_units: tuple[str, ...] = ()
    slots: int = 0          # rows of the residency grid
    item_name: str = "item"  # what a residency item is: token position, session, row
    facts: np.ndarray | None = None  # FACT_DTYPE rows that spans' and instants' `fact` index

    def __post_init__(self):  # however built (CSV, unpickling), the arrays are read-only
        if self.facts is None:
            object.__setattr__(self, "facts", np.full(1, -1, dtype=FACT_DTYPE))
        for a in (self.lanes, self.spans, self.instants, self.counters, self.residency, self.facts):
            a.flags.writeable = False

    def __reduce__(self):  # unpickle through __init__, so __post_init__ runs again
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

    def spans_of(self, lane: str, kind: str | None = None) -> np.ndarray:
        s = self.spans[self.spans["lane"] == self.lane_index(lane)]
        return s if kind is None else s[s["kind"] == SPAN_KINDS.index(kind)]

    def instants_of(self, kind: str, lane: str | None = None) -> np.ndarray:
        s = self.instants[self.instants["kind"] == INSTANT_KINDS.index(kind)]
        return s if lane is None else s[s["lane"] == self.lane_index(lane)]

    def counter(self, name: str) -> np.ndarray:
        return self.counters[self.counters["name"] == self.counter_names.index(name)]

    def label(self, i: int) -> str:
        return self.labels[i] if i >= 0 else ""

    def facts_of(self, row) -> dict[str, object]:
        """The known facts of one span or instant row: {field: value}, tiers by name."""
        i = int(row["fact"])
        if i <= NO_FACT:
            return {}
        f = self.facts[i]
        return {name: (TIERS[int(f[name])] if name in ("src", "dst") else int(f[name]))
                for name in FACT_FIELDS if int(f[name]) >= 0}

    def fact_column(self, rows: np.ndarray, name: str) -> np.ndarray:
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


def _canonical_labels(spans: np.ndarray, labels: tuple[str, ...]) -> tuple[np.ndarray, tuple[str, ...]]:
    """Renumber labels by first use in the (sorted) spans and drop unused ones, so equal
    timelines have equal arrays however their labels were created."""
    used = spans["label"] >= 0
    if not used.any():
        return spans, ()
    uniq, first = np.unique(spans["label"][used], return_index=True)
    order = uniq[np.argsort(first)]
    remap = np.full(len(labels), NO_LABEL, dtype=np.int32)
    remap[order] = np.arange(len(order), dtype=np.int32)
    out = spans.copy()
    out["label"][used] = remap[spans["label"][used]]
    return _frozen(out), tuple(labels[i] for i in order)


def _canonical_facts(spans: np.ndarray, instants: np.ndarray, facts: np.ndarray):
    """Equal facts share one row, numbered by first use in spans then instants; unused rows go.
    Row 0 (nothing known) stays first."""
    ids = np.concatenate([spans["fact"], instants["fact"]])
    used = ids > NO_FACT
    if not used.any():
        return spans, instants, _frozen(facts[:1].copy())
    rows = facts[ids[used]]
    uniq, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), dtype=np.int32)
    rank[order] = np.arange(len(order), dtype=np.int32)
    new = ids.astype(np.int32).copy()
    new[used] = rank[inverse.reshape(-1)] + 1
    sp, ins = spans.copy(), instants.copy()
    sp["fact"], ins["fact"] = new[:len(spans)], new[len(spans):]
    return _frozen(sp), _frozen(ins), _frozen(np.concatenate([facts[:1], uniq[order]]))


@dataclass
class TraceBuilder:
    """Collects events during a run; `build()` freezes them into a Trace.

    Rows are gathered in Python lists (cheap appends) or as whole numpy blocks (for
    mechanisms that emit vectorised batches) and concatenated once at the end.
    """

    slots: int = 0
    item_name: str = "item"
    _lanes: list[tuple[str, str]] = field(default_factory=list)
    _spans: list = field(default_factory=list)
    _instants: list = field(default_factory=list)
    _counters: list = field(default_factory=list)
    _residency: list = field(default_factory=list)
    _blocks: dict = field(default_factory=lambda: {"spans": [], "instants": [], "counters": [],
                                                     "residency": []})
    _labels: dict[str, int] = field(default_factory=dict)
    _counter_names: dict[str, int] = field(default_factory=dict)
    _counter_units: list[str] = field(default_factory=list)
    # FACT_DTYPE arrays, and tuples not yet in one; row 0 is "nothing known"
    _facts: list = field(default_factory=lambda: [fact_row()])
    _n_facts: int = 1

    def lane(self, name: str, group: str) -> int:
        self._lanes.append((name, group))
        return len(self._lanes) - 1

    def label(self, text: str) -> int:
        return self._labels.setdefault(text, len(self._labels))

    def span(self, lane: int, start: int, end: int, kind: str, label: str = "", ref: int = -1, **facts):
        """A span; keyword `facts` (bytes=, src="DRAM", job=, ...: FACT_FIELDS) say what it moved."""
        if end < start:
            raise ValueError(f"span ends before it starts: {start}..{end}")
        self._spans.append((lane, start, end, SPAN_KINDS.index(kind),
                            self.label(label) if label else NO_LABEL, ref, self.fact(**facts) if facts else NO_FACT))

    def instant(self, lane: int, t: int, kind: str, ref: int = -1, **facts):
        self._instants.append((lane, t, INSTANT_KINDS.index(kind), ref, self.fact(**facts) if facts else NO_FACT))

    def fact(self, **facts) -> int:
        """The id of a fact row (for a span or instant's `fact`, or a prebuilt block's)."""
        self._facts.append(fact_row(**facts))
        self._n_facts += 1
        return self._n_facts - 1

    def fact_block(self, n: int, **columns) -> np.ndarray:
        """Ids of n fact rows given as columns (arrays or one value each; tiers by name or index),
        for mechanisms that emit vectorised blocks."""
        block = np.full(n, -1, dtype=FACT_DTYPE)
        for name, v in columns.items():
            if name not in FACT_FIELDS:
                raise TypeError(f"unknown fact: {name}")
            block[name] = _tier(v) if name in ("src", "dst") and isinstance(v, str) else v
        self._facts.append(block)
        self._n_facts += n
        return np.arange(self._n_facts - n, self._n_facts, dtype=np.int32)

    def fact_table(self) -> np.ndarray:
        parts, rows = [], []
        for f in self._facts:
            if isinstance(f, tuple):
                rows.append(f)
                continue
            if rows:
                parts.append(np.array(rows, dtype=FACT_DTYPE))
                rows = []
            parts.append(f)
        if rows:
            parts.append(np.array(rows, dtype=FACT_DTYPE))
        return np.concatenate(parts) if parts else np.zeros(0, dtype=FACT_DTYPE)

    def counter_id(self, name: str, unit: str = "") -> int:
        if name not in self._counter_names:
            self._counter_names[name] = len(self._counter_names)
            self._counter_units.append(unit)
        return self._counter_names[name]

    def counter(self, name: str, t: int, value: float, unit: str = ""):
        self._counters.append((self.counter_id(name, unit), t, value))

    def residency(self, slot: int, start: int, end: int, item: int):
        self._residency.append((slot, start, end, item))

    def add_block(self, table: str, block: np.ndarray):
        """Append a prebuilt structured array (dtype must match the table's)."""
        self._blocks[table].append(block)

    def _table(self, rows: list, table: str, dtype: np.dtype) -> np.ndarray:
        parts = [np.array(rows, dtype=dtype)] + self._blocks[table]
        out = np.concatenate(parts) if len(parts) > 1 else parts[0]
        return _frozen(out)

    def build(self) -> Trace:
        spans = self._table(self._spans, "spans", SPAN_DTYPE)
        instants = self._table(self._instants, "instants", INSTANT_DTYPE)
        counters = self._table(self._counters, "counters", COUNTER_DTYPE)
        residency = self._table(self._residency, "residency", RESIDENCY_DTYPE)
        # Stable time order makes traces comparable and lets views binary-search.
        spans = _frozen(spans[np.argsort(spans["start"], kind="stable")])
        instants = _frozen(instants[np.argsort(instants["t"], kind="stable")])
        counters = _frozen(counters[np.argsort(counters["t"], kind="stable")])
        spans, labels = _canonical_labels(spans, tuple(self._labels))
        spans, instants, facts = _canonical_facts(spans, instants, self.fact_table())
        return Trace(
            lanes=_frozen(np.array(self._lanes, dtype=LANE_DTYPE)),
            spans=spans, instants=instants, counters=counters, residency=residency,
            labels=labels, counter_names=tuple(self._counter_names),
            counter_units=tuple(self._counter_units), slots=self.slots, item_name=self.item_name,
            facts=facts,
        )
