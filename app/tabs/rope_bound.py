"""The Rope bound tab: RoPE's proven logit bound against the attention profile a run assumes."""
from __future__ import annotations

from ..views._common import carries, kinds_carrying
from ..views.rope_bound import RopeBoundView
from .base import Tab


class RopeBoundTab(Tab):
    name = "rope_bound"
    aliases = ("rope",)
    label = "Rope bound"

    def make_widget(self):
        return RopeBoundView()

    def unavailable(self, result):
        if carries(result, "rope_bound"):
            return None
        return f"The RoPE bound applies to {kinds_carrying('rope_bound')} scenarios"
