"""Fixed colours for named series and one colour map per metric, shared by the app and the
exporters (no Qt here).

A policy keeps its colour wherever it is drawn — Replay curves, Sweep lines of a
`policies.*.…` family, figures, any run — because the colour comes from its name, never from
its place in a list (ticking `arc` used to recolour every other policy).

A heat map's colours come from the metric, not from the values so far: a metric with a
threshold (slack: feasible at ≥ 0) gets a diverging map centred on it, every other metric a
sequential one; so a sweep filling in never switches maps mid-run."""
from __future__ import annotations

import zlib

# Policies never wear a tier's colour (resources/palette.toml [tiers]: HBM #0072B2, CXL #44BBCC,
# DRAM #009E73, SSD #E69F00, remote #885500): a chart that splits a policy's bar by tier would
# otherwise draw, say, a green Belady bar under a green "DRAM hits" key. The first names get
# the clearest of the colour-blind-safe colours left (Okabe-Ito's vermillion and black, then
# Paul Tol's dark and muted sets).
POLICY_COLOURS = {
    # cache replay (libCacheSim's names) and AttentionStore placement, one table for both
    "lru": "#332288",
    "fifo": "#D55E00",
    "belady": "#882255",
    "s3fifo": "#AA4499",
    "sieve": "#DDCC77",
    "arc": "#661100",
    "scheduler_aware": "#000000",
    "recompute": "#9A9A9A",
    "lfu": "#999933",
    "clock": "#CC6677",
    "twoq": "#44AA99",
    "wtinylfu": "#117733",
    "lirs": "#6699CC",
    "slru": "#888888",
    "gdsf": "#BBBBBB",
    "lecar": "#EE8866",
    "cacheus": "#77AADD",
    "beladysize": "#994455",
    "leaf_lru": "#7B3294",  # prefix_cache: LRU among a radix tree's leaves
}
# names outside the table: a stable pick by name (a hash, not an order) from these
EXTRA = ("#332288", "#117733", "#44AA99", "#DDCC77", "#CC6677", "#AA4499", "#882255",
         "#661100", "#6699CC", "#999933", "#888888", "#994455")


def series_colour(name: str) -> str:
    """The colour of a named series (a policy, a rung): the same name, the same colour, always."""
    base = name.split(" ")[0].lower()  # "lru (SHARDS …)" is lru
    if base in POLICY_COLOURS:
        return POLICY_COLOURS[base]
    return EXTRA[zlib.crc32(base.encode("utf-8")) % len(EXTRA)]


# Metrics with a threshold that separates good from bad: (last path part, threshold).
# ASSUMPTION (ours): slack is feasible at >= 0 (kvviz.mechanisms.engram: feasible = slack_us >= 0).
THRESHOLDS = {"slack_us": 0.0, "slack_ms": 0.0, "slack_ns": 0.0}

DIVERGING = ((213, 94, 0), (247, 247, 247), (0, 114, 178))  # orange below, white at, blue above the threshold
SEQUENTIAL = "viridis"


def threshold_of(metric: str) -> float | None:
    """The threshold a metric path has (policies.lru.slack_us → 0.0), or None."""
    return THRESHOLDS.get(metric.rsplit(".", 1)[-1])


def heat_levels(metric: str, lo: float, hi: float) -> tuple[float, float]:
    """The colour scale's ends for values in [lo, hi]; a thresholded metric's scale always
    includes its threshold (the map's middle colour sits there, see threshold_stop)."""
    t = threshold_of(metric)
    if t is not None:
        lo, hi = min(lo, t), max(hi, t)
    return (lo, hi if hi > lo else lo + 1)


def threshold_stop(metric: str, levels: tuple[float, float]) -> float | None:
    """Where on the 0..1 colour scale a thresholded metric's threshold falls, or None. Each
    side of it gets the whole of its colour ramp: slack from −40 to +3,640 µs drew −40 as a
    near-white orange when the scale was symmetric (±3,640), and the boundary washed out."""
    t = threshold_of(metric)
    if t is None:
        return None
    lo, hi = levels
    return min(max((t - lo) / (hi - lo), 0.0), 1.0)
