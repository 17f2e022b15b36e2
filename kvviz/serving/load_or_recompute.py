"""Load or recompute: whether a job whose history sits in a slow tier loads it or recomputes it.
AttentionStore asks it for a history on SSD (`store.load_if_faster`).

The rule: load only if that takes less time than recomputing the history, i.e. the prefill of
its tokens alone under the roofline (roofline.py: prefill(h) = prefill(h + n) − prefill(n after h)).
The load time counts from the job's admission: the wait for the SSD (its queued IO as the SSD
would serve the read, and the reads chosen by jobs admitted at the same instant, which are
booked together after them) and the transfer. The host link's own queue is not counted (the
loads of one prefill iteration share it whichever way the job goes). Off: every history on SSD
loads, as before the rule existed.
"""
from __future__ import annotations

from .roofline import Roofline


class LoadRule:
    def __init__(self, enabled: bool, gpu: Roofline) -> None:
        self.enabled, self.gpu = enabled, gpu
        self.at, self.pending_ns = -1, 0  # SSD time of the demand reads chosen at `at`, not yet booked

    def loads(self, keep: int, load_ns: int, demand_ns: int, now: int) -> bool:
        """True: load the `keep` history tokens (`load_ns` from now; `demand_ns` of it the SSD
        read, if it is one); False: recompute them."""
        if not self.enabled:
            return True
        if self.at != now:
            self.at, self.pending_ns = now, 0
        if load_ns + self.pending_ns < self.gpu.prefill_ns(keep):
            self.pending_ns += demand_ns
            return True
        return False

    def booked(self) -> None:
        """The chosen demand reads are on the SSD's queue now."""
        self.pending_ns = 0
