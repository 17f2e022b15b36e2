"""One engram_window run: decode steps on the GPU, the CPU's hashing and issue, pool reads over a
shared link into the staging buffer, and the MoE baseline (see the package's docstring)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt

from ...errors import ScenarioError
from ...result import Result
from ...size_guard import Estimate
from ...trace import COUNTER_DTYPE, RESIDENCY_DTYPE, SPAN_DTYPE, SPAN_KINDS, Rows, Trace, TraceBuilder
from ...units import ns_to_us, us_to_ns
from .hashing import distinct_primes, hash_rows, multipliers, zipf_tokens
from .model import EngramWindowScenario, ModelShape
from .queue import fifo_link

# A run whose size estimate (spans + reads) exceeds this is refused up front.
MAX_EVENTS = 20_000_000
PS_PER_NS = 1_000
# measured (see the README's size limits): 50 and 200 decode steps, ~140 B per estimated row
BYTES_PER_ROW, SECONDS_PER_ROW = 160, 1e-6


def initial_range(result: Result) -> tuple[int, int] | None:
    """Where a view of this run opens (ns): the first decode step's window, its pool fetch and
    any stall, with a margin. The whole run is a 14 ms ribbon on which a 1.8 µs CXL fetch and the
    point of the mechanism (the fetch against layers 0..k-1) are invisible."""
    sp = result.trace.spans
    steps = sp[sp["kind"] == SPAN_KINDS.index("decode")]
    if not len(steps):
        return None
    first_end = int(steps["end"].min())
    kinds = [SPAN_KINDS.index(k) for k in ("fetch", "stall", "prefetch")]
    near = sp[np.isin(sp["kind"], kinds) & (sp["start"] < first_end)]
    if not len(near):
        return None
    return 0, int(near["end"].max() * 1.25)


# --- geometry: layer times, tokens, rows -------------------------------------------------

def layer_times_ns(m: ModelShape) -> npt.NDArray[np.int64]:
    """Per-layer GPU time (int ns) at this batch size: a fixed part plus a per-token part.
    At the reference batch it is exactly the given time (no rounding through a factor)."""
    base_us = m.layer_times_us or [m.step_time_us / m.layers] * m.layers
    base = np.array([us_to_ns(t) for t in base_us], dtype=np.int64)
    grow = (1.0 - m.batch_fixed_share) * (m.batch_size - m.reference_batch) / m.reference_batch
    return base + np.rint(base * grow).astype(np.int64) if grow else base


def token_matrix(sc: EngramWindowScenario) -> npt.NDArray[np.int64]:
    """(batch, max_order - 1 + steps) token IDs: context first, then one new token per step."""
    t = sc.tokens
    width = max(sc.engram.orders) - 1 + sc.decode.steps
    if t.source == "zipf":
        return zipf_tokens(sc.model.batch_size, width, t.vocab, t.zipf_a, t.seed)
    return np.array([seq[:width] for seq in t.sequences()], dtype=np.int64)


def step_rows(sc: EngramWindowScenario) -> tuple[list[list[npt.NDArray[np.int64]]], int]:
    """Distinct rows each step reads for each Engram layer (sorted global row IDs), and the
    lookups per layer per step before coalescing (batch x orders x heads)."""
    e = sc.engram
    n_orders, layers = len(e.orders), e.module_layers
    primes = np.array(distinct_primes(e.table_rows, n_orders * e.heads), dtype=np.int64)
    # A global row ID: table offsets make rows of different tables (and layers) distinct.
    table_base = np.concatenate([[0], np.cumsum(primes)[:-1]]).reshape(n_orders, e.heads)
    per_layer = int(primes.sum())
    tokens = token_matrix(sc)
    rows = []
    for li, k in enumerate(layers):
        mult = multipliers(e.hash_seed, k, n_orders, e.heads, max(e.orders))
        z = hash_rows(tokens, sc.decode.steps, tuple(e.orders), mult, primes.reshape(n_orders, e.heads))
        gid = z + table_base + li * per_layer            # (steps, batch, order, head)
        rows.append(gid.reshape(sc.decode.steps, -1))
    lookups = sc.model.batch_size * n_orders * e.heads
    return [[np.unique(r[s]) for r in rows] for s in range(sc.decode.steps)], lookups


def _rows(sc: EngramWindowScenario) -> int:
    """Rough count of spans and reads a run makes."""
    e = sc.engram
    lookups = sc.model.batch_size * len(e.orders) * e.heads * len(e.module_layers)
    return sc.decode.steps * (4 * sc.model.layers + 3 * lookups)


def estimate(sc: EngramWindowScenario) -> Estimate:
    rows = _rows(sc)
    return Estimate(rows * BYTES_PER_ROW, rows * SECONDS_PER_ROW, "decode.steps")


def _ceil_ns(ps: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    return -(-ps // PS_PER_NS)


def _xfer_ps(nbytes: int, gbps: float) -> int:
    """Transfer time in ps: 1 GB/s moves one byte per ns."""
    return int(round(nbytes * PS_PER_NS / gbps))


# --- the run -------------------------------------------------------------------------------

Ns = npt.NDArray[np.int64]  # times in ns, one per read or layer


class _LayerTally(TypedDict):
    """One Engram layer over the steps: each step's fetch, stall and MoE stall (ns), reads issued."""
    fetch: list[int]
    stall: list[int]
    moe: list[int]
    issued: int


class _Run:
    """All state of one run (nothing is shared between runs)."""

    def __init__(self, sc: EngramWindowScenario) -> None:
        self.sc = sc
        e, p = sc.engram, sc.pool
        self.k_layers = e.module_layers
        self.d = layer_times_ns(sc.model)
        self.d_plain = self.d.copy()                        # the same step without Engram
        self.d[list(self.k_layers)] += us_to_ns(e.compute_us)
        self.first = e.window_from_layer
        self.window = {k: int(self.d[self.first:k].sum()) for k in self.k_layers}
        # Data path timing, integer ps.
        self.lat_ps = us_to_ns(p.latency_us) * PS_PER_NS
        link = p.bandwidth_GBps if sc.transfer.path == "A" else min(p.bandwidth_GBps, sc.pcie.bandwidth_GBps)
        self.row_ps = _xfer_ps(e.row_bytes, link)
        self.copy_lat_ps = us_to_ns(sc.pcie.copy_latency_us) * PS_PER_NS

        self.tb = tb = TraceBuilder(item_name="Engram row (staging slot)", slot_tier="HBM")
        pool, path_a = p.name, sc.transfer.path == "A"
        self.cpu = tb.lane("CPU · hash + issue", "CPU")
        self.gpu_steps = tb.lane("GPU · decode steps", "GPU")
        self.gpu = tb.lane("GPU · layers", "GPU")
        self.win_lane = {k: tb.lane(f"GPU · window for L{k}", "GPU") for k in self.k_layers}
        dest = "host DRAM" if path_a else "GPU (P2P)"
        self.pool_lane = {k: tb.lane(f"{pool} → {dest} · L{k} rows", pool) for k in self.k_layers}
        self.pcie = tb.lane("PCIe · bounce copies host → GPU", "PCIe") if path_a else None
        # the pool's tier for the trace's facts: RDMA if its name says so, else CXL (ours)
        self.pool_tier = "RDMA" if "rdma" in pool.lower() else "CXL"
        self.step = 0  # the decode step being recorded (the facts' turn, and its flows)
        # The baseline's reads leave only when layer k-1 ends (a router needs its hidden state).
        self.moe_gpu = tb.lane("MoE · GPU layers", "MoE baseline")
        self.moe_pool = tb.lane(f"MoE · {pool} reads after L(k-1)", "MoE baseline")
        self.layer_label = np.array([tb.label(f"L{j}" + (" · Engram" if j in self.k_layers else ""))
                                     for j in range(sc.model.layers)], dtype=np.int32)
        self.gpu_blocks: list[Rows] = []
        self.residency: list[Rows] = []
        # (name, unit) -> (times, level changes) of the counters, summed into levels at build()
        self.counter_events: dict[tuple[str, str], list[tuple[Ns, npt.NDArray[np.float64]]]] = {}
        self.max_slots = 0
        self.work = 0  # reads and layer executions simulated (Result.events, for benchmarks)

    # --- helpers -----------------------------------------------------------------------
    def _flow(self, step: int, k: int) -> int:
        """One flow id per step and Engram layer: its rows' fetch to the layer that reads them."""
        return step * self.sc.model.layers + k

    def _events(self, name: str, unit: str, t: npt.ArrayLike, delta: npt.ArrayLike) -> None:
        self.counter_events.setdefault((name, unit), []).append(
            (np.asarray(t, dtype=np.int64), np.broadcast_to(np.asarray(delta, dtype=np.float64), np.shape(t))))

    def deliver(self, release_ns: Ns, layer_of: npt.NDArray[np.integer[Any]], record: bool) -> tuple[Ns, Ns, Ns]:
        """Reads released at `release_ns` (FIFO order) -> (pool start, pool done, staged) in ns.
        `layer_of` gives each read's index into k_layers (path A flushes a chunk per layer)."""
        sc = self.sc
        self.work += len(release_ns)
        start_ps, done_ps = fifo_link(release_ns * PS_PER_NS, self.lat_ps, self.row_ps, sc.pool.max_outstanding)
        start, done = _ceil_ns(start_ps), _ceil_ns(done_ps)
        if record:
            pool = sc.pool.name
            self._events(f"{pool} queued", "reads", np.concatenate([release_ns, start]),
                         np.concatenate([np.ones(len(start)), -np.ones(len(start))]))
            self._events(f"{pool} in flight", "reads", np.concatenate([start, done]),
                         np.concatenate([np.ones(len(start)), -np.ones(len(start))]))
        pcie = self.pcie
        if pcie is None:  # path B: the rows land in HBM themselves
            return start, done, done
        # Path A: consecutive rows of one layer form a chunk; its copy starts when its last row
        # is in host DRAM and the previous copy has finished (one stream), and lands all rows.
        staged = np.empty_like(done)
        ends: list[tuple[int, int, int, int]] = []  # (begin ps, end ps, first row, past the last)
        edge = 0
        bounds = np.flatnonzero(np.diff(layer_of)) + 1
        for lo_l, hi_l in zip(np.r_[0, bounds], np.r_[bounds, len(done)]):
            for lo in range(int(lo_l), int(hi_l), sc.pcie.copy_rows):
                hi = min(lo + sc.pcie.copy_rows, int(hi_l))
                begin = max(int(done_ps[hi - 1]), edge)
                edge = begin + self.copy_lat_ps + _xfer_ps((hi - lo) * sc.engram.row_bytes, sc.pcie.bandwidth_GBps)
                staged[lo:hi] = -(-edge // PS_PER_NS)
                ends.append((begin, edge, lo, hi))
        if record:
            for begin, edge, lo, hi in ends:
                k = self.k_layers[int(layer_of[lo])]
                self.tb.span(pcie, -(-begin // PS_PER_NS), -(-edge // PS_PER_NS), "copy",
                             f"copy {hi - lo} rows", ref=hi - lo, bytes=(hi - lo) * sc.engram.row_bytes,
                             items=hi - lo, src="host DRAM", dst="HBM", turn=self.step, layer=k,
                             flow=self._flow(self.step, k))
            self._events("host bounce rows", "rows", np.concatenate([done, staged]),
                         np.concatenate([np.ones(len(done)), -np.ones(len(done))]))
        return start, done, staged

    def gpu_layers(self, lane: int, t0: int, wait_for: Callable[[int, int, int], int], flows: bool = True
                   ) -> tuple[Ns, dict[int, int]]:
        """Lay one step's layers from t0. Before Engram layer k, the GPU waits
        wait_for(i, k, at) ns, where `at` is when k could start. Returns layer end times and
        each Engram layer's stall (ns)."""
        d = self.d
        self.work += len(d)
        before = np.concatenate([[0], np.cumsum(d)[:-1]])  # layer starts without stalls
        wait = np.zeros(len(d), dtype=np.int64)
        stalls: dict[int, int] = {}
        shift = 0
        for i, k in enumerate(self.k_layers):  # ascending: a stall delays every later layer
            w = max(0, wait_for(i, k, t0 + int(before[k]) + shift))
            stalls[k], wait[k], shift = w, w, shift + w
        starts = t0 + before + np.cumsum(wait)
        block = np.zeros(len(d), dtype=SPAN_DTYPE)
        block["lane"], block["start"], block["end"] = lane, starts, starts + d
        block["kind"], block["label"], block["ref"] = SPAN_KINDS.index("compute"), self.layer_label, np.arange(len(d))
        flow = np.full(len(d), -1, dtype=np.int64)  # an Engram layer consumes its rows' fetch
        if flows:  # the MoE baseline's layers read their own fetches (no flow drawn)
            flow[list(self.k_layers)] = [self._flow(self.step, k) for k in self.k_layers]
        block["fact"] = self.tb.fact_block(len(d), turn=self.step, layer=np.arange(len(d)), flow=flow)
        self.gpu_blocks.append(block)
        for k, w in stalls.items():
            if w:
                self.tb.span(lane, int(starts[k]) - w, int(starts[k]), "stall", f"L{k} waits for Engram rows", ref=k,
                             turn=self.step, layer=k)
        return starts + d, stalls

    # --- one Engram step ---------------------------------------------------------------------
    def engram_step(self, s: int, t0: int, rows: list[npt.NDArray[np.int64]]) -> tuple[int, dict[int, dict[str, int]]]:
        sc, tb = self.sc, self.tb
        self.step = s
        counts = [len(r) for r in rows]
        n = sum(counts)
        layer_of = np.repeat(np.arange(len(rows)), counts)
        lookups = sc.model.batch_size * len(sc.engram.orders) * sc.engram.heads * len(rows)
        hash_end = t0 + int(round(lookups * sc.cpu.hash_ns))
        issued = hash_end + np.rint(np.arange(1, n + 1) * sc.cpu.issue_ns).astype(np.int64)
        t_open = t0 + int(self.d[:self.first].sum())
        release = np.maximum(issued, t_open)
        tb.span(self.cpu, t0, hash_end, "hash", f"hash {lookups} n-gram lookups", ref=s, turn=s)
        held = " (held until L1 starts)" if self.first == 1 and int(issued[-1]) < t_open else ""
        tb.span(self.cpu, hash_end, int(issued[-1]), "issue", f"post {n} reads{held}", ref=s, turn=s, items=n)

        start, done, staged = self.deliver(release, layer_of, record=True)
        lo = np.concatenate([[0], np.cumsum(counts)[:-1]])
        ready = {k: int(staged[lo[i]:lo[i] + counts[i]].max()) for i, k in enumerate(self.k_layers)}
        ends, stalls = self.gpu_layers(self.gpu, t0, lambda i, k, at: ready[k] - at)

        out: dict[int, dict[str, int]] = {}  # per Engram layer: its fetch and stall (ns)
        for i, k in enumerate(self.k_layers):
            a, b = lo[i], lo[i] + counts[i]
            lane = self.pool_lane[k]
            moved = dict(bytes=counts[i] * sc.engram.row_bytes, items=counts[i], turn=s, layer=k)
            tb.span(lane, int(start[a]), int(done[b - 1]), "fetch",
                    f"L{k}: {counts[i]} reads, ≤{sc.pool.max_outstanding} in flight", ref=s,
                    src=self.pool_tier, dst="host DRAM" if self.pcie is not None else "HBM",
                    flow=self._flow(s, k), **moved)
            tb.instant(lane, int(release[a]), "issue", ref=s, **moved)
            tb.instant(lane, ready[k], "land", ref=s, dst="HBM", **moved)
            tb.span(self.win_lane[k], t_open, int(ends[k] - self.d[k]) - stalls[k], "prefetch",
                    f"window for L{k}: {ns_to_us(self.window[k]):g} µs", ref=s, turn=s, layer=k)
            # Staging: each row holds a slot from landing until layer k has consumed it.
            res = np.zeros(counts[i], dtype=RESIDENCY_DTYPE)
            res["slot"], res["start"], res["end"], res["item"] = np.arange(a, b), staged[a:b], ends[k], rows[i]
            self.residency.append(res)
            self._events("staging rows", "rows", np.r_[staged[a:b], ends[k]],
                         np.r_[np.ones(counts[i]), -counts[i]])
            out[k] = {"fetch": ready[k] - t_open, "stall": stalls[k]}
        self.max_slots = max(self.max_slots, n)
        tb.span(self.gpu_steps, t0, int(ends[-1]), "decode", f"decode step {s}", ref=s, turn=s)
        return int(ends[-1]), out

    # --- one MoE-baseline step ---------------------------------------------------------------
    def moe_step(self, s: int, t0: int, rows: list[npt.NDArray[np.int64]]) -> tuple[int, dict[int, int]]:
        def fetch_after_previous_layer(i: int, k: int, at: int) -> int:
            # A router knows its rows only once layer k-1 has ended, i.e. at `at`.
            _, _, staged = self.deliver(np.full(len(rows[i]), at, dtype=np.int64),
                                        np.zeros(len(rows[i]), dtype=np.int64), record=False)
            landed = int(staged.max())
            self.tb.span(self.moe_pool, at, landed, "fetch", f"L{k}: {len(rows[i])} reads after L{k - 1}", ref=s,
                         bytes=len(rows[i]) * self.sc.engram.row_bytes, items=len(rows[i]), src=self.pool_tier,
                         dst="host DRAM" if self.pcie is not None else "HBM", turn=s, layer=k)
            return landed - at

        ends, stalls = self.gpu_layers(self.moe_gpu, t0, fetch_after_previous_layer, flows=False)
        return int(ends[-1]), stalls

    # --- trace assembly ------------------------------------------------------------------------
    def build(self) -> Trace:
        tb = self.tb
        tb.slots = self.max_slots
        for block in self.gpu_blocks:
            tb.add_block("spans", block)
        if self.residency:
            tb.add_block("residency", np.concatenate(self.residency))
        for (name, unit), parts in self.counter_events.items():
            t = np.concatenate([p[0] for p in parts])
            v = np.concatenate([p[1] for p in parts])
            order = np.argsort(t, kind="stable")
            t, level = t[order], np.cumsum(v[order])
            last = np.r_[t[1:] != t[:-1], True]  # one sample per instant: the level after it
            block = np.zeros(int(last.sum()), dtype=COUNTER_DTYPE)
            block["name"], block["t"], block["value"] = tb.counter_id(name, unit), t[last], level[last]
            tb.add_block("counters", block)
        return tb.build()


def simulate(sc: EngramWindowScenario) -> Result:
    est = _rows(sc)
    if est > MAX_EVENTS:
        raise ScenarioError(f"too large to simulate: about {est:,} spans and reads (limit {MAX_EVENTS:,}); "
                            "reduce decode.steps, model.batch_size or engram.heads", field="decode.steps")
    run = _Run(sc)
    rows_by_step, lookups = step_rows(sc)
    per: dict[int, _LayerTally] = {k: {"fetch": [], "stall": [], "moe": [], "issued": 0} for k in run.k_layers}
    t_e = t_m = 0
    for s, rows in enumerate(rows_by_step):
        t_e, got = run.engram_step(s, t_e, rows)
        t_m, moe = run.moe_step(s, t_m, rows)
        for i, k in enumerate(run.k_layers):
            per[k]["fetch"].append(got[k]["fetch"])
            per[k]["stall"].append(got[k]["stall"])
            per[k]["moe"].append(moe[k])
            per[k]["issued"] += len(rows[i])
    trace = run.build()

    steps, row_bytes = sc.decode.steps, sc.engram.row_bytes
    layers: list[dict[str, Any]] = []
    for k in run.k_layers:
        p, window, fetch = per[k], run.window[k], max(per[k]["fetch"])
        coalesced = steps * lookups - p["issued"]
        layers.append({
            "layer": k,
            "window_us": ns_to_us(window),
            "fetch_us": ns_to_us(fetch),
            "slack_us": ns_to_us(window - fetch),
            "stall_us": ns_to_us(max(p["stall"])),
            "feasible": fetch <= window,
            "moe_stall_us": ns_to_us(max(p["moe"])),
            "reads_issued": p["issued"],
            "reads_coalesced": coalesced,
            "bytes_fetched": p["issued"] * row_bytes,
        })
    worst = min(layers, key=lambda m: m["slack_us"])
    plain = int(run.d_plain.sum()) * steps
    metrics = {
        "step_time_us": ns_to_us(t_e / steps),
        "window_us": worst["window_us"],
        "fetch_us": worst["fetch_us"],
        "slack_us": worst["slack_us"],
        "stall_us": worst["stall_us"],
        "feasible": all(m["feasible"] for m in layers),
        "overhead_pct": round(100.0 * (t_e - plain) / plain, 6),
        "moe_stall_us": worst["moe_stall_us"],
        "reads_issued": sum(m["reads_issued"] for m in layers),
        "reads_coalesced": sum(m["reads_coalesced"] for m in layers),
        "bytes_fetched": sum(m["bytes_fetched"] for m in layers),
        "worst_layer": worst["layer"],
        "steps": steps,
        "path": sc.transfer.path,
        "window_convention": f"window = Σ t_exec(i), i = {sc.engram.window_from_layer}..k-1",
        "layers": layers,
    }
    return Result(scenario=sc, trace=trace, metrics=metrics, events=run.work)
