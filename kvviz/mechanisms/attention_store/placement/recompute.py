"""The paper's baseline (RE): no KV is kept between turns; every turn re-prefills its history."""
from __future__ import annotations

from .base import Placement, register


@register("recompute")
class Recompute(Placement):
    stores = False

    def victim(self, tier: int, before: int = -1) -> int:
        return -1
