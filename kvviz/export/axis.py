"""Time-axis helpers shared by figures: a unit that reads well and round tick values."""
from __future__ import annotations

import math


def time_unit(span_ns: float) -> tuple[str, float]:
    """The unit a time span reads in: the largest of ns, µs, ms and s in which it is at least
    10 (a 10 µs span in µs, 9 µs in ns, 1,000 s in s). The one rule of the app's timeline axis
    and hover (from the visible span) and of exported figures (from the exported range)."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if span_ns >= 10 * scale:
            return unit, scale
    return "ns", 1.0


def nice_ticks(lo: float, hi: float, target: int = 8) -> list[float]:
    """Round tick positions (1, 2, 5 × 10^k steps) covering [lo, hi]."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / max(target, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    n = int(math.floor((hi - first) / step + 1e-9)) + 1
    return [round(first + i * step, 12) for i in range(n)]


def tick_decimals(step: float) -> int:
    """Decimals that tell ticks `step` apart at any magnitude (0.01 -> 2, 50 -> 0)."""
    return max(0, math.ceil(-math.log10(step) - 1e-9)) if step > 0 else 0


def tick_labels(ticks: list[float]) -> list[str]:
    """The ticks as text with the decimals their step needs, so neighbours never read alike."""
    places = tick_decimals(ticks[1] - ticks[0] if len(ticks) > 1 else 1.0)
    return [f"{t:.{places}f}" for t in ticks]
