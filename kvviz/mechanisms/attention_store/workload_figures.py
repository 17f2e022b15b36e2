"""Figures of the workload itself, before any policy: how much KV the live sessions hold
against the store's tiers, how far apart a session's turns are, and the best hit rate any
store could reach. They say whether a run puts capacity under pressure at all.

All use the turns' nominal arrivals (for closed_loop: first arrival plus think times, i.e.
ignoring service time).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from . import native

if TYPE_CHECKING:
    from .serving import Prepared


def _distinct_between(conv_in_order: np.ndarray, pairs: list[tuple[int, int]]) -> np.ndarray:
    """For each (l, r) of list positions, the number of distinct conversations at positions
    strictly between them (offline, a Fenwick tree over each conversation's last position)."""
    n = len(conv_in_order)
    tree = [0] * (n + 1)

    def add(i: int, v: int) -> None:
        i += 1
        while i <= n:
            tree[i] += v
            i += i & -i

    def prefix(i: int) -> int:  # sum over positions < i
        s = 0
        while i > 0:
            s += tree[i]
            i -= i & -i
        return s

    by_r: dict[int, list[int]] = {}
    for q, (_, r) in enumerate(pairs):
        by_r.setdefault(r, []).append(q)
    last: dict[int, int] = {}
    out = np.zeros(len(pairs), dtype=np.int64)
    for pos, c in enumerate(conv_in_order.tolist()):
        for q in by_r.get(pos, ()):
            l_ = pairs[q][0]
            out[q] = prefix(pos) - prefix(l_ + 1)
        if c in last:
            add(last[c], -1)
        last[c] = pos
        add(pos, 1)
    return out


def distinct_between(conv_in_order: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """`_distinct_between` of the pairs (left[i], right[i]): compiled where the engine is."""
    nat = native.engine()
    if nat is not None:
        got: np.ndarray = nat.distinct_between(*(np.ascontiguousarray(a, dtype=np.int64)
                                                for a in (conv_in_order, left, right)))
        return got
    pairs = list(zip(left.tolist(), right.tolist()))
    return _distinct_between(conv_in_order, pairs) if pairs else np.zeros(0, dtype=np.int64)


REACHED = 0.01  # history_share_max reads a turn number only if this share of the conversations reach it


def history_shares(prep: Prepared) -> dict[str, float | int | None]:
    """The paper's Figure 4(a) (seed 003: "historical tokens are > 99% of a later turn's tokens"):
    for each turn number after the first, the mean history tokens (kept in the context after
    truncation: what recompute prefills again and a cache hit loads) over the mean history plus
    the mean new input tokens (capped as the engine takes them). `history_share`: the same over
    all turns with a previous one, pooled; `history_share_max`: the largest per-turn-number share
    among the turn numbers that at least REACHED of the conversations reach (a turn number held by
    a handful of conversations would decide it by chance), and `history_share_max_turn` its turn
    number (1 = the first). Closed form on the generated workload's token counts and the context
    window: a property of the input, not of serving."""
    wl = prep.wl
    later = wl.turn > 0
    if not later.any():
        return {"history_share": None, "history_share_max": None, "history_share_max_turn": None}
    keep, inn = prep.keep.astype(np.float64), prep.inn.astype(np.float64)
    n_turn = np.bincount(wl.turn)
    hist_sum, new_sum = np.bincount(wl.turn, weights=keep), np.bincount(wl.turn, weights=inn)
    reached = np.flatnonzero((n_turn >= REACHED * np.unique(wl.conv).size) & (np.arange(len(n_turn)) > 0))
    best = None
    if len(reached):
        share = hist_sum[reached] / (hist_sum[reached] + new_sum[reached])
        i = int(np.argmax(share))
        best = (float(share[i]), int(reached[i]) + 1)
    return {"history_share": float(keep[later].sum() / (keep[later].sum() + inn[later].sum())),
            "history_share_max": best[0] if best else None,
            "history_share_max_turn": best[1] if best else None}


def workload_figures(prep: Prepared, coupled: bool) -> dict[str, float | int | None]:
    wl = prep.wl
    n = len(wl)
    if n == 0:
        return {}
    nxt = prep.next_row
    live = np.flatnonzero(nxt >= 0)   # a session with a turn to come is live until it comes
    t0, t1 = int(wl.arrival_ns.min()), int(wl.arrival_ns.max())
    peak = mean = 0.0
    if len(live):
        times = np.concatenate((wl.arrival_ns[live], wl.arrival_ns[nxt[live]]))
        delta = np.concatenate((prep.size_after[live], -prep.size_after[live])).astype(np.float64)
        o = np.lexsort((delta, times))   # at equal times, releases before additions
        times, level = times[o], np.cumsum(delta[o])
        peak = float(level.max())
        if t1 > t0:
            widths = np.diff(np.append(times, t1)).clip(min=0)
            mean = float((level * widths).sum() / (t1 - t0))
    # Reuse distance: distinct other sessions between a turn and its session's next turn.
    rank = prep.rank
    dist = distinct_between(wl.conv[prep.order], rank[live], rank[nxt[live]])
    with_hist = prep.keep > 0
    reusable = with_hist & ~(prep.overflow & coupled)
    c_mem, c_all = prep.dram_cap, prep.dram_cap + prep.ssd_cap
    return {
        "live_footprint_peak_gb": peak / 1e9,
        "live_footprint_mean_gb": mean / 1e9,
        "peak_over_dram": peak / c_mem if c_mem else None,
        "peak_over_dram_plus_ssd": peak / c_all if c_all else None,
        "reuse_distance_sessions_median": float(np.median(dist)) if len(dist) else None,
        "reuse_distance_sessions_p90": float(np.percentile(dist, 90)) if len(dist) else None,
        # Unlimited capacity: every turn with history hits unless coupled truncation voids it.
        "hit_rate_ceiling": float(reusable.sum() / with_hist.sum()) if with_hist.any() else None,
        **history_shares(prep),
    }
