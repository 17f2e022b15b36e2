"""Least recently used, per tier: a hit or a re-save makes a session the most recent.
Sessions on SSD are read on demand when their job starts (no look-ahead)."""
from .base import EvictionPlacement, register


@register("lru")
class LRU(EvictionPlacement):
    policy = "lru"  # kvviz/serving/eviction/lru.py
