"""First in, first out, per tier: a session keeps its place from when it entered the tier;
hits and re-saves do not move it. Sessions on SSD are read on demand (no look-ahead)."""
from .base import EvictionPlacement, register


@register("fifo")
class FIFO(EvictionPlacement):
    policy = "fifo"  # kvviz/serving/eviction/fifo.py
