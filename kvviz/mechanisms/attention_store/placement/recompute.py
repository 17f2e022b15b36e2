"""The paper's baseline (RE): no KV is kept between turns; every turn re-prefills its history."""
from .base import Placement, register


@register("recompute")
class Recompute(Placement):
    stores = False

    def victim(self, tier, before=-1):
        return -1
