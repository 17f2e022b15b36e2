"""The search: the cheapest grid point meeting every target, exactly as the full grid would
find it, running only the points nothing else decides.

What decides a point without running it:
- the bound (bound.py): a point whose lower bound on a `<=` target's metric already misses it
  is infeasible;
- monotonicity, on the axes marked `monotone` (more capacity, links or GPUs never makes a
  target worse; tests/test_plan.py holds it along each axis of the bundled scenario): a run that
  misses a target makes every point below it (<= on the monotone axes, equal on the rest)
  infeasible; a run that meets them makes every point above it feasible;
- cost: once a feasible point is known, only points no dearer can beat it.
The search keeps, among the points no dearer than the best so far and not yet decided, running
the one whose outcome decides the most of them whichever it is (a miss decides those below it,
a meet those dearer than it): a bisection of the grid's order, along every monotone axis and
cost at once. It stops
when every point no dearer than the best is run or decided, so the best is the grid's: ties by
lower cost, then the lower first target metric, then the settings in sorted order.

The check (`verify`, on by default): an inference from a run rests on monotonicity up to the
tolerance, which is measured, not proven. So before answering, the search runs the edge of what
it inferred infeasible: each inferred miss no dearer than the best with no other inferred miss
above it (the nearest to meeting the target; a wobble larger than the tolerance shows there
first). If one meets the target, the inference was wrong: it is recorded (`broken`), nothing is
inferred any more, and every point it had inferred runs, so the answer is the grid's whatever
the slack; if none does, the answer stands with the edge measured.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .grid import Grid, PointValues
from .targets import Target

UNDECIDED, INFEASIBLE, FEASIBLE, RAN = 0, 1, 2, 3

OnResult = Callable[[int, PointValues], None]  # (point, its values) as each run ends
# run(points, on_result) -> each point's values, in the order given
RunPoints = Callable[[list[int], OnResult | None], list[PointValues]]


@dataclass
class Outcome:
    best: int | None
    values: dict[int, PointValues] = field(default_factory=dict)   # point -> its run's metrics
    state: np.ndarray | None = None                          # per point: how it was decided
    bound_pruned: int = 0
    order: list[int] = field(default_factory=list)           # points in the order they ran
    # (missed, met): a run missed the targets at a point above (on the monotone axes) one that
    # met them: an axis marked monotone is not, here, and the answer may not be the grid's
    broken: list[tuple[int, int]] = field(default_factory=list)
    verified: list[int] = field(default_factory=list)        # inferred misses run as the check

    @property
    def runs(self) -> int:
        return len(self.values)


def feasible(values: PointValues, targets: Sequence[Target]) -> bool:
    return all(t.met(values.get(t.metric)) for t in targets)


def clearly_missed(values: PointValues, targets: Sequence[Target], tolerance: float) -> bool:
    """Missed some target by more than `tolerance` of its value: enough to infer from."""
    return any(t.violation(values.get(t.metric)) > tolerance for t in targets)


def clearly_met(values: PointValues, targets: Sequence[Target], tolerance: float) -> bool:
    """Met every target with `tolerance` of its value to spare."""
    def spare(t: Target, v: float | None) -> bool:
        if v is None or not math.isfinite(v):
            return False
        room = tolerance * max(abs(t.value), 1e-12)
        return v <= t.value - room if t.op == "<=" else v >= t.value + room
    return all(spare(t, values.get(t.metric)) for t in targets)


def tie_key(grid: Grid, targets: Sequence[Target], i: int, values: PointValues
            ) -> tuple[float, float, list[tuple[str, float]]]:
    first = values.get(targets[0].metric) if targets else 0.0
    return (grid.cost[i], first if first is not None else math.inf, sorted(grid.settings[i].items()))


def best_of(grid: Grid, targets: Sequence[Target], values: dict[int, PointValues]) -> int | None:
    ok = [i for i, v in values.items() if feasible(v, targets)]
    return min(ok, key=lambda i: tie_key(grid, targets, i, values[i])) if ok else None


def exhaustive(grid: Grid, targets: Sequence[Target], run: RunPoints, on_result: OnResult | None = None) -> Outcome:
    idx = list(range(len(grid)))
    values = dict(zip(idx, run(idx, on_result)))
    return Outcome(best_of(grid, targets, values), values, np.full(len(grid), RAN), 0, idx)


def search(grid: Grid, targets: Sequence[Target], run: RunPoints, bounds: np.ndarray | None = None, batch: int = 1,
           on_result: OnResult | None = None, tolerance: float = 0.0, verify: bool = True) -> Outcome:
    """`run(points, on_result)` -> their metrics (dicts by path); `bounds[i]`: True where the
    bound proves point i misses a target. `tolerance`: monotonicity is trusted only beyond this
    share of a target's value (a run that misses by less decides nothing below it, one that meets
    with less to spare nothing above it): the slack of a timed model that is monotone but for
    small wobbles. `verify`: before answering, run the inferred misses nearest to feasibility
    (module docstring); a wrong inference found there makes every inferred miss undecided again."""
    n = len(grid)
    state = np.full(n, UNDECIDED)
    if bounds is not None:
        state[bounds] = INFEASIBLE
    pruned = int(np.count_nonzero(state == INFEASIBLE))
    values: dict[int, PointValues] = {}
    order: list[int] = []
    above = np.array([grid.at_least(i) for i in range(n)])   # above[i, p]: p >= i
    best_cost = math.inf
    broken: list[tuple[int, int]] = []
    verified: list[int] = []
    inferred = np.zeros(n, dtype=bool)  # decided infeasible by a run above it (not by the bound)
    while True:
        # every point no dearer than the best that is not decided (or decided feasible without
        # a run: its metrics break a tie) must run
        todo = np.flatnonzero(((state == UNDECIDED) | (state == FEASIBLE)) & (grid.cost <= best_cost))
        if not len(todo):
            if not verify:
                break
            # the check: the inferred misses no dearer than the best that no other inferred miss
            # is above (the edge of the region inferred infeasible, nearest to meeting the target)
            # run; if one meets it, monotonicity failed here, and every inference is undone
            cand = np.flatnonzero(inferred & (grid.cost <= best_cost))
            edge = [int(p) for p in cand if state[p] == INFEASIBLE and (above[p] & inferred).sum() == 1]
            if not edge:
                break
            wrong = False
            for i, v in zip(edge, run(edge, on_result)):
                values[i] = v
                order.append(i)
                verified.append(i)
                state[i] = RAN
                if feasible(v, targets):
                    wrong = True
                    best_cost = min(best_cost, grid.cost[i])
                    broken.append((i, i))
            if wrong:
                state[inferred & (state == INFEASIBLE)] = UNDECIDED
                inferred[:] = False
                tolerance = math.inf  # infer nothing more: every remaining point runs
            continue
        # bisection: the candidate whose outcome, either way, decides the most others. A miss
        # decides the candidates below it; a meet, the candidates dearer than it
        below = above[np.ix_(todo, todo)].sum(axis=0)
        c = grid.cost[todo]
        dearer = len(todo) - np.searchsorted(np.sort(c), c, side="right")
        gain = np.minimum(below, dearer + 1)
        if not values:  # first the top: a miss there decides the whole grid; a meet bounds the cost
            gain = below
        pick = [int(todo[k]) for k in sorted(range(len(todo)), key=lambda k: (-gain[k], -below[k], todo[k]))[:batch]]
        for i, v in zip(pick, run(list(pick), on_result)):
            if state[i] == FEASIBLE and not feasible(v, targets):
                broken.append((int(i), int(i)))
            values[int(i)] = v
            order.append(int(i))
            state[i] = RAN
            if feasible(v, targets):
                best_cost = min(best_cost, grid.cost[i])
                if clearly_met(v, targets, tolerance):
                    state[above[i] & (state == UNDECIDED)] = FEASIBLE
            elif clearly_missed(v, targets, tolerance):
                below = grid.at_most(i)
                inferred |= below & (state == UNDECIDED)
                state[below & (state == UNDECIDED)] = INFEASIBLE
                broken += [(int(i), p) for p in map(int, np.flatnonzero(below)) if p != i and
                           (state[p] == FEASIBLE or (p in values and feasible(values[p], targets)))]
    best = best_of(grid, targets, values)
    if best is None:  # the closest mix: a top point (of each slice of the non-monotone axes) is run
        tops = [i for i in range(n) if above[i].sum() == 1 and i not in values]
        for i, v in zip(tops, run(tops, on_result) if tops else []):
            values[int(i)] = v
            order.append(int(i))
            state[i] = RAN
    return Outcome(best, values, state, pruned, order, broken, verified)
