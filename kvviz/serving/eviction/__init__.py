"""Eviction policies, one file each, registered by name (Vidur's base_registry, libCacheSim's
one algorithm per file): the one definition of each policy wherever it runs (the block prefix
cache, kvviz replay --prefix, the object replay, AttentionStore's placement). The interface
and the facts a policy may need: base.py. Adding a policy: README.md, "Adding an eviction
policy".
"""
from __future__ import annotations

from .base import (
    DESCRIPTIONS,
    EVICTION_POLICIES,
    FACTS,
    NO_PINS,
    HeapPolicy,
    Policy,
    PolicyRefused,
    descriptions,
    ignore,
    make,
    needs,
    policy_class,
    register,
)

__all__ = ["DESCRIPTIONS", "EVICTION_POLICIES", "FACTS", "NO_PINS", "HeapPolicy", "Policy", "PolicyRefused",
           "descriptions", "ignore", "make", "needs", "policy_class", "register"]

# Importing a policy's file registers it (this order = the order in schemas and messages).
# isort: off
from . import lru  # noqa: E402,F401
from . import leaf_lru  # noqa: E402,F401
from . import fifo  # noqa: E402,F401
from . import belady  # noqa: E402,F401
# isort: on
