"""The prefix cache's adapter to the eviction policies (kvviz.serving.eviction: one file per
policy, each written once). Each tier's policy keeps the blocks resident in it and names a
victim on request, skipping pinned blocks (those the request being served holds in HBM; `unpin`
when it ends); the engine then removes it. The prefix cache gives every fact a policy may need
(each block's next use from the trace, each block's parent: the block before it in the request
that first asked for it), so it runs every registered policy.

- lru: least recently used first (a use: a hit served here, an insert, a write that finds the
  block here).
- fifo: the oldest insert first; uses do not reorder.
- leaf_lru: least recently used among blocks with no child block resident in this tier, as a
  radix tree evicts leaves; a block whose only leaves are pinned cannot go.
- belady: the block whose next use lies furthest in the future, chosen among ALL the tier's
  blocks and the one entering (the engine leaves that one out when it is the farthest:
  engine.py step 3). It ignores pins: it is the clairvoyant reference every policy is compared
  with (`belady_gap`).
A policy that reads next uses (`clairvoyant`) gets belady's bypass rule in the engines.
"""
from __future__ import annotations

from ...serving.eviction import DESCRIPTIONS, EVICTION_POLICIES, Policy, descriptions, ignore, policy_class
from ...serving.eviction import make as _make

__all__ = ["POLICIES", "clairvoyant", "ignore", "ignores_pins", "make", "names", "needs", "policies"]

# every policy registered (a live view), with the one line the CLI and the scenario reference show
POLICIES = DESCRIPTIONS


def policies() -> dict[str, str]:
    """Every policy, with the one line the CLI and the scenario reference show for it."""
    return descriptions()


def names() -> tuple[str, ...]:
    return tuple(EVICTION_POLICIES)


def clairvoyant(policy: str) -> bool:
    """Reads each block's next use from the trace; the entering block a candidate."""
    return "next_use" in policy_class(policy).needs


def ignores_pins(policy: str) -> bool:
    """May evict a block a running request holds."""
    return policy_class(policy).ignores_pins


def make(policy: str, parent: dict[int, int | None] | None, next_use: dict[int, int]) -> Policy[int]:
    return _make(policy, "the prefix cache", parent=parent, next_use=next_use)


def needs(policy: str) -> frozenset[str]:
    """The facts (kvviz.serving.eviction.FACTS) the policy reads."""
    return policy_class(policy).needs
