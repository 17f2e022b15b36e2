"""Targets: `METRIC<=VALUE` or `METRIC>=VALUE`, METRIC a metric path (kvviz.metric_paths)."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..errors import ScenarioError

TARGET = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*(<=|>=)\s*([-+0-9.eE]+)\s*$")


@dataclass(frozen=True)
class Target:
    metric: str
    op: str      # "<=" or ">="
    value: float

    def met(self, v: float | None) -> bool:
        if v is None or not math.isfinite(v):
            return False
        return v <= self.value if self.op == "<=" else v >= self.value

    def violation(self, v: float | None) -> float:
        """How far `v` misses, relative to the target (0 when met; inf without a value)."""
        if v is None or not math.isfinite(v):
            return math.inf
        miss = v - self.value if self.op == "<=" else self.value - v
        return max(0.0, miss) / max(abs(self.value), 1e-12)

    def __str__(self) -> str:
        return f"{self.metric} {self.op} {self.value:g}"


def parse_target(text: str, source: str, field: str) -> Target:
    m = TARGET.match(text)
    if not m:
        raise ScenarioError(f"expected METRIC<=VALUE or METRIC>=VALUE (e.g. policies.lru.ttft_p99_ms<=2000), "
                            f"got {text!r}", source, field)
    try:
        value = float(m.group(3))
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ScenarioError(f"the target's value must be a finite number, got {m.group(3)!r}", source, field)
    return Target(m.group(1), m.group(2), value)
