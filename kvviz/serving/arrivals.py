"""Release rules that re-time a workload's turns before serving (AttentionStore's
`serving.arrivals`): each takes and gives a kvviz.requests.conversations.Conversations.

`interleaved` (ASSUMPTION, our reading of the AttentionStore paper's "Poisson arrivals, λ = 1.0" over ~52K
ShareGPT turns): every turn of every conversation is one request of a single Poisson stream at
λ turns/s, and the conversations' turns are shuffled together uniformly at random, keeping each
conversation's own order. Conversations therefore stay live for most of the run, as in a
replayed dataset, which is what puts the store under capacity pressure. The serving model still
never releases a turn before the reply to the previous one has ended.

`saturated` (ours): no think time at all. Every conversation's first turn is released at t = 0
and each later turn the moment its previous reply ends, so the engine runs flat out from start
to end and the makespan is the time the GPU needs for the whole workload (its work, not the
arrival span). The rate is not used.

`conversation_poisson` (ASSUMPTION, ours, in the shape of the paper's §4.3.8 reading that a
higher rate means more distinct sessions per unit time): conversations start as a Poisson
process at λ / (mean turns per conversation), so λ still means turns per second; the mean is
that of the workload actually served (generated or read from the trace file), and the gap
between a conversation's consecutive turns is lognormal (median, sigma: `workload.*`). As under
`interleaved`, a turn is released at its nominal time but never before the previous reply ends.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..requests.conversations import NS_PER_S, Conversations


def interleaved(wl: Conversations, rate_per_s: float, seed: int) -> Conversations:
    """The same turns, with nominal arrivals from one Poisson stream over a random interleaving."""
    n = len(wl)
    if n == 0:
        return wl
    rng = np.random.default_rng([seed, 0x1A7E])  # its own stream: the token draws stay as they were
    times = np.rint(np.cumsum(rng.exponential(1.0 / rate_per_s, n)) * NS_PER_S).astype(np.int64)
    # A uniform interleaving: shuffle one label per turn; the k-th label of a conversation is its turn k.
    labels = rng.permutation(wl.conv)
    slot_order = np.argsort(labels, kind="stable")       # slots grouped by conversation, in time order
    arrival = np.empty(n, dtype=np.int64)
    arrival[np.lexsort((wl.turn, wl.conv))] = times[slot_order]
    think = np.zeros(n, dtype=np.int64)
    later = wl.turn > 0
    think[later] = arrival[later] - arrival[np.flatnonzero(later) - 1]
    return replace(wl, arrival_ns=arrival, think_ns=think)


def saturated(wl: Conversations) -> Conversations:
    """The same turns, nominally all at t = 0 and without think time: the serving model releases
    the first turns at once and each later turn when its previous reply ends."""
    zero = np.zeros(len(wl), dtype=np.int64)
    return replace(wl, arrival_ns=zero, think_ns=zero.copy())


def mean_turns(wl: Conversations) -> float:
    """Turns per conversation of the workload served."""
    return len(wl) / wl.n_conv if wl.n_conv else 0.0


def conversation_poisson(wl: Conversations, rate_per_s: float, median_s: float, sigma: float,
                         seed: int) -> Conversations:
    """The same turns, re-timed: conversation c starts at the c-th event of a Poisson process at
    rate_per_s / mean_turns(wl) (in the workload's conversation order), and each later turn comes
    a lognormal gap (median `median_s`, sigma `sigma`) after the one before."""
    n = len(wl)
    if n == 0:
        return wl
    rng = np.random.default_rng([seed, 0xC0B1])  # its own stream: the token draws stay as they were
    conv_rate = rate_per_s / mean_turns(wl)
    start = np.cumsum(rng.exponential(1.0 / conv_rate, wl.n_conv))
    gap = rng.lognormal(np.log(median_s), sigma, n)
    think = np.rint(gap * NS_PER_S).astype(np.int64)
    think[wl.turn == 0] = 0
    # Rows are sorted by conversation then turn: a within-conversation cumulative sum.
    cum = np.cumsum(think)
    first = np.flatnonzero(wl.turn == 0)
    base = np.repeat(cum[first], np.diff(np.r_[first, n]))
    arrival = np.rint(start * NS_PER_S).astype(np.int64)[wl.conv] + cum - base
    return replace(wl, arrival_ns=arrival, think_ns=think)
