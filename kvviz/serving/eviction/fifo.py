"""First in, first out: a key keeps its place from when it entered; uses do not reorder. The
victim is the earliest inserted key not pinned (lru.py's order and victim search)."""
from __future__ import annotations

from .base import K, register
from .lru import Lru


@register("fifo")
class Fifo(Lru[K]):
    description = "evicts the block inserted earliest; a use changes nothing"
    recency = False
