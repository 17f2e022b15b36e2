"""Most recently used: the victim is the key used last (a toy)."""
from __future__ import annotations

from collections import OrderedDict

from .base import Policy, register


@register("mru")
class Mru(Policy):
    description = "evicts the block used most recently"

    def __init__(self, **facts):
        self.order = OrderedDict()

    def insert(self, b):
        self.order[b] = None

    def touch(self, b):
        self.order.move_to_end(b)

    def remove(self, b):
        del self.order[b]

    def victim(self, pinned):
        for b in reversed(self.order):
            if b not in pinned:
                return b
        return None
