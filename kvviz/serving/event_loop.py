"""The run's event loop: kvviz.engine.EventLoop's order and count, with a cheaper hot path.

Entries are the same (time_ns, priority, seq, callback, args) tuples, so events run in the same
order as EventLoop runs them (ties: priority, then the order scheduled) and `processed` counts
the same events. `push(t, priority, fn, args)` takes its arguments positionally (no keyword or
*args packing: the engine schedules ~5 events per turn); `at` keeps EventLoop's signature and
checks for the few callers off the hot path. `stream` schedules many events at once, as that
many `at` calls would, but holds only the earliest not yet run in the heap (the run's first
turns: thousands of arrivals would otherwise deepen every heap operation of the run).
`sooner` moves a pending event earlier in place (a decrease-key): the cluster's batchers cut a
decode segment short with it instead of leaving the superseded end to be popped and skipped.
"""
from __future__ import annotations

from collections.abc import Callable
from heapq import heappop, heappush
from typing import Any, TypeVarTuple, Unpack

from ..engine import Entry, refuse_past

Args = TypeVarTuple("Args")


class Loop:
    def __init__(self) -> None:
        self._heap: list[Entry] = []
        self._seq = 0
        self.now = 0
        self.processed = 0
        self._stream: list[Entry] = []  # entries scheduled by `stream`, in heap order; the first is on the heap
        self._next = 0

    def push(self, t: int, priority: int, fn: Callable[..., object], args: tuple[Any, ...]) -> None:
        """Schedule fn(*args) at absolute time t (an int, ns; never in the past)."""
        if t < self.now:
            refuse_past(t, self.now)  # the engine's error
        heappush(self._heap, (t, priority, self._seq, fn, args))
        self._seq += 1

    def push_entry(self, t: int, priority: int, fn: Callable[..., object], args: tuple[Any, ...]) -> Entry:
        """push(), returning the entry scheduled (the handle `sooner` takes)."""
        if t < self.now:
            refuse_past(t, self.now)
        e = (t, priority, self._seq, fn, args)
        heappush(self._heap, e)
        self._seq += 1
        return e

    def sooner(self, old: Entry, t: int, priority: int, fn: Callable[..., object], args: tuple[Any, ...]) -> Entry:
        """Replace the pending entry `old` by fn(*args) at t, no later than old: events then run
        as after push(t, priority, fn, args) with `old` never scheduled (the new entry takes the
        next seq, as push's would). The entry is found by a scan (the heap holds a few entries
        per instance) and sifted toward the root, the only way an earlier key can move."""
        if t < self.now:
            refuse_past(t, self.now)
        if (t, priority) > (old[0], old[1]):
            raise ValueError(f"sooner() moves an event earlier, not later: {t} > {old[0]}")
        heap = self._heap
        i = heap.index(old)  # ValueError if it is not pending
        e = (t, priority, self._seq, fn, args)
        self._seq += 1
        while i:  # sift up (heapq's private _siftdown)
            p = (i - 1) >> 1
            parent = heap[p]
            if not e < parent:
                break
            heap[i] = parent
            i = p
        heap[i] = e
        return e

    def at(self, t: int, fn: Callable[[Unpack[Args]], object], *args: Unpack[Args], priority: int = 0) -> None:
        if t < self.now:
            refuse_past(t, self.now)
        heappush(self._heap, (int(t), priority, self._seq, fn, args))
        self._seq += 1

    def stream(self, times: list[int], fn: Callable[..., object], args: list[tuple[Any, ...]], priority: int = 0) -> None:
        """fn(*args[i]) at times[i] for every i, scheduled in that order (before any other event)."""
        if self._seq or self._stream:
            raise RuntimeError("stream() comes before any other scheduling")
        for t in times:
            if t < self.now:
                refuse_past(t, self.now)  # the engine's error
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
            if nxt >= len(stream):  # every streamed event has run: their entries go now, not with the loop
                self._stream = []
        return self.now
