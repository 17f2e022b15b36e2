"""RoPE-aware window prefetch into a small GPU slot cache (seed 000).

Prefetch path, event by event:
- A query at position q arrives. Its own read hits or misses. It opens the window
  [q-W, q+W] (or [q-W, q] with causal attention), clipped to the sequence.
- With eviction "outside_window", every resident position outside the window is evicted now.
- Window positions neither resident nor in flight are candidates, ordered by
  priority(d) = 1 / (1 + d / priority_scale), d = |p - q|; equal priorities go lower
  position first. Each candidate takes a free slot; with eviction "lazy" a full cache evicts
  its lowest-priority resident position (farthest from q; ties: lower position first), but
  only one strictly lower in priority than the candidate. Candidates that get no slot are not
  fetched. All fetched candidates form one batch: one storage round trip.
- Timed attention reads (scenario `reads`) hit if resident, wait for the rest of the round
  trip if in flight, and otherwise miss and fetch on demand (one round trip each).
- A position the query itself needs but that gets no slot is still fetched (uncached).

Naive path (the seed's baseline): no prefetcher, no batching. Attention reads every position
the query attends (all positions with full attention, 0..q when causal), each discovered on
demand and fetched in a strictly serial round trip; a position fetched once stays available
(capacity is not modelled on this path, as in the seed).

Stall = time queries and reads wait on storage (critical-path round trips), not wall clock.
"""
from __future__ import annotations

import bisect
import heapq
from typing import Any, Literal, Self

import numpy as np
from pydantic import model_validator

from ...attention_profile import calibrate_decay, mass_on
from ...engine import EventLoop
from ...errors import ScenarioError
from ...result import Result
from ...scenario import FieldError, ScenarioBase, Section, param
from ...size_guard import Estimate
from ...trace import SPAN_DTYPE, SPAN_KINDS, TraceBuilder
from ...units import ns_to_us, us_to_ns
from .. import Mechanism

# A run whose event estimate exceeds this is refused up front, with the estimate.
MAX_EVENTS = 20_000_000
# measured (see the README's size limits): 1M and 4M positions, 265 B and 2.7 µs per trace row
BYTES_PER_ROW, SECONDS_PER_ROW = 300, 3e-6
MAX_LENGTH = 50_000_000  # positions in a sequence


class Sequence(Section):
    length: int = param(16, ge=1, le=MAX_LENGTH, unit="tokens",
                        description="Tokens in the sequence (positions 0..length-1)")
    queries: list[int] = param([8, 12], min_length=1, unit="position",
                               description="Query positions, in arrival order")
    query_times_us: list[float] = param([0.0, 50.0], min_length=1, unit="µs",
                                        description="Arrival time of each query (one per query, non-decreasing)")

    @model_validator(mode="after")
    def _check(self) -> Self:
        for i, q in enumerate(self.queries):
            if not 0 <= q < self.length:
                raise FieldError(f"queries[{i}]", f"position {q} is outside the sequence 0..{self.length - 1}")
        if len(self.query_times_us) != len(self.queries):
            raise FieldError("query_times_us", f"needs one time per query: {len(self.queries)} queries, "
                                               f"{len(self.query_times_us)} times")
        for i, t in enumerate(self.query_times_us):
            if t < 0:
                raise FieldError(f"query_times_us[{i}]", f"time must be >= 0 (got {t})")
            if i and t < self.query_times_us[i - 1]:
                raise FieldError(f"query_times_us[{i}]", f"times must be non-decreasing ({t} after "
                                                         f"{self.query_times_us[i - 1]})")
        return self


class Cache(Section):
    slots: int = param(8, ge=1, le=10_000_000, unit="slots",
                       description="KV slots in the GPU cache (one position each)")


class Prefetch(Section):
    window: int = param(3, ge=0, le=1_000_000, unit="positions",
                        description="Half-width W: the window is [q-W, q+W] around the query")
    # past 1e9 (20x the longest sequence) every priority is within 5% of 1: no order is left to set
    priority_scale: float = param(100.0, gt=0, le=1e9, unit="positions",
                                  description="priority(d) = 1 / (1 + d / priority_scale)")
    eviction: Literal["outside_window", "lazy"] = param(
        "outside_window", description="outside_window: evict everything outside the new window; "
                                      "lazy: evict only when a slot is needed, lowest priority first")


class Storage(Section):
    latency_us: float = param(25.0, gt=0, le=1e7, unit="µs",
                              description="Round trip to the storage tier (the walkthrough: tier-3 flash, 25 µs)")


class Attention(Section):
    causal: bool = param(False, description="Causal: a query attends only positions <= q, and its "
                                            "window is [q-W, q]. The walkthrough's example is not causal.")
    profile: Literal["exponential", "uniform"] = param(
        "exponential", description="Shape of attention mass over distance (an assumption)")
    concentration: float = param(0.72, gt=0, lt=1, unit="share",
                                 description="Assumed share of a query's mass within ±radius "
                                             "(the walkthrough: ~72% within ±3)")
    # a radius past the longest sequence already spans every position (the profile is uniform)
    radius: int = param(3, ge=0, le=MAX_LENGTH, unit="positions", description="Radius for `concentration`")


class Read(Section):
    t_us: float = param(ge=0, unit="µs", description="When attention reads these positions")
    positions: list[int] = param(min_length=1, unit="position", description="Positions read")


class RopeWindowScenario(ScenarioBase):
    kind: Literal["rope_window"]
    sequence: Sequence = Sequence()
    cache: Cache = Cache()
    prefetch: Prefetch = Prefetch()
    storage: Storage = Storage()
    attention: Attention = Attention()
    reads: list[Read] = param([], description="Timed attention reads (inputs, not derived)")

    @model_validator(mode="after")
    def _check_reads(self) -> Self:
        for i, r in enumerate(self.reads):
            for j, p in enumerate(r.positions):
                if not 0 <= p < self.sequence.length:
                    raise FieldError(f"reads[{i}].positions[{j}]",
                                     f"position {p} is outside the sequence 0..{self.sequence.length - 1}")
        return self


def positions_text(positions: list[int]) -> str:
    """Sorted positions as the seed writes them: runs of three or more as a range
    ([5, 6, 7, 8] -> "5–8", [6, 9, 10] -> "6, 9, 10"); none -> ""."""
    parts, i = [], 0
    while i < len(positions):
        j = i
        while j + 1 < len(positions) and positions[j + 1] == positions[j] + 1:
            j += 1
        parts += [f"{positions[i]}–{positions[j]}"] if j - i >= 2 else [str(p) for p in positions[i:j + 1]]
        i = j + 1
    return ", ".join(parts)


def priority(d: int, scale: float) -> float:
    return 1.0 / (1.0 + d / scale)


def _attended(q: int, length: int, causal: bool) -> tuple[int, int]:
    return 0, (q if causal else length - 1)


class _Run:
    """All state of one run (nothing is shared between runs)."""

    def __init__(self, sc: RopeWindowScenario) -> None:
        self.sc = sc
        self.lat = us_to_ns(sc.storage.latency_us)
        self.loop = EventLoop()
        self.tb = TraceBuilder(slots=sc.cache.slots, item_name="token position", slot_tier="HBM")
        self.gpu = self.tb.lane("GPU · attention", "GPU")
        self.flash = self.tb.lane("flash · prefetch + demand", "Flash (tier 3)")
        self.resident: dict[int, tuple[int, int]] = {}   # pos -> (slot, since_ns)
        self.order: list[int] = []                       # resident positions, sorted
        self.inflight: dict[int, tuple[int, int]] = {}   # pos -> (slot or -1, land_ns)
        self.came_in: dict[int, int] = {}                # pos -> the batch that last fetched it
        self.free = list(range(sc.cache.slots))          # heap: lowest slot index first
        self.q = sc.sequence.queries[0]                  # current query (eviction priorities)
        self.batches = 0
        self.fetched = 0
        self.hits = self.misses = self.evictions = 0
        self.stall_ns = 0
        self.per_query: list[dict[str, Any]] = []
        self.read_steps: list[dict[str, Any]] = []  # one per timed [[reads]] step
        self.decay: dict[int, float] = {}

    # --- slots -------------------------------------------------------------------------
    def _count(self) -> None:
        t = self.loop.now
        self.tb.counter("slots in use", t, self.sc.cache.slots - len(self.free), "slots")
        self.tb.counter("resident", t, len(self.resident), "slots")

    def _evict(self, pos: int) -> None:
        slot, since = self.resident.pop(pos)
        del self.order[bisect.bisect_left(self.order, pos)]
        self.tb.residency(slot, since, self.loop.now, pos)
        self.tb.instant(self.flash, self.loop.now, "evict", pos, pos=pos, src="HBM")
        heapq.heappush(self.free, slot)
        self.evictions += 1

    def _victim(self) -> int:
        """Lowest-priority resident: farthest from the current query; ties lower position."""
        lo, hi = self.order[0], self.order[-1]
        return lo if self.q - lo >= hi - self.q else hi

    def _take_slot(self, pos: int) -> int:
        """A free slot; with lazy eviction, one freed from a resident strictly lower in
        priority than `pos`; otherwise -1."""
        if self.free:
            return heapq.heappop(self.free)
        if self.sc.prefetch.eviction != "lazy" or not self.order:
            return -1
        victim = self._victim()
        if abs(victim - self.q) <= abs(pos - self.q):
            return -1
        self._evict(victim)
        return heapq.heappop(self.free)

    def _issue(self, slots: dict[int, int], label: str) -> None:
        """One batched round trip for the positions in `slots` (pos -> reserved slot or -1)."""
        t, land = self.loop.now, self.loop.now + self.lat
        for p, slot in slots.items():
            self.inflight[p] = (slot, land)
            self.came_in[p] = self.batches  # the flow from this fetch to the reads it serves
        # no KV size is given for this scenario kind: bytes stay unknown, items count positions
        self.tb.span(self.flash, t, land, "fetch", label, ref=self.batches, items=len(slots), pos=min(slots),
                     src="flash", dst="HBM", turn=self.batches, flow=self.batches)
        self.tb.instant(self.flash, t, "issue", self.batches, turn=self.batches, pos=min(slots), items=len(slots))
        self.batches += 1
        self.fetched += len(slots)
        self.loop.at(land, self._land, list(slots), priority=0)
        self._count()

    def _land(self, batch: list[int]) -> None:
        t = self.loop.now
        for p in batch:
            slot, _ = self.inflight.pop(p)
            if slot >= 0:
                self.resident[p] = (slot, t)
                bisect.insort(self.order, p)
        self._count()

    # --- reads -------------------------------------------------------------------------
    def _read(self, p: int, demand: bool) -> int:
        """Count a read of p now; returns the ns it waits. Misses fetch on demand if asked."""
        t = self.loop.now
        if p in self.resident:
            self.hits += 1
            self.tb.instant(self.gpu, t, "hit", p, pos=p, flow=self.came_in.get(p, -1))
            return 0
        self.misses += 1
        self.tb.instant(self.gpu, t, "miss", p, pos=p, flow=self.came_in.get(p, -1) if p in self.inflight else -1)
        if p in self.inflight:
            return self.inflight[p][1] - t
        if demand:
            self._issue({p: self._take_slot(p)}, f"demand {p}")
        return self.lat

    def _window(self, q: int) -> tuple[int, int]:
        W, n = self.sc.prefetch.window, self.sc.sequence.length
        return max(0, q - W), (q if self.sc.attention.causal else min(n - 1, q + W))

    def query(self, i: int) -> None:
        sc, t = self.sc, self.loop.now
        q = sc.sequence.queries[i]
        self.q = q
        wait = self._read(q, demand=False)
        lo, hi = self._window(q)
        evicted = []
        if sc.prefetch.eviction == "outside_window":
            evicted = [p for p in self.order if p < lo or p > hi]
            for p in evicted:
                self._evict(p)
        kept = self.order[bisect.bisect_left(self.order, lo):bisect.bisect_right(self.order, hi)]
        # Candidates by priority (distance), ties lower position first: a stable sort on
        # distance of an ascending range gives exactly that order.
        cands = sorted((p for p in range(lo, hi + 1)
                        if p not in self.resident and p not in self.inflight),
                       key=lambda p: abs(p - q))
        chosen: dict[int, int] = {}
        for p in cands:
            slot = self._take_slot(p)
            if slot < 0 and p != q:
                break  # no slot: this and all lower-priority candidates are not fetched
            chosen[p] = slot  # the query's own position is fetched even uncached (-1)
        if chosen:
            self._issue(chosen, f"{min(chosen)}–{max(chosen)} ({len(chosen)})")
        ready = t + wait
        self.stall_ns += wait
        self.per_query.append({"position": q, "t_us": ns_to_us(t), "window": [lo, hi],
                               "fetched": len(chosen), "stall_us": ns_to_us(wait),
                               # which positions, as the seed words its timeline ("keeps 9-11")
                               "kept": positions_text(kept), "evicted": positions_text(evicted),
                               "fetched_positions": positions_text(sorted(chosen))})
        if wait:
            self.tb.span(self.gpu, t, ready, "stall", f"q{q} waits", ref=q, pos=q,
                         flow=self.came_in.get(q, -1) if q in self.inflight else -1)
        self.loop.at(ready, self._serve, i, priority=3)

    def _serve(self, i: int) -> None:
        """Attention for query i runs now: record the share of its mass on resident KV."""
        sc = self.sc
        q = sc.sequence.queries[i]
        first, last = _attended(q, sc.sequence.length, sc.attention.causal)
        r = self._decay(q, first, last)
        pos = np.fromiter(self.resident, dtype=np.int64, count=len(self.resident))
        self.per_query[i]["mass_covered"] = round(mass_on(pos, q, first, last, r), 6)

    def _decay(self, q: int, first: int, last: int) -> float:
        a = self.sc.attention
        if a.profile == "uniform":
            return 1.0
        return calibrate_decay(q - first, last - q, a.radius, a.concentration)

    def reads(self, positions: list[int]) -> None:
        hits0 = self.hits
        resident = [p for p in positions if p in self.resident]
        waits = [self._read(p, demand=True) for p in positions]
        self.read_steps.append({"t_us": ns_to_us(self.loop.now), "reads": len(positions),
                                "hits": self.hits - hits0, "hit": positions_text(sorted(resident))})
        wait = max(waits, default=0)  # one read step: its misses are fetched concurrently
        if wait:
            t = self.loop.now
            late = [p for p in positions if p in self.inflight]  # the fetch the step waits for
            self.tb.span(self.gpu, t, t + wait, "stall", f"read {positions} waits", ref=positions[0], pos=positions[0],
                         items=len(positions), flow=self.came_in[late[-1]] if late else -1)
        self.stall_ns += wait

    # --- naive path (vectorised: one serial round trip per attended position) ------------
    def naive(self) -> tuple[int, int, int]:
        """Returns (round trips, stall ns, end ns) of the naive path."""
        sc, lat = self.sc, self.lat
        lane = self.tb.lane("naive · serial demand fetch", "Naive (no prefetch)")
        seen_upto = -1  # with full attention the first query reads everything
        free_at = 0
        starts, positions = [], []
        for q, t_us in zip(sc.sequence.queries, sc.sequence.query_times_us):
            first, last = _attended(q, sc.sequence.length, sc.attention.causal)
            new = np.arange(max(first, seen_upto + 1), last + 1, dtype=np.int64)
            if not len(new):
                continue
            t0 = max(us_to_ns(t_us), free_at)
            starts.append(t0 + lat * np.arange(len(new), dtype=np.int64))
            positions.append(new)
            free_at = t0 + lat * len(new)
            seen_upto = last
        if not positions:
            return 0, 0, 0
        start = np.concatenate(starts)
        block = np.zeros(len(start), dtype=SPAN_DTYPE)
        block["lane"], block["start"], block["end"] = lane, start, start + lat
        block["kind"], block["ref"] = SPAN_KINDS.index("fetch"), np.concatenate(positions)
        block["label"] = [self.tb.label(f"pos {p}") for p in block["ref"].tolist()]
        block["fact"] = self.tb.fact_block(len(start), pos=block["ref"], items=1, src="flash", dst="HBM")
        self.tb.add_block("spans", block)
        return len(start), len(start) * lat, free_at


def _estimate_events(sc: RopeWindowScenario) -> tuple[int, str]:
    """Rough count of trace rows, and the field that drives it (for the refusal hint)."""
    window_rows = len(sc.sequence.queries) * (2 * sc.prefetch.window + 4)
    naive_rows = sc.sequence.length if not sc.attention.causal else max(sc.sequence.queries) + 1
    reads = sum(len(r.positions) for r in sc.reads)
    field = "prefetch.window" if window_rows >= naive_rows else "sequence.length"
    return window_rows + naive_rows + reads, field


def estimate(sc: RopeWindowScenario) -> Estimate:
    rows, field = _estimate_events(sc)
    return Estimate(rows * BYTES_PER_ROW, rows * SECONDS_PER_ROW, field)


def simulate(sc: RopeWindowScenario) -> Result:
    est, field = _estimate_events(sc)
    if est > MAX_EVENTS:
        raise ScenarioError(f"too large to simulate: about {est:,} trace rows (limit {MAX_EVENTS:,}); "
                            f"reduce {field}", field=field)
    run = _Run(sc)
    for i, t_us in enumerate(sc.sequence.query_times_us):
        run.loop.at(us_to_ns(t_us), run.query, i, priority=1)
    for r in sc.reads:
        run.loop.at(us_to_ns(r.t_us), run.reads, list(r.positions), priority=2)
    end = run.loop.run()
    naive_trips, naive_stall, naive_end = run.naive()
    # What is still cached stays resident to the end of the timeline (the naive path's too).
    end = max(end, naive_end)
    for p, (slot, since) in run.resident.items():
        run.tb.residency(slot, since, end, p)
    trace = run.tb.build()

    reads = run.hits + run.misses
    covered = [q["mass_covered"] for q in run.per_query]
    metrics = {
        "naive_stall_us": ns_to_us(naive_stall),
        "prefetch_stall_us": ns_to_us(run.stall_ns),
        # Exact: both stalls are integer ns; None when prefetch never waits.
        "speedup": (naive_stall / run.stall_ns) if run.stall_ns else None,
        "naive_round_trips": naive_trips,
        "prefetch_round_trips": run.batches,
        "positions_fetched": run.fetched,
        "hits": run.hits,
        "misses": run.misses,
        "reads": reads,
        "hit_rate": run.hits / reads if reads else None,
        "evictions": run.evictions,
        "attention_mass_covered": round(float(np.mean(covered)), 6),
        "attention_assumption": (f"{sc.attention.profile}: {sc.attention.concentration:.0%} of mass "
                                 f"within ±{sc.attention.radius}" if sc.attention.profile == "exponential"
                                 else "uniform over attended positions"),
        "queries": run.per_query,
        "read_steps": run.read_steps,
    }
    return Result(scenario=sc, trace=trace, metrics=metrics, events=run.loop.processed)


MECHANISM = Mechanism("rope_window", RopeWindowScenario, simulate, estimate, analyses=("rope_bound",))
