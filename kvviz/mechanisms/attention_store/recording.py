"""What AttentionStore's engine records its Trace with: TraceBuilder's positional calls (an event
per job and per iteration makes the keyword calls the recorded run's main cost), so the kinds and
tiers below are resolved once, and each label's text is formatted once per distinct value.

A span's or an instant's fact is nine ints after the row's own (`add_span_facts`,
`add_instant_facts`): bytes, items, src, dst, job, turn, pos, layer, flow; U where unknown.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from ...trace import INSTANT_KINDS, SPAN_KINDS, TIERS, TraceBuilder

U = -1  # a fact not known

PREFILL, DECODE, LOAD, SAVE, STALL, FETCH, PREFETCH, EVICT_WRITE = (
    SPAN_KINDS.index(k) for k in ("prefill", "decode", "load", "save", "stall", "fetch", "prefetch", "evict_write"))
HIT, MISS, ARRIVE, OVERFLOW, LAND, EVICT = (
    INSTANT_KINDS.index(k) for k in ("hit", "miss", "arrive", "overflow", "land", "evict"))
T_HBM, T_DRAM, T_SSD = (TIERS.index(t) for t in ("HBM", "DRAM", "SSD"))


def _jobs(n: int) -> str:
    return f"{n} job{'s' * (n > 1)}"


class Labels(dict[Hashable, int]):
    """Label ids by what their text is made of: `fmt(key)` is registered with the builder the
    first time a key is asked for."""

    def __init__(self, tb: TraceBuilder, fmt: Callable[[Any], str]) -> None:
        super().__init__()
        self.tb, self.fmt = tb, fmt

    def __missing__(self, key: Hashable) -> int:
        self[key] = i = self.tb.label(self.fmt(key))
        return i


class RunLabels:
    """The labels of a run's spans."""

    def __init__(self, tb: TraceBuilder) -> None:
        self.prefill = Labels(tb, lambda n: f"prefill · {_jobs(n)}")
        self.decode = Labels(tb, lambda nk: f"decode · {_jobs(nk[0])} × {nk[1]} iterations")
        self.load = Labels(tb, lambda n: f"load history of {_jobs(n)}")
        self.save = tb.label("save new KV")
        self.stall = tb.label("save stall (store.save = sync)")
        self.evict_write = tb.label("evict DRAM→SSD")
        self.fetch = tb.label("demand read SSD→HBM")
        self.prefetch = tb.label("prefetch SSD→DRAM")
