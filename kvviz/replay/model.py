"""What a replay gives back (what it reads: kvviz.requests.objects.Requests)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReplayResult:
    policy: str
    capacity: int
    requests: int
    misses: int
    bytes_requested: int
    bytes_missed: int
    engine: str = ""  # "libcachesim", "python" or "stack distances" (the one-pass LRU curve)
    warnings: tuple[str, ...] = ()  # what the engine printed at this point (libCacheSim's C code)

    @property
    def request_miss_ratio(self) -> float:
        return self.misses / self.requests if self.requests else 0.0

    @property
    def byte_miss_ratio(self) -> float:
        return self.bytes_missed / self.bytes_requested if self.bytes_requested else 0.0

    def to_dict(self) -> dict[str, object]:
        return {"policy": self.policy, "capacity": self.capacity, "requests": self.requests,
                "misses": self.misses, "request_miss_ratio": self.request_miss_ratio,
                "byte_miss_ratio": self.byte_miss_ratio, "engine": self.engine,
                **({"warnings": list(self.warnings)} if self.warnings else {})}
