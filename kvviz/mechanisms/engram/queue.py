"""A FIFO link with a cap on outstanding requests, solved in closed form with numpy.

Model (one pool lane, or one copy engine):
- Request i (in FIFO order) is released at r[i].
- It needs one of `limit` outstanding slots: it starts at s[i] = max(r[i], c[i - limit]),
  i.e. when the request `limit` places ahead of it has completed.
- After its latency L it transfers its data over the shared link, one request at a time in
  FIFO order, taking x: c[i] = max(s[i] + L, c[i - 1]) + x.
So the latency of up to `limit` requests overlaps, and the link's bandwidth is shared by
serialising transfers. With limit = 1 it is a plain serial server (each request takes L + x).

Why a closed form: thousands of reads per decode step, thousands of runs per sweep. The
recurrence is a max-plus system; its longest path from a release r[j] to c[i] takes
a = floor((i - j) / limit) slot edges (weight L + x each) when latency dominates, else none:

    c[i] = L + x*(i + 1) + max_j ( r[j] - x*j + floor((i - j) / limit) * D ),  D = max(0, L - (limit-1)*x)

With i = p*limit + u and j = q*limit + v, floor((i - j)/limit) = p - q - [v > u], so the max
over j splits into prefix maxima over a (blocks x limit) grid: a handful of numpy calls
whatever the number of requests. tests/test_engram_window.py checks it against the loop.

All times are integer picoseconds here: row transfers of a few ns at tens of GB/s would lose
their fractions in whole nanoseconds, and integers keep the result exact and deterministic.
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

_NEG = np.int64(-(1 << 62))  # "never": below any real time, and safe to subtract from


def fifo_link(release: npt.NDArray[np.int64], latency: int, xfer: int, limit: int
              ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Start and completion times (int64) of requests released at `release` (FIFO order).

    latency, xfer: per-request latency and link transfer time; limit: outstanding requests.
    """
    r = np.asarray(release, dtype=np.int64)
    n = len(r)
    if n == 0:
        return r.copy(), r.copy()
    C = max(1, min(int(limit), n))  # a cap above n never binds
    L, x = int(latency), int(xfer)
    D = max(0, L - (C - 1) * x)
    P = -(-n // C)  # blocks of C requests
    j = np.arange(P * C, dtype=np.int64)
    A = np.full(P * C, _NEG, dtype=np.int64)
    A[:n] = r - x * j[:n] - D * (j[:n] // C)
    M = np.maximum.accumulate(A.reshape(P, C), axis=0)       # max over blocks q <= p, per column v
    left = np.maximum.accumulate(M, axis=1)                    # ... and columns v <= u
    suffix = np.maximum.accumulate(M[:, ::-1], axis=1)[:, ::-1]  # max over columns w >= v
    right = np.full((P, C), _NEG, dtype=np.int64)
    right[1:, :-1] = suffix[:-1, 1:] - D                       # blocks q < p, columns v > u
    best = np.maximum(left, right).ravel()[:n]
    done = L + x * (j[:n] + 1) + D * (j[:n] // C) + best
    start = r.copy()
    if C < n:
        start[C:] = np.maximum(r[C:], done[:-C])
    return start, done


def fifo_link_loop(release: Iterable[int], latency: int, xfer: int, limit: int
                   ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The same model as a plain loop: the reference the closed form is tested against."""
    r = [int(v) for v in release]
    start: list[int] = []
    done: list[int] = []
    for i, ri in enumerate(r):
        s = max(ri, done[i - limit]) if i >= limit else ri
        c = max(s + latency, done[i - 1]) + xfer if i else s + latency + xfer
        start.append(s)
        done.append(c)
    return np.array(start, dtype=np.int64), np.array(done, dtype=np.int64)
