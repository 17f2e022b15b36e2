"""Memory and time a run will take, estimated from the scenario before it starts, so a run
that would exhaust memory is refused with the estimate instead of swapping for minutes.

The per-row figures were measured on this project's machine (peak RSS growth and wall time
of `simulate`, Python 3.11; see the README's size limits): they are rough and on the safe
side, meant to tell 400 MB from 12 GB, not 400 from 500 MB.

A limit of DEFAULT_MAX_MEMORY_GB applies to every run (CLI, sweeps, the app); the CLI's
`--max-memory-gb` raises or lowers it deliberately.
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import ScenarioError

DEFAULT_MAX_MEMORY_GB = 4.0

# measured: rope_window 1M and 4M positions, 265 B and 2.7 µs per trace row
ROPE_BYTES_PER_ROW, ROPE_SECONDS_PER_ROW = 300, 3e-6
# measured: engram 50 and 200 decode steps, ~140 B per estimated row
ENGRAM_BYTES_PER_ROW, ENGRAM_SECONDS_PER_ROW = 160, 1e-6
# measured: attention_store 20,000 conversations (116,000 turns): 2.9 kB per turn for one
# policy's run, 0.55 kB more per further run; 12-55 µs per turn and run (more with a deeper queue)
STORE_BYTES_PER_TURN, STORE_BYTES_PER_TURN_RUN, STORE_SECONDS_PER_TURN_RUN = 2_600, 600, 30e-6


@dataclass(frozen=True)
class Estimate:
    bytes: float
    seconds: float
    field: str  # the field that drives the size (named in a refusal)

    def describe(self) -> str:
        return f"about {_gb(self.bytes)} of memory and {_duration(self.seconds)}"


def estimate(sc) -> Estimate | None:
    """The estimate for a scenario of a kind this module knows, else None."""
    fn = _ESTIMATORS.get(getattr(sc, "kind", None))
    return fn(sc) if fn is not None else None


def check_size(sc, max_memory_gb: float | None = None) -> Estimate | None:
    """Refuse (ScenarioError at the driving field) a run estimated beyond the memory limit."""
    est = estimate(sc)
    limit = DEFAULT_MAX_MEMORY_GB if max_memory_gb is None else max_memory_gb
    if est is not None and est.bytes > limit * 1e9:
        raise ScenarioError(f"too large to simulate: {est.describe()}, beyond the {limit:g} GB limit; "
                            f"reduce {est.field}, or raise the limit with --max-memory-gb", field=est.field)
    return est


def _rope(sc) -> Estimate:
    q = len(sc.sequence.queries)
    window_rows = q * (2 * sc.prefetch.window + 4)
    naive_rows = sc.sequence.length if not sc.attention.causal else max(sc.sequence.queries) + 1
    rows = window_rows + naive_rows + sum(len(r.positions) for r in sc.reads)
    field = "prefetch.window" if window_rows >= naive_rows else "sequence.length"
    return Estimate(rows * ROPE_BYTES_PER_ROW, rows * ROPE_SECONDS_PER_ROW, field)


def _engram(sc) -> Estimate:
    e = sc.engram
    lookups = sc.model.batch_size * len(e.orders) * e.heads * len(e.module_layers)
    rows = sc.decode.steps * (4 * sc.model.layers + 3 * lookups)
    return Estimate(rows * ENGRAM_BYTES_PER_ROW, rows * ENGRAM_SECONDS_PER_ROW, "decode.steps")


def _ladder(sc) -> Estimate | None:
    # rungs run one after another and keep only their figures: memory is the largest rung's
    runs = [_rope(r) for r in sc.rung_scenarios()]
    if not runs:
        return None
    i = max(range(len(runs)), key=lambda j: runs[j].bytes)
    # blame the rung whose overrides grew the run, else the base field that drives it
    grew = sc.rungs[i].overrides and (i == 0 or runs[i].bytes > runs[i - 1].bytes)
    field = f"rungs[{i}].overrides" if grew else f"base.{runs[i].field}"
    return Estimate(runs[i].bytes, sum(e.seconds for e in runs), field)


def _store(sc) -> Estimate | None:
    w = sc.workload
    if w.trace_file:  # its length is known once read; the mechanism refuses too many turns then
        return None
    turns = w.conversations * (1 + w.multi_turn_share * (w.mean_turns_multi - 1))
    runs = len(sc.policies) + (1 if sc.serving.compare_truncation else 0)
    return Estimate(turns * (STORE_BYTES_PER_TURN + STORE_BYTES_PER_TURN_RUN * runs),
                    turns * runs * STORE_SECONDS_PER_TURN_RUN, "workload.conversations")


_ESTIMATORS = {"rope_window": _rope, "engram_window": _engram, "ladder": _ladder, "attention_store": _store}


def _gb(n: float) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e8 else f"{n / 1e6:.0f} MB"


def _duration(s: float) -> str:
    if s < 1:
        return "under a second"
    if s < 120:
        return f"{s:.0f} s"
    return f"{s / 60:.0f} min" if s < 7200 else f"{s / 3600:.1f} h"
