"""First in, first out, per tier: a session keeps its place from when it entered the tier;
hits and re-saves do not move it. Sessions on SSD are read on demand (no look-ahead)."""
from .base import OrderedPlacement, register


@register("fifo")
class FIFO(OrderedPlacement):
    recency = False
