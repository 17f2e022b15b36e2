"""Hit-rate ladders (seed 000): what each rung of an HBM hit-rate ladder is worth in access
time, and — optionally — the same ladder measured by simulating a rope_window scenario.

Modeled ladder. Each rung states an HBM hit rate h. An access that misses HBM goes to the CXL
pool, except a share f (`flash_share_of_misses`) that falls through to flash. The mean
latency of one access and each tier's part of it are

    mean = h * hbm_ns  +  (1 - h)(1 - f) * cxl_ns  +  (1 - h) f * flash_ns
           \\_ hbm _/      \\____ cxl ______/          \\___ flash ___/

computed in exact fractions of the decimals the user typed (97 % with f = 0.1 gives exactly
177.4 ns) and converted to float only for output. The seed fixes f only at its last rung;
using the same f at every rung is our assumption.

Simulated ladder. With a `base` rope_window scenario, each rung's `overrides` ("path=value",
the same syntax as --set) are applied on top of all earlier rungs' overrides, and the result is
simulated. Its HBM hit rate is mass-weighted and taken at query arrival:

    hit share of query q = share of q's attention mass (the scenario's assumed profile) on
                           positions resident in the GPU cache at the instant q arrives,

averaged over the measured queries (each query's mass sums to 1, so this is the share of all
attention mass read from HBM). Arrival, not service: a position fetched in the batch the query
itself waits for came from flash on the critical path, so it counts as a miss; only what earlier
queries prefetched or kept counts as a hit. rope_window's own `attention_mass_covered` is the
same share measured after the query's fetch lands; it is reported beside it. Residency is read
from the run's Trace (a position is resident at t if it lives in a slot at any point of instant
t; fetches landing at t are ordered before the query). The scenario's explicit `reads` are not
part of this measure.

The trace shows "what 1,000 accesses cost": one lane per rung, the tiers' summed latencies
stacked in time (HBM as `load`, CXL as `fetch`, flash as `stall`). Read the µs axis as ns per
access. Span ends are rounded to whole ns; the metrics are not.
"""
from __future__ import annotations

import re
from fractions import Fraction
from typing import Any, Literal, Protocol, Self, get_args, get_origin, runtime_checkable

import numpy as np
from pydantic import BaseModel, PrivateAttr, ValidationInfo, field_validator, model_validator

from ...attention_profile import calibrate_decay, mass_on
from ...errors import ScenarioError
from ...result import Result
from ...scenario import FieldError, ScenarioBase, Section, existing_file, param, validate
from ...scenario_data import apply_override, read_toml
from ...size_guard import Estimate
from ...trace import Trace, TraceBuilder
from ...units import us_to_ns
from .. import Mechanism, mechanisms

TIERS = ("hbm", "cxl", "flash")
# The trace shows this many accesses per rung, so that its µs axis reads as ns per access.
ACCESSES_SHOWN = 1000
_SPAN_KIND = {"hbm": "load", "cxl": "fetch", "flash": "stall"}
_TIER_NAME = {"hbm": "HBM", "cxl": "CXL", "flash": "flash"}


class Tiers(Section):
    hbm_ns: int = param(100, ge=0, le=10**9, unit="ns", description="HBM access latency (the RoPE walkthrough: 100 ns)")
    cxl_ns: int = param(200, ge=0, le=10**9, unit="ns", description="CXL DRAM access latency (the RoPE walkthrough: 200 ns)")
    flash_ns: int = param(25_000, ge=0, le=10**9, unit="ns",
                          description="Flash (tier 3) round trip (the RoPE walkthrough: 25 µs)")
    flash_share_of_misses: float = param(
        0.1, ge=0, le=1, unit="share",
        description="Share of non-HBM accesses that fall through to flash; the rest hit CXL "
                    "(the RoPE walkthrough: 0.3% of accesses reach flash at 97% HBM hits, so 0.3/3 = 0.1)")


class Rung(Section):
    label: str = param(min_length=1, description="What this rung adds (free text)")
    hbm_hit_pct: float | None = param(None, ge=0, le=100, unit="%",
                                      description="Modeled HBM hit rate of this rung")
    overrides: list[str] = param([], description="'path=value' changes to the base scenario, "
                                                 "added to all earlier rungs' (simulated ladder)")


class _RopeSequence(Protocol):
    @property
    def length(self) -> int: ...
    @property
    def queries(self) -> list[int]: ...
    @property
    def query_times_us(self) -> list[float]: ...


class _RopeAttention(Protocol):
    @property
    def causal(self) -> bool: ...
    @property
    def profile(self) -> str: ...
    @property
    def radius(self) -> int: ...
    @property
    def concentration(self) -> float: ...


@runtime_checkable
class RopeRun(Protocol):
    """What the ladder reads of a rope_window scenario: that mechanism is reached through the
    registry (no mechanism imports another, not even for its types)."""

    @property
    def sequence(self) -> _RopeSequence: ...
    @property
    def attention(self) -> _RopeAttention: ...


class LadderScenario(ScenarioBase):
    kind: Literal["ladder"]
    tiers: Tiers = Tiers()
    rungs: list[Rung] = param(min_length=1, description="The ladder, first rung first")
    base: str | dict[str, Any] | None = param(
        None, description="rope_window scenario the simulated rungs modify: an inline table, or a "
                          "TOML file (relative paths resolve against this ladder's file)", file=True)
    warmup_queries: int = param(0, ge=0, unit="queries",
                                description="Leading queries of each simulated run left out of its "
                                            "hit rate (cold cache)")

    # The validated rope_window scenario of every rung (simulated ladders only).
    _runs: tuple[RopeRun, ...] = PrivateAttr(())

    @field_validator("base")
    @classmethod
    def _resolve_base(cls, v: str | dict[str, Any] | None, info: ValidationInfo) -> str | dict[str, Any] | None:
        """A file base becomes an absolute path, so the scenario round-trips from any cwd.
        The ladder's own path comes from the validation context when the loader passes it
        (context={"source": file}); otherwise relative paths resolve against the cwd."""
        if not isinstance(v, str):
            return v
        return str(existing_file(v, info.context, "base scenario file").resolve())

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.base is None:
            for i, r in enumerate(self.rungs):
                if r.overrides:
                    raise FieldError(f"rungs[{i}].overrides", "overrides need a base scenario (set `base`)")
                if r.hbm_hit_pct is None:
                    raise FieldError(f"rungs[{i}].hbm_hit_pct", "required when the ladder has no base scenario")
        else:
            self._runs = _rung_scenarios(self)
        return self

    def rung_scenarios(self) -> tuple[RopeRun, ...]:
        """The rope_window scenario each rung simulates (empty for a purely modeled ladder)."""
        return self._runs


# --- building the simulated rungs --------------------------------------------------------

def _rope_window() -> Mechanism[Any]:
    """The rope_window mechanism's record (its model, simulate, estimate), from the registry: a
    mechanism never imports another. Asked for at run time, never while the packages load."""
    return mechanisms()["rope_window"]


def _base_data(sc: LadderScenario) -> tuple[dict[str, Any], str]:
    """The base as a plain dict, and the name its own errors are reported under."""
    base = sc.base
    if isinstance(base, dict):
        return dict(base), ""
    if base is None:  # asked only of a ladder with a base (_check)
        raise FieldError("base", "a simulated ladder needs a base scenario")
    try:
        return read_toml(base), base
    except ScenarioError as e:
        raise FieldError("base", str(e)) from None


def _field_names(model: type[BaseModel]) -> str:
    return ", ".join(model.model_fields)


def _check_path(path: str, where: str) -> None:
    """Refuse an override path that names no field of a rope_window scenario — before it is
    applied, so the message names the rung's override rather than a later validation."""
    parts = [p for p in path.split(".") if p]
    node: Any = _rope_window().model
    for k, part in enumerate(parts):
        here = ".".join(parts[:k]) or "the scenario"
        if isinstance(node, type) and issubclass(node, BaseModel):
            if part == "kind" and k == 0:
                raise FieldError(where, "the base's kind cannot be overridden")
            if part not in node.model_fields:
                raise FieldError(where, f"no field {path!r} in the base rope_window scenario "
                                        f"({here} has: {_field_names(node)})")
            node = node.model_fields[part].annotation
        elif get_origin(node) is list:
            if not part.isdigit():
                raise FieldError(where, f"{here} is a list: expected an index, got {part!r}")
            node = get_args(node)[0]
        else:
            raise FieldError(where, f"no field {path!r} in the base rope_window scenario "
                                    f"({here} is a value, not a table)")


def _dotted(field: str) -> str:
    """Error paths use `reads[0].t_us`; override paths use `reads.0.t_us`."""
    return re.sub(r"\[(\d+)\]", r".\1", field)


def _blame(field: str | None, applied: list[tuple[str, str]], fallback: str) -> str:
    """The latest override whose path covers the field a validation error names."""
    f = _dotted(field or "")
    for path, where in reversed(applied):
        if f == path or f.startswith(path + ".") or path.startswith(f + "."):
            return where
    return fallback


def _rung_scenarios(sc: LadderScenario) -> tuple[RopeRun, ...]:
    data, base_file = _base_data(sc)
    if data.get("kind") != "rope_window":
        raise FieldError("base.kind", f"the base must be a rope_window scenario (got {data.get('kind')!r})")
    try:
        validate(_rope_window().model, data, base_file or "base")
    except ScenarioError as e:
        if base_file:
            raise FieldError("base", str(e)) from None
        raise FieldError(f"base.{e.field}", e.message) from None
    runs: list[RopeRun] = []
    applied: list[tuple[str, str]] = []  # (override path, where it was given)
    for i, rung in enumerate(sc.rungs):
        for j, ov in enumerate(rung.overrides):
            where = f"rungs[{i}].overrides[{j}]"
            path = ov.split("=", 1)[0].strip()
            if "=" in ov:
                _check_path(path, where)
            try:
                data = apply_override(data, ov, where)
            except ScenarioError as e:
                raise FieldError(where, f"{e.field}: {e.message}" if e.field else e.message) from None
            applied.append((path, where))
        try:
            run = validate(_rope_window().model, data, f"rung {i + 1}")
        except ScenarioError as e:
            raise FieldError(_blame(e.field, applied, f"rungs[{i}].overrides"),
                             f"rung {i + 1} ({rung.label!r}) makes the base invalid: "
                             f"{e.field}: {e.message}") from None
        if sc.warmup_queries >= len(run.sequence.queries):
            raise FieldError("warmup_queries", f"rung {i + 1} has {len(run.sequence.queries)} queries; "
                                               f"warm-up of {sc.warmup_queries} leaves none to measure")
        runs.append(run)
    return tuple(runs)


# --- the tier model ----------------------------------------------------------------------

def _exact(x: float) -> Fraction:
    """The decimal a user typed, exactly: 0.1 -> 1/10 (Fraction(0.1) would be the binary float)."""
    return Fraction(repr(float(x)))


def tier_split(hbm_hit_pct: float, tiers: Tiers) -> dict[str, dict[str, Fraction]]:
    """Share of accesses served by each tier, and each tier's part of the mean latency (ns)."""
    h = _exact(hbm_hit_pct) / 100
    f = _exact(tiers.flash_share_of_misses)
    share = {"hbm": h, "cxl": (1 - h) * (1 - f), "flash": (1 - h) * f}
    lat = {"hbm": tiers.hbm_ns, "cxl": tiers.cxl_ns, "flash": tiers.flash_ns}
    return {"share": share, "contrib": {t: share[t] * lat[t] for t in TIERS}}


def _ratio(a: Fraction, b: Fraction) -> float | None:
    return float(a / b) if b else None


def ladder_figures(pcts: list[float | None], tiers: Tiers) -> list[dict[str, Any]]:
    """Per rung: latency, contributions, speedup against the first rung, increment against the
    previous one. A rung without a hit rate gets None throughout, and so does the next rung's
    increment (and every speedup, if it is the first rung)."""
    splits = [tier_split(p, tiers) if p is not None else None for p in pcts]
    means = [sum(s["contrib"].values(), Fraction(0)) if s else None for s in splits]
    out: list[dict[str, Any]] = []
    for i, (p, s, m) in enumerate(zip(pcts, splits, means)):
        if p is None or s is None or m is None:  # all three, or none
            out.append({"hbm_hit_pct": None, "mean_latency_ns": None, "contrib_ns": None,
                        "access_pct": None, "speedup_vs_first": None, "increment_pts": None,
                        "flash_share_of_latency": None})
            continue
        prev = pcts[i - 1] if i else None
        out.append({
            "hbm_hit_pct": p,
            "mean_latency_ns": float(m),
            "contrib_ns": {t: float(s["contrib"][t]) for t in TIERS},
            "access_pct": {t: float(100 * s["share"][t]) for t in TIERS},
            "speedup_vs_first": _ratio(means[0], m) if means[0] is not None else None,
            "increment_pts": float(_exact(p) - _exact(prev)) if prev is not None else None,
            "flash_share_of_latency": _ratio(s["contrib"]["flash"], m),
        })
    return out


# --- measuring a simulated rung ------------------------------------------------------------

def arrival_hit_shares(result: Result, warmup: int = 0) -> list[float]:
    """Per measured query of a rope_window run: share of its assumed attention mass on
    positions resident in the cache at the instant it arrives (see module docstring)."""
    sc = result.scenario
    if not isinstance(sc, RopeRun):
        raise TypeError(f"arrival_hit_shares reads a rope_window run, not a {sc.kind} one")
    seq, att = sc.sequence, sc.attention
    res = result.trace.residency
    shares: list[float] = []
    for i, (q, t_us) in enumerate(zip(seq.queries, seq.query_times_us)):
        if i < warmup:
            continue
        t = us_to_ns(t_us)
        live = np.unique(res["item"][(res["start"] <= t) & (res["end"] >= t)])
        last = q if att.causal else seq.length - 1
        r = 1.0 if att.profile == "uniform" else calibrate_decay(q, last - q, att.radius, att.concentration)
        shares.append(mass_on(live, q, 0, last, r))
    return shares


def _simulate_rung(i: int, run_sc: RopeRun, warmup: int) -> tuple[dict[str, Any], int]:
    try:
        res = _rope_window().simulate(run_sc)
    except ScenarioError as e:  # a refusal names the base's field; say which rung made it
        raise ScenarioError(f"rung {i + 1}: {e.message}" + (f" (base field {e.field})" if e.field else ""),
                            field=f"rungs[{i}].overrides") from None
    shares = arrival_hit_shares(res, warmup)
    m = res.metrics
    served = [qm["mass_covered"] for qm in m["queries"][warmup:]]
    return {
        "hbm_hit_pct": round(100 * float(np.mean(shares)), 4),
        "mass_covered_at_serve_pct": round(100 * float(np.mean(served)), 4),
        "queries_measured": len(shares),
        "prefetch_stall_us": m["prefetch_stall_us"],
        "round_trips": m["prefetch_round_trips"],
        "evictions": m["evictions"],
    }, res.events


# --- the run -------------------------------------------------------------------------------

def _arrow(values: list[float | None]) -> str:
    return " → ".join("–" if v is None else f"{v:.4g}" for v in values)


def _trace(sc: LadderScenario, ladders: list[tuple[str, list[dict[str, Any]]]]) -> Trace:
    tb = TraceBuilder(item_name="rung")
    for group, figs in ladders:
        for i, (rung, fig) in enumerate(zip(sc.rungs, figs)):
            if fig["mean_latency_ns"] is None:
                continue
            lane = tb.lane(f"{i + 1}. {fig['hbm_hit_pct']:.4g}% · {rung.label}", group)
            exact = tier_split(fig["hbm_hit_pct"], sc.tiers)["contrib"]
            t = Fraction(0)
            for tier in TIERS:
                part = exact[tier] * ACCESSES_SHOWN
                start, end = round(t), round(t + part)
                t += part
                if end > start:
                    n = fig["access_pct"][tier] * ACCESSES_SHOWN / 100
                    lat = getattr(sc.tiers, f"{tier}_ns")
                    # facts: the tier that served these accesses, and how many of the 1,000 shown
                    tb.span(lane, start, end, _SPAN_KIND[tier],
                            f"{_TIER_NAME[tier]}: {n:.4g} × {lat:,} ns", ref=i,
                            src=_TIER_NAME[tier], dst="HBM", items=round(n))
    return tb.build()


def simulate(sc: LadderScenario) -> Result:
    modeled = ladder_figures([r.hbm_hit_pct for r in sc.rungs], sc.tiers)
    events = 0
    simulated: list[dict[str, Any]] | None = None
    if sc.rung_scenarios():
        measured: list[dict[str, Any]] = []
        for i, run_sc in enumerate(sc.rung_scenarios()):
            m, n = _simulate_rung(i, run_sc, sc.warmup_queries)
            measured.append(m)
            events += n
        sim_figs = ladder_figures([m["hbm_hit_pct"] for m in measured], sc.tiers)
        simulated = [{**f, **m} for f, m in zip(sim_figs, measured)]

    rungs: list[dict[str, Any]] = []
    cumulative: list[str] = []
    for i, (rung, fig) in enumerate(zip(sc.rungs, modeled)):
        cumulative = cumulative + list(rung.overrides)
        row = {"label": rung.label, **fig}
        if simulated is not None:
            s = simulated[i]
            row["simulated"] = {**s, "overrides": cumulative}
            row["disagreement_pts"] = (round(s["hbm_hit_pct"] - rung.hbm_hit_pct, 4)
                                       if rung.hbm_hit_pct is not None else None)
        rungs.append(row)

    f = sc.tiers.flash_share_of_misses
    metrics: dict[str, Any] = {
        "tier_model": f"mean = h·{sc.tiers.hbm_ns} + (1−h)(1−{f:g})·{sc.tiers.cxl_ns} "
                      f"+ (1−h)·{f:g}·{sc.tiers.flash_ns} ns",
        "ladder_pct": _arrow([r.hbm_hit_pct for r in sc.rungs]),
        "mean_latency_ns_ladder": _arrow([m["mean_latency_ns"] for m in modeled]),
    }
    last = modeled[-1]
    if last["mean_latency_ns"] is not None:
        metrics.update({
            "last_mean_latency_ns": last["mean_latency_ns"],
            "speedup_first_to_last": last["speedup_vs_first"],
            # The point of the ladder: at the last rung, flash serves a sliver of the accesses
            # but a large share of the mean latency.
            "flash_share_of_accesses": last["access_pct"]["flash"] / 100,
            "flash_share_of_latency": last["flash_share_of_latency"],
            "non_hbm_share_of_latency": (last["contrib_ns"]["cxl"] + last["contrib_ns"]["flash"])
                                        / last["mean_latency_ns"] if last["mean_latency_ns"] else None,
        })
    if simulated is not None:
        gaps = [r["disagreement_pts"] for r in rungs if r["disagreement_pts"] is not None]
        metrics.update({
            "simulated_ladder_pct": _arrow([s["hbm_hit_pct"] for s in simulated]),
            "simulated_mean_latency_ns_ladder": _arrow([s["mean_latency_ns"] for s in simulated]),
            "disagreement_pts": _arrow([r["disagreement_pts"] for r in rungs]) if gaps else None,
            "max_abs_disagreement_pts": max(map(abs, gaps)) if gaps else None,
            "simulated_last_mean_latency_ns": simulated[-1]["mean_latency_ns"],
            "hit_rate_measure": "attention mass on cache-resident positions at query arrival",
        })
    metrics["rungs"] = rungs

    ladders = [("Modeled · 1,000 accesses", modeled)]
    if simulated is not None:
        ladders.append(("Simulated · 1,000 accesses", simulated))
    return Result(scenario=sc, trace=_trace(sc, ladders), metrics=metrics, events=events)


def estimate(sc: LadderScenario) -> Estimate:
    """Rungs run one after another and keep only their figures: memory is the largest rung's
    (each estimated as rope_window estimates it), time the sum of all."""
    runs = [_rung_estimate(r) for r in sc.rung_scenarios()]
    if not runs:  # a modeled ladder: a few numbers per rung, nothing to measure
        return Estimate(0.0, 0.0, "rungs")
    i = max(range(len(runs)), key=lambda j: runs[j].bytes)
    # blame the rung whose overrides grew the run, else the base field that drives it
    grew = sc.rungs[i].overrides and (i == 0 or runs[i].bytes > runs[i - 1].bytes)
    field = f"rungs[{i}].overrides" if grew else f"base.{runs[i].field}"
    return Estimate(runs[i].bytes, sum(e.seconds for e in runs), field)


def _rung_estimate(run_sc: RopeRun) -> Estimate:
    est = _rope_window().estimate(run_sc)
    if est is None:  # rope_window sizes every run from its own fields
        raise ValueError("rope_window gave no estimate of a rung's run")
    return est


PER_ACCESS = {"s": "ms", "ms": "µs", "µs": "ns", "ns": "ps"}  # a unit of 1,000 accesses, per access


def time_axis(unit: str, scenario: LadderScenario | None = None) -> str:
    """The timeline's axis title: its bars are 1,000 accesses, so each unit is 1/1,000 per access."""
    return f"time of {ACCESSES_SHOWN:,} accesses ({unit}) = {PER_ACCESS.get(unit, unit + '/1,000')} per access"


MECHANISM = Mechanism("ladder", LadderScenario, simulate, estimate, analyses=("ladder", "rope_bound"),
                      time_axis=time_axis)
