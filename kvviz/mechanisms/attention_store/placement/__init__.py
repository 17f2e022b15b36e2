"""Placement policies of the AttentionStore, one small module each, registered by name.

Named `placement` apart from kvviz.replay's eviction policies (libCacheSim's); the scenario's
`policies` field and the `metrics.policies` it reports keep their names.

Adding a policy = adding a module here with a `@register("name")` class and listing it below.
"""
from __future__ import annotations

# Importing the modules registers their classes (order = the order in schemas and messages).
from . import belady, fifo, lru, recompute, scheduler_aware  # noqa: E402,F401
from .base import PLACEMENTS, Placement, register

__all__ = ["PLACEMENTS", "Placement", "register"]
