"""Clairvoyant eviction (Belady's MIN at session granularity): evict the session whose next
turn arrives furthest in the future; sessions with no further turn go first (ties: the smallest
session id). It knows each stored session's next arrival exactly (the simulation drew the think
times), which no real system does: an upper bound on what eviction can achieve, not shown in the
paper. It uses the same job-queue prefetch as scheduler_aware. With sessions of unequal size MIN
is a strong heuristic, not a proven optimum.

The policy itself is kvviz/serving/eviction/belady.py (written once), one instance per tier over
sessions (base.EvictionPlacement), reading `store.next_time` as its next uses. Unlike the block
prefix cache, the store never evicts a running session (its job is reading that KV): running
sessions are pins here too; and a victim made to prefetch a session must be needed later than it
(`Belady.victim_after`). Among sessions with the same next arrival (those with no further turn,
mostly) it keeps the order this placement has always had, which its compiled twin
(native/placement.pxi) and the recorded results share: the shared policy's `ties="calls"`.
"""
from __future__ import annotations

from .base import EvictionPlacement, register


@register("belady")
class Belady(EvictionPlacement):
    policy = "belady"  # kvviz/serving/eviction/belady.py
    prefetches = True
    settings = {"ties": "calls"}
