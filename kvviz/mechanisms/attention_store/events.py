"""The run's event loop: kvviz.engine.EventLoop's order and count, with a cheaper hot path.

Entries are the same (time_ns, priority, seq, callback, args) tuples, so events run in the same
order as EventLoop runs them (ties: priority, then the order scheduled) and `processed` counts
the same events. `push(t, priority, fn, args)` takes its arguments positionally (no keyword or
*args packing: the engine schedules ~5 events per turn); `at` keeps EventLoop's signature and
checks for the few callers off the hot path.
"""
from __future__ import annotations

from heapq import heappop, heappush

from ...engine import EventLoop


class Loop:
    def __init__(self) -> None:
        self._heap: list = []
        self._seq = 0
        self.now = 0
        self.processed = 0

    def push(self, t: int, priority: int, fn, args: tuple) -> None:
        """Schedule fn(*args) at absolute time t (an int, ns; never in the past)."""
        if t < self.now:
            EventLoop.at(self, t, fn, *args, priority=priority)  # raises the engine's error
        heappush(self._heap, (t, priority, self._seq, fn, args))
        self._seq += 1

    def at(self, t: int, fn, *args, priority: int = 0) -> None:
        EventLoop.at(self, t, fn, *args, priority=priority)

    def run(self) -> int:
        heap, done = self._heap, 0
        try:
            while heap:
                t, _, _, fn, args = heappop(heap)
                self.now = t
                fn(*args)
                done += 1
        finally:
            self.processed += done
        return self.now
