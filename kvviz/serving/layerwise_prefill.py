"""When a prefill iteration ends whose layers wait on loads: the closed form both stores' load
timings use (attention_store's host link, prefix_cache's tier links)."""
from __future__ import annotations


def prefill_end(S: int, T0: int, a: int, c: int, L: int, k: int) -> tuple[int, int]:
    """(end of the last layer's compute, end of the last load), closed form.

    Layer i loads in `a` ns and computes in `c` ns. Loads run one after another from T0; the
    first k fit in the read buffer and may load before the iteration starts at S, the rest
    start no earlier than S. Layer i computes once layer i-1 is computed and layer i is loaded:
    ce_i = max(ce_{i-1}, le_i) + c with ce_{-1} = S, which unrolls to
    max(S + L·c, max_i le_i + (L-i)·c). The load ends le_i are linear in i on each of the two
    runs (before and after S), so the inner max is at a run's first or last layer.
    """
    k = min(k, L)
    best = S + L * c
    if k:
        le_k1 = T0 + k * a  # end of the last buffered layer
        best = max(best, T0 + a + L * c, le_k1 + (L - k + 1) * c)
        run2 = max(le_k1, S)
    else:
        le_k1 = T0
        run2 = max(T0, S)
    if k < L:
        le_last = run2 + (L - k) * a
        best = max(best, run2 + a + (L - k) * c, le_last + c)
    else:
        le_last = le_k1
    return best, le_last


def layered_end(pe: int, L: int, c: int, start: int, t1: int) -> int:
    """The iteration's end `pe` (so far) given one link streaming its bytes from `start` (after
    its latency) to t1 in L equal layer pieces, with c ns of compute per layer: layer i computes
    once its piece is in and layer i-1 is done."""
    a = (t1 - start) / L
    return max(pe, int(start + a) + L * c, t1 + c)


def booked_end(booked: list[tuple[int, int]], S: int, comp_ns: float, L: int) -> tuple[int, int]:
    """A prefill iteration starting at S with comp_ns of compute over L layers, whose loads were
    booked as (start, end) transfers, 1/L of each per layer: (its end, the time its layers waited
    for their pieces). The end is max(S + L·c, over transfers, `layered_end`), the closed form of
    prefill_end with no buffer."""
    c = int(comp_ns / L)
    pe = S + L * c
    for start, t1 in booked:
        pe = layered_end(pe, L, c, start, t1)
    return pe, pe - S - L * c
