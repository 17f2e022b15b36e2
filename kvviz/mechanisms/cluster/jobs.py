"""Per-job state of one instance, sized by the requests routed to it, not by the workload: the
serving core's batcher keeps a list per job field indexed by job (lists of the workload's length,
made in its constructor); past LIST_BUDGET (instances × jobs of them) an instance of the cluster
replaces them by dicts holding only its own jobs, so memory grows with requests, not with
instances × requests (a 100-instance run of a 10x trace); below it the lists stay, a dict being
slower to index. Reads of a job the instance never saw give the field's initial value, as the
list did.

Below the budget the columns are arrays (int64, double, and a byte for a flag, read as 0/1: every
use is a truth test), not lists: an array holds no Python objects, so the cyclic collector does
not walk it. As lists, the 16 instances' ~20 columns of 12,031 jobs each were ~4M references
the collection that follows every run walked (~35 ms a run, more than 5% of it).
"""
from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    from ...serving.batching import Batcher

T = TypeVar("T")

# the batcher's per-job fields (kvviz/serving/batching.py's constructor) and their initial values
BATCHER_FIELDS = {"g0": 0, "ctx0": 0, "left": 0, "resume": 0, "fin_at": -1, "decoding": False, "save_end": 0,
                  "hbm_hit": False, "first_admit": -1, "first_token": 0, "end": 0, "outcome": 0, "gpu_ns": 0.0,
                  "d0": 0.0}


LIST_BUDGET = 256e6  # bytes of per-job lists all instances may take before they become dicts (ASSUMPTION)
PER_JOB_BYTES = 8 * 22  # the batcher's 14 lists and the instance's 8, a pointer per job each


def use_dicts(instances: int, jobs: int) -> bool:
    """Lists (the serving core's, fastest) while instances × jobs of them fit LIST_BUDGET, else dicts."""
    return instances * jobs * PER_JOB_BYTES > LIST_BUDGET


def per_job(initial: T) -> defaultdict[int, T]:
    return defaultdict(lambda: initial)


def as_column(per_job_dict: object, like: list[T]) -> list[T]:
    """A dict of this instance's jobs standing in for one of the batcher's per-job lists (`like`
    only names its element type): the serving core's BatchRun declares lists, and the batcher
    and the instance only index them by job, which the dict answers for every job (see above)."""
    return cast("list[T]", per_job_dict)


CODES = {bool: "b", int: "q", float: "d"}  # array type codes by the initial value's type


def int_column(values: Iterable[int]) -> list[int]:
    """An int64 array of `values` standing in for one of the per-job lists, as as_column's dicts
    do (the batcher and the instance only index them by job)."""
    return cast("list[int]", array("q", values))


def filled(initial: T, n: int) -> list[T]:
    """n copies of `initial` as a column (above), its type's code."""
    first: list[Any] = [initial]  # int, float or bool: array's element types
    return cast("list[T]", array(CODES[type(initial)], first) * n)


def dense(batcher: Batcher, n: int) -> None:
    """Replace the batcher's per-job lists by arrays of n jobs (above)."""
    for name, initial in BATCHER_FIELDS.items():
        setattr(batcher, name, filled(initial, n))


def sparse(batcher: Batcher) -> None:
    """Replace the batcher's per-job lists by dicts of the jobs it serves."""
    for name, initial in BATCHER_FIELDS.items():
        setattr(batcher, name, per_job(initial))


class Identity:
    """conv[j] = j (every request is its own session) without a list."""
    __slots__ = ()

    def __getitem__(self, j: int) -> int:
        return j


class Overlay(dict[int, int]):
    """A job's value as the instance set it, else the cluster's (prompt tokens, replies)."""
    __slots__ = ("base",)

    def __init__(self, base: list[int]) -> None:
        super().__init__()
        self.base = base

    def __missing__(self, j: int) -> int:
        return self.base[j]
