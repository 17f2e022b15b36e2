"""Placement policies of the AttentionStore, one small module each, registered by name.

Adding a policy = adding a module here with a `@register("name")` class and listing it below.
"""
from __future__ import annotations

from .base import POLICIES, Policy, register  # noqa: F401

# Importing the modules registers their classes (order = the order in schemas and messages).
from . import recompute, lru, fifo, scheduler_aware, belady  # noqa: E402,F401
