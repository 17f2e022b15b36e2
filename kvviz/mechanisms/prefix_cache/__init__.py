"""Block-level prefix caching over HBM, CXL, DRAM, SSD and a remote pool (issue 21), as the
serving engines do it (vLLM's automatic prefix caching, SGLang's RadixAttention and HiCache,
LMCache, Mooncake): requests carry chained block hashes, a hit is the longest resident prefix,
and blocks move between an ordered list of tiers under named promotion, write, admission and
eviction rules (engine.py says each).

This is the untimed replay (`serving.timing = false`): hits, bytes and occupancy per tier, no
serving times. Every listed eviction policy runs on the identical workload
(`metrics.policies.<name>`); the Trace shows `trace_policy`'s run.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from ...errors import ScenarioError
from ...requests.extent import extent
from ...requests.jsonl import MOONCAKE_BLOCK_TOKENS
from ...result import Result
from ...serving.native import block_cache
from ...size_guard import Estimate
from ...trace import COUNTER_DTYPE, INSTANT_DTYPE, INSTANT_KINDS, Trace, TraceBuilder
from .. import Mechanism
from . import costs
from .engine import Outcome, ceiling, prepare, replay
from .generator import generated
from .metrics import run_metrics, tier_setup
from .model import PrefixCacheScenario, Serving, Workload
from .pricing import priced
from .sizing import trace_lookups
from .timed import timed_result
from .workload import GENERATOR_BLOCK_TOKENS, Blocks, load

# Above this many block lookups (block occurrences over all requests) a run is refused: each
# costs about 200 bytes per run (time: costs.py).
MAX_LOOKUPS = 50_000_000
BYTES_PER_LOOKUP = 200
# reading a JSONL trace: peak RSS growth and CPU time per byte of file (measured: the bundled
# Mooncake sample, 1.1 MB, took 9 MB and 46 ms in kvviz.requests.prompts.read)
READ_BYTES_PER_BYTE, READ_SECONDS_PER_BYTE = 8, 40e-9
MAX_COUNTER_POINTS = 20_000  # occupancy samples per tier drawn (every k-th request beyond)
# the timeline's lanes: one per tier, a mark at a request's arrival where its longest resident
# prefix ended in that tier, and one for requests with no hit (the replay has no serving times)
HIT_LANE = "{} · hits ending here"
MISS_LANE = "no hit · computed in full"

GENERATOR_FIELDS = ("seed", "requests", "session_rate_per_s", "system_prompts", "system_prompt_tokens",
                    "system_zipf", "documents", "document_tokens", "document_share", "document_zipf",
                    "multi_turn_share", "mean_turns", "user_tokens_mean", "output_tokens_mean", "think_time_s",
                    "agent_share", "agent_steps_mean", "agent_step_tokens", "agent_gap_s", "tokens_sigma")


# the serving section but its switch: the timed engine's GPUs, roofline and batch
TIMED_SERVING_FIELDS = tuple(f for f in Serving.model_fields if f != "timing")


def inactive(data: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    w = data.get("workload")
    if isinstance(w, dict) and isinstance(w.get("trace_file"), str) and w["trace_file"]:
        out = {f"workload.{f}": "not used: workload.trace_file gives the workload" for f in GENERATOR_FIELDS}
    else:
        out["workload.max_requests"] = "not used: only a trace file is cut to its first requests"
    c = data.get("cache")
    if not (isinstance(c, dict) and c.get("admission") == "min_reuse"):
        out["cache.min_reuse_count"] = "not used: only cache.admission = min_reuse reads it"
    sv, st = data.get("serving"), data.get("store")
    if not (isinstance(sv, dict) and sv.get("timing")):  # the untimed replay: hits only, no serving
        why = "not used: only the timed engine (serving.timing = true) reads it"
        out.update({f"serving.{f}": why for f in TIMED_SERVING_FIELDS})
        out["links.rule"] = why
        out["store.load_if_faster"] = why
    if not (isinstance(st, dict) and st.get("prefetch")):
        out.update({f"store.{f}": "not used: store.prefetch is off" for f in ("prefetch_lookahead", "prefetch_tier")})
    return out


def _runs(sc: PrefixCacheScenario) -> list[tuple[str, bool, bool]]:
    """The runs simulate makes, as (HBM's evictor, prefetch, recorded): each policy (again with
    prefetch when timed), and the all-Belady reference unless a policy is it."""
    evs = [[p if t.eviction == "policy" else t.eviction for t in sc.tiers] for p in sc.policies]
    runs = [(ev[0], False, p == sc.shown_policy) for p, ev in zip(sc.policies, evs)]
    if sc.serving.timing and sc.store.prefetch:
        runs += [(ev[0], True, False) for ev in evs]
    if ["belady"] * len(sc.tiers) not in evs:
        runs.append(("belady", False, False))
    return runs


# Up to this many generated requests the estimate generates their prompts (~0.2 ms a request,
# about 1% of their timed run) to count the lookups: a few hundred requests' mean is the
# lognormal tails' (prefix_cache_tiers' 200: 719 blocks a request, the expectation 358).
EXACT_REQUESTS = 2000


@lru_cache(maxsize=8)
def _generated_lookups(w: Workload, tokens: int) -> int | None:
    """The generator's block lookups, counted by generating (None beyond the lookup limit). Kept
    per workload (a frozen section): `kvviz run` asks the estimate twice before simulating, and
    each count is a whole generation (~0.2 s of prefix_cache_tiers' ~1.5)."""
    try:
        _, offsets, *_ = generated(w, tokens, MAX_LOOKUPS)
    except ScenarioError:  # beyond the lookup limit: the expectation, which refuses it
        return None
    return int(offsets[-1])


def _generated(w: Workload) -> tuple[float, float]:
    """(requests, block lookups) the generator makes: counted up to EXACT_REQUESTS, else the
    expectation. A session of T requests re-sends its context, so its prompts hold
    T·(system prompt + document) + its new tokens + E[T(T-1)/2]·(new + reply) tokens; T is
    1 + a geometric of mean (turns - 1), whose E[T(T-1)/2] = (turns - 1)²."""
    tokens = w.block_tokens or GENERATOR_BLOCK_TOKENS
    if w.requests <= EXACT_REQUESTS and (n := _generated_lookups(w, tokens)) is not None:
        return float(w.requests), float(n)
    base = w.system_prompt_tokens + w.document_share * w.document_tokens
    kinds = ((w.agent_share, w.agent_steps_mean, w.agent_step_tokens),
             ((1 - w.agent_share) * w.multi_turn_share, w.mean_turns, w.user_tokens_mean))
    single = (1 - w.agent_share) * (1 - w.multi_turn_share)
    per_session = single * (base + w.user_tokens_mean)
    turns = single
    for share, T, new in kinds:
        per_session += share * (T * (base + new) + (T - 1) ** 2 * (new + w.output_tokens_mean))
        turns += share * T
    return float(w.requests), w.requests * (per_session / turns / tokens + 0.5)  # + the partial last block


def _timed_seconds(sc: PrefixCacheScenario, requests: float, lookups: float, block_tokens: int) -> float:
    """The timed runs' CPU seconds (costs.py): each run's lookups, requests and pinned walks."""
    s, kv = sc.serving, sc.model.kv_bytes_per_token
    per_request = lookups * block_tokens / requests if requests else 0.0
    held = costs.held_blocks(sc.tiers[0].blocks(block_tokens * kv), int(s.running_kv_gb * 1e9) // kv,
                             s.max_batch, per_request, block_tokens)
    return sum(costs.timed_run_s(ev, pf, lookups, requests, held, rec) for ev, pf, rec in _runs(sc))


def estimate(sc: PrefixCacheScenario) -> Estimate:
    w = sc.workload
    if w.trace_file:  # from the file's size and its first lines (sizing.py), before it is read
        lookups = trace_lookups(w.trace_file, w.max_requests)
        size = os.stat(w.trace_file).st_size if os.path.isfile(w.trace_file) else 0
        ext = extent(w.trace_file)
        lines = ext.lines if ext else float(w.max_requests)
        requests = min(w.max_requests, lines) if w.max_requests else lines
        # ASSUMPTION (ours): a trace's own blocks are Mooncake's 512 tokens (the estimate reads no format)
        block_tokens = w.block_tokens or MOONCAKE_BLOCK_TOKENS
        run, read = lookups * BYTES_PER_LOOKUP, size * READ_BYTES_PER_BYTE  # the whole file is read, cut or not
        field = "workload.max_requests" if run >= read else "workload.trace_file"
        nbytes, before = run + read, size * READ_SECONDS_PER_BYTE + lookups * costs.PREPARE_S
    else:
        requests, lookups = _generated(w)
        block_tokens = w.block_tokens or GENERATOR_BLOCK_TOKENS
        nbytes, field, before = lookups * BYTES_PER_LOOKUP, "workload.requests", lookups * costs.PREPARE_S
    if sc.serving.timing:
        seconds = _timed_seconds(sc, requests, lookups, block_tokens)
    else:
        seconds = lookups * len(_runs(sc)) * costs.UNTIMED_LOOKUP_S
    return Estimate(nbytes, before + seconds, field)


def simulate(sc: PrefixCacheScenario) -> Result:
    blocks = load(sc, MAX_LOOKUPS)
    if len(blocks.ids) > MAX_LOOKUPS:
        raise ScenarioError(f"too large to simulate: {len(blocks.ids):,} block lookups (limit {MAX_LOOKUPS:,}); "
                            f"set workload.max_requests or a larger workload.block_tokens",
                            field="workload.trace_file" if sc.workload.trace_file else "workload.requests")
    kv = sc.model.kv_bytes_per_token
    block_bytes = blocks.block_tokens * kv
    caps = [t.blocks(block_bytes) for t in sc.tiers]
    for i, (t, cap) in enumerate(zip(sc.tiers, caps)):
        if cap < 1:
            raise ScenarioError(f"{t.capacity_gb:g} GB holds no block of {block_bytes / 1e6:.4g} MB "
                                f"({blocks.block_tokens} tokens × {kv} B)", field=f"tiers[{i}].capacity_gb")
    runs = {p: [p if t.eviction == "policy" else t.eviction for t in sc.tiers] for p in sc.policies}
    reference = ["belady"] * len(sc.tiers)
    used = {e for ev in runs.values() for e in ev} | {"belady"}
    prep = prepare(blocks, used, sc.cache.admission)
    if sc.serving.timing:
        return timed_result(sc, blocks, prep, caps, runs)
    c = sc.cache
    shown = sc.shown_policy

    def one(evictions: list[str], record: bool = False) -> Outcome:
        return replay(prep, caps, evictions, c.promote == "move", c.write_policy == "through", c.admission,
                      c.min_reuse_count, record=record, pin=c.pin_running, compiled=True)

    outs = {p: one(ev, record=(p == shown)) for p, ev in runs.items()}
    ref = next((outs[p] for p, ev in runs.items() if ev == reference), None) or one(reference)
    names = [t.name for t in sc.tiers]
    total_tokens = int(blocks.input_tokens.sum())
    ref_rate = sum(ref.hit_tokens) / total_tokens if total_tokens else 0.0
    policies = {p: run_metrics(o, names, blocks, block_bytes, ref_rate) for p, o in outs.items()}
    hb, ht, hr = ceiling(prep)
    R = len(blocks)
    metrics: dict[str, Any] = {
        "trace_policy": shown,
        "workload": {"source": blocks.source, "requests": R, "block_lookups": len(blocks.ids),
                     "unique_blocks": int(len(np.unique(blocks.ids))), "input_tokens": total_tokens,
                     "block_tokens": blocks.block_tokens, "kv_bytes_per_token": kv, "block_bytes": block_bytes},
        "tiers": tier_setup(sc.tiers, caps, block_bytes),
        "hit_rate_ceiling": ht / total_tokens if total_tokens else 0.0,
        "block_hit_ceiling": hb / len(blocks.ids) if len(blocks.ids) else 0.0,
        "request_hit_ceiling": hr / R if R else 0.0,
        "belady_token_hit_rate": ref_rate,
        "policies": policies,
    }
    if notes := list(dict.fromkeys(o.note for o in (*outs.values(), ref) if o.note)):
        metrics["notes"] = notes  # a run whose block cache fell back to the Python one says why
    trace = build_trace(blocks, outs[shown], names, block_bytes)
    return Result(scenario=sc, trace=trace, metrics=metrics, events=len(blocks.ids) * (len(outs) + 1))


def build_trace(blocks: Blocks, out: Outcome, names: Sequence[str], block_bytes: int) -> Trace:
    """A mark per request at its arrival time (the replay has no serving times): on the lane of
    the tier its longest hit ended in (the tier of its last hit block), or on the no-hit lane;
    each with its facts (job = the request's index, items = its hit blocks, bytes = theirs),
    and each tier's occupancy (GB) after each request."""
    hit_tier, occupancy = out.hit_tier, out.occupancy
    assert hit_tier is not None and occupancy is not None  # a recorded run's (replay with record=True)
    tb = TraceBuilder(item_name="block")
    lanes = [tb.lane(HIT_LANE.format(name), name) for name in names]
    miss_lane = tb.lane(MISS_LANE, "requests")
    t = np.rint(blocks.times_s * 1e9).astype(np.int64)
    R = len(blocks)
    hit = out.hits > 0
    inst = np.zeros(R, dtype=INSTANT_DTYPE)
    inst["t"], inst["ref"] = t, np.arange(R)
    inst["lane"] = np.where(hit, np.asarray(lanes)[np.maximum(hit_tier, 0)], miss_lane)
    inst["kind"] = np.where(hit, INSTANT_KINDS.index("hit"), INSTANT_KINDS.index("miss"))
    inst["fact"] = tb.fact_block(R, job=np.arange(R), items=np.where(hit, out.hits, -1),
                                 bytes=np.where(hit, out.hits * block_bytes, -1))
    tb.add_block("instants", inst)
    rows = np.arange(R) if R <= MAX_COUNTER_POINTS else \
        np.unique(np.r_[np.linspace(0, R - 1, MAX_COUNTER_POINTS).astype(np.int64), R - 1])
    for k, name in enumerate(names):
        cid = tb.counter_id(f"{name} occupancy", "GB")
        c = np.zeros(len(rows), dtype=COUNTER_DTYPE)
        c["name"], c["t"], c["value"] = cid, t[rows], occupancy[rows, k] * (block_bytes / 1e9)
        tb.add_block("counters", c)
    return tb.build()


def time_axis(unit: str, scenario: PrefixCacheScenario | None = None) -> str:
    """The untimed replay's time is each request's arrival (it has no serving times); the timed
    engine's (`serving.timing = true`) is plain serving time."""
    if scenario is not None and scenario.serving.timing:
        return f"time ({unit})"
    return f"request arrival ({unit}) · untimed replay"


def engine_note() -> str:
    """Why the runs' block cache is the Python one (a missing or stale build), or ""; a policy
    without a compiled twin is said in the run's own notes (metrics["notes"])."""
    why = block_cache()[1]
    return f"{why}: the prefix cache runs the Python block cache" if why else ""


MECHANISM = Mechanism("prefix_cache", PrefixCacheScenario, priced(simulate), estimate, inactive=inactive, analyses=("tiers",),
                      time_axis=time_axis, engine_note=engine_note)
