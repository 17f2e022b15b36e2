"""Memory and time a run will take, estimated from the scenario before it starts, so a run
that would exhaust memory is refused with the estimate instead of swapping for minutes.

Each mechanism's record gives its estimate (`Mechanism.estimate`), from per-row figures measured
on this project's machine (peak RSS growth and wall time of `simulate`, Python 3.11; see the
README's size limits): rough and on the safe side, meant to tell 400 MB from 12 GB, not 400
from 500 MB.

A limit of DEFAULT_MAX_MEMORY_GB applies to every run (CLI, sweeps, the app); the CLI's
`--max-memory-gb` raises or lowers it deliberately, and the app's File → Memory Limit for Runs…
(its refusals name that instead of the flag: RAISE_HINT is replaced).
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import ScenarioError

DEFAULT_MAX_MEMORY_GB = 4.0
RAISE_HINT = "raise the limit with --max-memory-gb"  # how the CLI raises it; the app says its own way


@dataclass(frozen=True)
class Estimate:
    bytes: float
    seconds: float  # in one process, on the machine the constants were measured on
    field: str  # the field that drives the size (named in a refusal)
    # a run of independent parts (Mechanism.plan): (part name, its seconds) in the order they
    # run; `seconds` is their sum plus what comes before them. kvviz.calibration schedules them
    parts: tuple[tuple[str, float], ...] = ()
    parallel: bool = False  # the parts may go to a process pool (kvviz.executor.worth_a_pool)
    dispatch: float = 0.0  # seconds of sending all the parts to a pool and their outputs back

    def describe(self) -> str:
        return f"about {_gb(self.bytes)} of memory and {_duration(self.seconds)}"


def check_size(est: Estimate | None, max_memory_gb: float | None = None, doing: str = "simulate") -> Estimate | None:
    """Refuse (ScenarioError at the driving field) a run estimated beyond the memory limit;
    `est` is its mechanism's estimate (None where the size is known only once input is read)."""
    limit = DEFAULT_MAX_MEMORY_GB if max_memory_gb is None else max_memory_gb
    if est is not None and est.bytes > limit * 1e9:
        raise ScenarioError(f"too large to {doing}: {est.describe()}, beyond the {limit:g} GB limit; "
                            f"reduce {est.field}, or {RAISE_HINT}", field=est.field)
    return est


def _gb(n: float) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.0f} MB"


def _duration(s: float) -> str:
    if s < 1:
        return "under a second"
    if s < 120:
        return f"{s:.0f} s"
    return f"{s / 60:.0f} min" if s < 7200 else f"{s / 3600:.1f} h"


# Validating a scenario builds a Python object per value inside its arrays: measured here on a
# rope_window file of 300,000 [[reads]] (1.2M values in arrays): 163 MB of peak RSS growth and
# 7.5 s, ~136 B and ~6 µs per value; taken as 200 B and 6 µs (ours, on the safe side). A 16 MB
# file (the read cap) holds at most ~8M values: ~1.6 GB, so only a lowered limit refuses one.
BYTES_PER_ARRAY_VALUE, SECONDS_PER_ARRAY_VALUE = 200, 6e-6


def validation_estimate(data: object) -> Estimate | None:
    """What validating `data` (a scenario as plain data) takes, from the number of values inside
    its arrays, counted without recursion; the field is the largest array's path. None without
    arrays."""
    values, biggest, stack = 0, (0, ""), [(data, "", False)]
    while stack:
        node, path, in_array = stack.pop()
        values += in_array
        if isinstance(node, dict):
            stack.extend((v, f"{path}.{k}" if path else str(k), in_array) for k, v in node.items())
        elif isinstance(node, list):
            if not in_array and len(node) > biggest[0]:
                biggest = (len(node), path)
            stack.extend((v, path, True) for v in node)
    if not values:
        return None
    return Estimate(values * BYTES_PER_ARRAY_VALUE, values * SECONDS_PER_ARRAY_VALUE, biggest[1] or "(arrays)")
