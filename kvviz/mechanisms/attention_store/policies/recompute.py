"""The paper's baseline (RE): no KV is kept between turns; every turn re-prefills its history."""
from .base import Policy, register


@register("recompute")
class Recompute(Policy):
    stores = False

    def victim(self, tier, before=-1):
        return -1
