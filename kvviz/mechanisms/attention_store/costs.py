"""AttentionStore's time cost model, each constant beside its measurement: what one turn costs
in each part of a run (kvviz.runs: the workload's figures, one run per policy, the truncation
run), for the engine that will run it, in CPU seconds of one process on the machine where
kvviz.calibration's REFERENCE_PROBE_US_PER_TURN was measured (the probe times the Python
reference engine; `kvviz.calibration` scales these by this machine's probe).

Re-measure with `benchmarks/bench_estimate.py --constants`: it times the probe and each part of
the bundled ShareGPT and Mooncake runs under both engines in one process, alternately, and
prints both sets in this module's shape.

ASSUMPTION (ours): the compiled engine's time scales with the probe's factor as the Python
reference's does (a machine twice as slow at the probe is twice as slow at compiled code too);
the probe times only the reference, so a machine on which compiled code is relatively faster
or slower than here is estimated off by that ratio.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EngineCosts:
    run_s_per_turn: float          # an unrecorded LRU run's CPU seconds per turn
    record: float                  # a recorded run's time over its policy's unrecorded run's
    policy: dict[str, float]       # a policy's unrecorded run over LRU's (1 for one not listed)

    def s_per_turn(self, policy: str, record: bool) -> float:
        return self.run_s_per_turn * self.policy.get(policy, 1.0) * (self.record if record else 1.0)


# Measured with benchmarks/bench_estimate.py --constants, three sessions (19:56, 20:11 and 20:16
# UTC on 2026-12-01, load average 2.0-3.8 from other sessions on the 2 cores; each figure the
# least of 3 rounds, put at the reference probe: × 0.93, 0.97, 0.97), on the bundled ShareGPT run
# (52,400 turns; the bundled Mooncake sample, 3,993 turns, in brackets where it differs); each
# constant the mean of the sessions, rounded.

# The Python reference engine (kvviz/serving/batching.py, store.py, ...): LRU 32.0, 34.8, 38.8 µs per turn
# (Mooncake 21.7, 20.4, 21.3); recorded scheduler_aware 1.45, 1.30, 1.21× its unrecorded run
# (1.31, 1.51, 1.51); policies over LRU: recompute 0.67, 0.70, 0.74; fifo 0.94, 0.97, 0.94;
# belady 1.37, 1.27, 1.26; scheduler_aware 1.44, 1.34 (1.13, 1.10).
REFERENCE = EngineCosts(
    run_s_per_turn=35e-6, record=1.3,
    policy={"recompute": 0.7, "fifo": 0.95, "lru": 1.0, "belady": 1.3, "scheduler_aware": 1.4})

# The compiled engine (native/): LRU 2.12, 2.74, 2.59 µs per turn in those sessions, 1.67 in a
# fourth (20:22, load average 0.8, after the compiled recorder: Mooncake 1.62, 1.31, 1.41, 1.04);
# recorded scheduler_aware 2.29× its unrecorded run in the fourth (Mooncake 2.22; the first three,
# 4.5-5.5×, measured the recording through Python calls the compiled engine no longer makes);
# policies over LRU: recompute 0.86, 0.67, 0.97, 0.64; fifo 1.08, 0.79, 1.13, 1.46; belady 1.84,
# 1.31, 2.10, 1.67; scheduler_aware 1.42, 1.59, 1.62 (Mooncake 1.23, 1.20, 1.35). An unrecorded
# run takes ~0.1 s: its ratios are noisier than the reference's. Each the mean of the sessions.
COMPILED = EngineCosts(
    run_s_per_turn=2.3e-6, record=2.3,
    policy={"recompute": 0.8, "fifo": 1.1, "lru": 1.0, "belady": 1.75, "scheduler_aware": 1.55})

# The workload's figures (numpy, and a Fenwick tree over the turns with a history: compiled with
# the engine, native/figures.pxi, else Python), per turn: with the Python tree 4.06, 4.74, 4.55 µs
# in the three sessions (Mooncake 1.35-1.65: fewer turns with a history, so it errs long there);
# with the compiled one 0.35 and 0.32 in the fourth (Mooncake 0.20, 0.15).
WORKLOAD_S_PER_TURN = {"python": 4.5e-6, "compiled": 0.33e-6}
# Preparing the workload before any part (`Prepared`: numpy and one Python loop), per turn of a
# synthetic workload: 0.67, 0.69, 0.69 µs.
PREPARE_S_PER_TURN = 0.68e-6
# Reading a trace file and preparing it, per line: 19.1, 12.9, 14.8 µs on the bundled Mooncake sample.
TRACE_LINE_S = 16e-6
# Sending the parts to a pool's workers (the prepared workload to each) and their outputs back
# (the recorded run's trace: ~40 MB pickled on the flagship), all parts together, per turn: a
# warm pool of 2 took 0.25-0.35 s for the flagship's parts with their runs left out (median
# 0.248, 0.235 and 0.263 s at the reference probe: 4.7, 4.5 and 5.0 µs per turn).
DISPATCH_S_PER_TURN = 4.7e-6


def compiled_runs(policy: str) -> bool:
    """Whether `policy`'s runs go to the compiled engine (serving._engine_for's "auto": built,
    current and compiling the policy; not under KVVIZ_ENGINE=python)."""
    from .serving import _engine_for
    return _engine_for("auto", policy)[0] is not None


def workload_s_per_turn() -> float:
    """The workload part's CPU seconds per turn on the reference machine (its Fenwick tree is
    compiled wherever the engine is built and current)."""
    from . import native
    return WORKLOAD_S_PER_TURN["compiled" if native.engine() is not None else "python"]


def s_per_turn(policy: str, record: bool) -> float:
    """A run's CPU seconds per turn on the reference machine, with the engine that will run it."""
    return (COMPILED if compiled_runs(policy) else REFERENCE).s_per_turn(policy, record)
