"""The run's event loop: kvviz.engine.EventLoop's order and count, with a cheaper hot path.

Entries are the same (time_ns, priority, seq, callback, args) tuples, so events run in the same
order as EventLoop runs them (ties: priority, then the order scheduled) and `processed` counts
the same events. `push(t, priority, fn, args)` takes its arguments positionally (no keyword or
*args packing: the engine schedules ~5 events per turn); `at` keeps EventLoop's signature and
checks for the few callers off the hot path. `stream` schedules many events at once, as that
many `at` calls would, but holds only the earliest not yet run in the heap (the run's first
turns: thousands of arrivals would otherwise deepen every heap operation of the run).
"""
from __future__ import annotations

from heapq import heappop, heappush

from ..engine import EventLoop


class Loop:
    def __init__(self) -> None:
        self._heap: list = []
        self._seq = 0
        self.now = 0
        self.processed = 0
        self._stream: list = []  # entries scheduled by `stream`, in heap order; the first is on the heap
        self._next = 0

    def push(self, t: int, priority: int, fn, args: tuple) -> None:
        """Schedule fn(*args) at absolute time t (an int, ns; never in the past)."""
        if t < self.now:
            EventLoop.at(self, t, fn, *args, priority=priority)  # raises the engine's error
        heappush(self._heap, (t, priority, self._seq, fn, args))
        self._seq += 1

    def at(self, t: int, fn, *args, priority: int = 0) -> None:
        EventLoop.at(self, t, fn, *args, priority=priority)

    def stream(self, times: list[int], fn, args: list[tuple], priority: int = 0) -> None:
        """fn(*args[i]) at times[i] for every i, scheduled in that order (before any other event)."""
        if self._seq or self._stream:
            raise RuntimeError("stream() comes before any other scheduling")
        for t in times:
            if t < self.now:
                EventLoop.at(self, t, fn, priority=priority)  # raises the engine's error
        seq = self._seq
        self._stream = sorted((int(t), priority, seq + i, fn, a) for i, (t, a) in enumerate(zip(times, args)))
        self._seq += len(self._stream)
        if self._stream:
            heappush(self._heap, self._stream[0])

    def run(self) -> int:
        heap, done = self._heap, 0
        stream, nxt = self._stream, self._next
        head = stream[nxt] if nxt < len(stream) else None
        try:
            while heap:
                e = heappop(heap)
                if e is head:  # the stream's earliest: its successor takes its place on the heap
                    nxt += 1
                    head = stream[nxt] if nxt < len(stream) else None
                    if head is not None:
                        heappush(heap, head)
                t, _, _, fn, args = e
                self.now = t
                fn(*args)
                done += 1
        finally:
            self.processed += done
            self._next = nxt
        return self.now
