"""Least recently used: a use (a hit, an insert, a write that finds the key here) makes a key
the most recent; the victim is the least recent key not pinned."""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Container
from typing import Any

from .base import K, Policy, register


@register("lru")
class Lru(Policy[K]):
    """The order is `held` (pinned keys set aside from its front, oldest first) followed by
    `order`: every held key precedes every key in `order`, since `order` only grows at its end.
    A use of a held key moves it to the end of `order`, as it would the whole order."""

    description = "evicts the block used longest ago"
    recency = True  # False: uses do not reorder (fifo.py)

    def __init__(self, **facts: Any) -> None:
        self.order: OrderedDict[K, None] = OrderedDict()
        self.held: dict[K, None] = {}  # set-aside pinned keys, in order (all pinned until `unpin`)
        order, held = self.order, self.held
        move, drop = order.move_to_end, order.__delitem__
        # the OrderedDict's own methods where they can be (engines call these for every
        # block): insert (b is never resident then), use, remove
        self.insert = order.setdefault  # type: ignore[method-assign]  # per instance, for speed: its value (None) unread

        def touch(b: K) -> None:
            try:
                move(b)
            except KeyError:  # set aside: back at the end of the order
                del held[b]
                order[b] = None

        def remove(b: K) -> None:
            try:
                drop(b)
            except KeyError:
                del held[b]

        self.remove = remove  # type: ignore[method-assign,assignment]  # per instance: a closure over the dicts, for speed
        if self.recency:
            self.touch = touch  # type: ignore[method-assign]  # per instance: as remove

    def touch(self, b: K) -> None:  # fifo: a use changes nothing
        pass

    def unpin(self) -> None:
        """Pins went: the set-aside keys go back to the front of the order, in their order."""
        held, order = self.held, self.order
        if held:
            for b in reversed(held):
                order[b] = None
                order.move_to_end(b, last=False)
            held.clear()

    def victim(self, pinned: Container[K]) -> K | None:
        """The first key of the order not pinned. Pinned keys met at the front are set aside
        (pins only grow until `unpin`), so each is walked once per unpin, not once per victim:
        a running request's blocks stay pinned in HBM until its last token, and walking them
        on every placement into a full HBM was most of a timed run's time."""
        order, held = self.order, self.held
        while order:
            b = next(iter(order))
            if b not in pinned:
                return b
            del order[b]
            held[b] = None
        return None
