"""Release rules that re-time a workload's turns before serving (`serving.arrivals`).

`interleaved` (ASSUMPTION, our reading of the paper's "Poisson arrivals, λ = 1.0" over ~52K
ShareGPT turns): every turn of every conversation is one request of a single Poisson stream at
λ turns/s, and the conversations' turns are shuffled together uniformly at random, keeping each
conversation's own order. Conversations therefore stay live for most of the run, as in a
replayed dataset, which is what puts the store under capacity pressure. The serving model still
never releases a turn before the reply to the previous one has ended.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...requests.conversations import NS_PER_S, Conversations


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
