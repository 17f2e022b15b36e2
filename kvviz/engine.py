"""A minimal discrete-event loop: one heap per run, ties broken deterministically.

Entries are (time_ns, priority, seq, callback, args). `seq` is a per-loop counter, so two
events at the same time and priority run in the order they were scheduled. All state lives
in the loop instance: no globals, no class-level counters, no I/O.
"""
from __future__ import annotations

import heapq
from typing import Any, Callable, TypeVarTuple, Unpack

Args = TypeVarTuple("Args")
# (time_ns, priority, seq, callback, its arguments)
Entry = tuple[int, int, int, Callable[..., object], tuple[Any, ...]]


def refuse_past(t: int, now: int) -> None:
    """The error of scheduling at t < now (serving/event_loop.py's Loop raises it too)."""
    if t < 0 <= now:  # int64 ns arithmetic wrapped: a time beyond ~292 years
        raise OverflowError(f"a time went past the int64 ns range (scheduled at {t} ns, now {now} ns)")
    raise ValueError(f"cannot schedule in the past: {t} < {now}")


class EventLoop:
    def __init__(self) -> None:
        self._heap: list[Entry] = []
        self._seq = 0
        self.now = 0
        self.processed = 0

    def at(self, t: int, fn: Callable[[Unpack[Args]], object], *args: Unpack[Args], priority: int = 0) -> None:
        """Schedule fn(*args) at absolute time t (ns). Lower priority runs first."""
        if t < self.now:
            refuse_past(t, self.now)
        heapq.heappush(self._heap, (int(t), priority, self._seq, fn, args))
        self._seq += 1

    def after(self, delay: int, fn: Callable[[Unpack[Args]], object], *args: Unpack[Args], priority: int = 0) -> None:
        self.at(self.now + delay, fn, *args, priority=priority)

    def run(self, until: int | None = None) -> int:
        heap = self._heap
        while heap:
            if until is not None and heap[0][0] > until:
                break
            t, _, _, fn, args = heapq.heappop(heap)
            self.now = t
            fn(*args)
            self.processed += 1
        return self.now
