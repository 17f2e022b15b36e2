"""Placement policies of the AttentionStore, one small module each, registered by name.

lru, fifo and belady are kvviz.serving.eviction's policies (each written once, one file there),
run per tier over sessions by one adapter (base.EvictionPlacement); recompute and
scheduler_aware (the paper's baseline and its look-ahead placement) are the store's own and
live here. Their compiled twins are native/placement.pxi, held equal by tests. The scenario's
`policies` field and the `metrics.policies` it reports keep their names.

Adding a placement = adding a module here with a `@register("name")` class and listing it below
(an eviction policy: a file in kvviz/serving/eviction and a subclass of EvictionPlacement here).
"""
from __future__ import annotations

# Importing the modules registers their classes (order = the order in schemas and messages).
from . import belady, fifo, lru, recompute, scheduler_aware  # noqa: E402,F401
from .base import PLACEMENTS, Placement, register

__all__ = ["PLACEMENTS", "Placement", "register"]
