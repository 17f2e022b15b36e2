"""CachedAttention's scheduler-aware placement (§3.3), driven by the job queue.

- Fetching: the run prefetches SSD→DRAM the sessions of the next L_pw queued jobs.
- Eviction: sessions of the next L_ew queued jobs are protected. Victims are first the
  unprotected sessions (not queued, or queued beyond L_ew), least recently used first
  (ASSUMPTION: the paper does not say how it orders sessions the queue says nothing about);
  only when every candidate is protected, the one whose job is furthest back in the queue.
"""
from .base import OrderedPolicy, register


@register("scheduler_aware")
class SchedulerAware(OrderedPolicy):
    recency = True
    prefetches = True

    def victim(self, tier, before=-1):
        run = self.run
        running, qidx, head, lew = run.running, run.qidx, run.qhead, run.L_ew
        members = self.order[tier]
        for c in members:  # unprotected, least recently used first
            if c != running:
                q = qidx[c]
                if q < 0 or q - head >= lew:
                    return c
        # All protected: the furthest-future one, and for a prefetch only one queued behind it.
        limit = qidx[before] if before >= 0 else -1
        best, best_q = -1, limit
        for c in members:
            q = qidx[c]
            if q > best_q and c != running:
                best, best_q = c, q
        return best
