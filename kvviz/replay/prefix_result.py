"""One policy at one capacity of `kvviz replay --prefix` (semantics: kvviz.replay.prefix), and
the names of the engines that count it. Imports nothing heavy: the lean LRU path
(kvviz.replay.prefix_lean) makes these without numpy."""
from __future__ import annotations

from dataclasses import dataclass

STACK = "stack distances"          # LRU's one-pass curve in numpy (where the compiled pass is not built)
ENGINE = "prefix_cache engine"     # the prefix_cache mechanism's single-tier replay (Python block cache)
BLOCK_CACHE = "compiled block cache"  # the same replay on its compiled twin (kvviz/serving/native/_block_cache.pyx:
#                                       per request through the engine, or all requests in one call, prefix_counts)


@dataclass(frozen=True)
class PrefixResult:
    policy: str
    capacity: int | None      # blocks; None: infinite
    requests: int
    blocks: int               # requested blocks (every hash id of every request)
    hit_blocks: int
    hit_requests: int         # requests with >= 1 hit block
    engine: str = ""
    pin_running: bool = True  # whether a request held the blocks it reached

    @property
    def block_hit_ratio(self) -> float:
        return self.hit_blocks / self.blocks if self.blocks else 0.0

    @property
    def request_hit_ratio(self) -> float:
        return self.hit_requests / self.requests if self.requests else 0.0

    def to_dict(self) -> dict[str, object]:
        return {"policy": self.policy, "capacity": self.capacity, "block_hit_ratio": self.block_hit_ratio,
                "request_hit_ratio": self.request_hit_ratio, "requests": self.requests, "blocks": self.blocks,
                "hit_blocks": self.hit_blocks, "hit_requests": self.hit_requests, "engine": self.engine,
                "pin_running": self.pin_running}
