"""Seed claims as data: each scenario's `[[claim]]` tables (kvviz.scenario.Claim) evaluated on
runs of that scenario, one run per distinct `set` of overrides, into rows of the
paper-vs-model table (`kvviz claims`, the app's Claims tab, the README's tables).

The verdict is computed, never written:
- reproduced: the model's value matches the paper's (within rel_tol / abs_tol, relative to the
  paper's value, in `between`, or equal for text and true/false) and the shape condition, if
  the claim states one, holds too (a value near 77% that does not fall with the rate is not the
  paper's trend); a claim with no comparable value (text such as "wider") is judged by its
  shape condition alone;
- same_shape: the value does not match, but the shape condition holds;
- not_reproduced: otherwise;
- not_expressible: the claim has no metric (its `why` says what the model lacks).
A broken claim, an unknown override or a metric the run does not report, is `error` with the
message: a broken path never passes for an honest verdict. `why` is shown for every verdict
but `reproduced` (a written reason beside a reproduced value would be stale).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import ScenarioError
from .metric_paths import COMPARISONS, finite_number, metric_value

VERDICTS = ("reproduced", "same_shape", "not_reproduced", "not_expressible")
ERROR = "error"  # a claim the run cannot evaluate: an unknown override or metric
NOT_RUN = "not run"  # a claim whose run was not asked for yet (the app runs `set` groups on demand)


@dataclass(frozen=True)
class Row:
    """One line of the table. `model` is the run's value (None when there is none); `shown`
    is how the text and Markdown tables print it (with the shape's other value, if any)."""
    seed: str
    claim: str
    paper: Any
    model: Any
    verdict: str
    why: str
    shown: str = ""
    file: str = ""
    paper_shown: str = ""  # the paper's value with the tolerance it is held to

    def to_dict(self) -> dict:
        """The --json form: exactly these six keys."""
        return {"seed": self.seed, "claim": self.claim, "paper": self.paper, "model": self.model,
                "verdict": self.verdict, "why": self.why}


def fmt(v) -> str:
    """A value as the table prints it: four significant digits for fractions and ratios."""
    if v is None or v == "":  # an empty metric (e.g. no position hit) reads as "none", not blank
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"
    if isinstance(v, int):
        return f"{v:,}" if abs(v) >= 10_000 else str(v)
    return str(v)


def value_matches(claim, v) -> bool | None:
    """Whether the model's value `v` is the paper's; None when they cannot be compared (text
    against a number with no `between`)."""
    paper = claim.paper
    if claim.between is not None and finite_number(v):
        lo, hi = claim.between
        return lo <= v <= hi
    if isinstance(paper, bool) or isinstance(v, bool):
        return v is paper if isinstance(paper, bool) and isinstance(v, bool) else None
    if isinstance(paper, str):
        return v == paper if isinstance(v, str) else None
    if v is None:  # a ratio with nothing to divide by: no value, so no match
        return False
    if not finite_number(v):
        return None
    if claim.abs_tol is not None:
        return abs(v - paper) <= claim.abs_tol
    rel = claim.rel_tol if claim.rel_tol is not None else 1e-9
    return abs(v - paper) <= rel * abs(paper) + 1e-12  # relative to the paper's value


def shape_holds(claim, v, others: dict[str, Any]) -> bool | None:
    """Whether the shape condition holds (None: the claim states none). `others`: the values
    of the metrics the shape names."""
    conditions = claim.shape_paths()
    if not conditions and claim.sign is None:
        return None
    if not finite_number(v):
        return False
    if claim.sign == "positive" and not v > 0 or claim.sign == "negative" and not v < 0:
        return False
    return all(finite_number(others.get(path)) and COMPARISONS[cond][1](v, others[path]) for cond, path in conditions.items())


def verdict(claim, v, others: dict[str, Any] | None = None) -> tuple[str, str]:
    """(verdict, why) of a claim whose metric gave `v` (the shape's metrics in `others`)."""
    matched = value_matches(claim, v)
    shape = shape_holds(claim, v, others or {})
    if matched is None and shape is None:
        return ERROR, (f"the paper's {type(claim.paper).__name__} cannot be compared with the model's "
                       f"{type(v).__name__}, and no shape condition is given")
    if matched is None:  # a claim of shape only (text such as "wider")
        return ("reproduced", "") if shape else ("not_reproduced", _reason(claim))
    if matched and shape is not False:
        return "reproduced", ""
    return ("same_shape" if shape else "not_reproduced"), _reason(claim)


def _reason(claim) -> str:
    return claim.why or "(no reason written)"


def _shown(claim, v, others: dict) -> str:
    text = fmt(v)
    parts = []
    for c, p in claim.shape_paths().items():
        symbol, holds = COMPARISONS[c]
        ok = finite_number(v) and finite_number(others.get(p)) and holds(v, others[p])
        parts.append(f"{'' if ok else 'not '}{symbol} {fmt(others.get(p))}")
    return f"{text} ({', '.join(parts)})" if parts else text


def run_groups(claims) -> list[tuple[str, ...]]:
    """The distinct override sets the claims need, in first-use order (one run each)."""
    groups: list[tuple[str, ...]] = []
    for c in claims:
        if c.metric is None:
            continue
        for g in (tuple(c.set), *_extra_groups(c)):
            if g not in groups:
                groups.append(g)
    return groups


def _extra_groups(c) -> list[tuple[str, ...]]:
    out = [tuple(c.than_set) if c.than_set is not None else tuple(c.set)]
    return out + ([tuple(c.relative_to_set)] if c.relative_to_set is not None else [])


def rows_from_runs(claims, runs: dict[tuple[str, ...], dict | str], file: str = "") -> list[Row]:
    """The table's rows given each group's run: its metrics, or the error message of a run
    that could not be made (an unknown override, a refused value)."""
    return [_row(c, runs, file) for c in claims]


def paper_text(c) -> str:
    """The paper's value as the tables print it, with what "reproduced" allows."""
    text = fmt(c.paper)
    if c.between is not None:
        return f"{text} (in [{fmt(c.between[0])}, {fmt(c.between[1])}])"
    if finite_number(c.paper) and c.abs_tol is not None:
        return f"{text} ± {fmt(c.abs_tol)}"
    if finite_number(c.paper) and c.rel_tol:
        return f"{text} ± {c.rel_tol * 100:g}%"
    return text


def _row(c, runs: dict, file: str) -> Row:
    def row(model, verdict_, why, shown=None):
        return Row(c.seed, c.claim, c.paper, model, verdict_, why, fmt(model) if shown is None else shown, file,
                   paper_text(c))
    if c.metric is None:
        return row(None, "not_expressible", c.why)
    groups = [tuple(c.set), *_extra_groups(c)]
    if any(g not in runs for g in groups):
        return row(None, NOT_RUN, "needs a run with " + "; ".join(", ".join(g) or "the file as is" for g in groups
                                                                   if g not in runs))
    own = runs[groups[0]]
    needed = [own] + [runs[g] for g in groups[1:]]
    broken = next((r for r in needed if not isinstance(r, dict)), None)
    if broken is not None:
        return row(None, ERROR, f"the run could not be made: {broken.removeprefix(file + ': ')}")
    other = needed[1]
    try:
        v = metric_value(own, c.metric)
        others = {p: metric_value(other, p) for p in c.shape_paths().values()}
        ref = metric_value(needed[2], c.metric) if c.relative_to_set is not None else None
    except KeyError as e:
        return row(None, ERROR, f"no such metric: {e.args[0]}")
    if isinstance(v, (dict, list, tuple)):
        return row(None, ERROR, f"{c.metric} is a table, not a value")
    if c.relative_to_set is not None:
        if not (finite_number(v) and finite_number(ref) and ref):
            return row(None, ERROR, f"{c.metric} = {fmt(v)} against {fmt(ref)}: no relative change")
        v = v / ref - 1
    verdict_, why = verdict(c, v, others)
    return row(v, verdict_, why, _shown(c, v, others))


def run_group(task) -> dict | str:
    """One run of a scenario's plain data with overrides: its metrics, or why it failed (a
    pure function of its input, so it can run in a worker process)."""
    from .loading import parse_scenario
    from .scenario_data import apply_override
    from .simulation import simulate

    data, source, overrides = task
    try:
        for assignment in overrides:
            data = apply_override(data, assignment, f"{source}: set")
        return simulate(parse_scenario(data, source)).metrics_dict()
    except ScenarioError as e:
        return str(e)


def evaluate_file(file: str, progress=None) -> list[Row]:
    """Every claim of one scenario file, evaluated (bad claim data raises ScenarioError before
    anything runs). `progress(done, total)` is called as runs finish."""
    from .executor import map_indexed
    from .loading import parse_scenario
    from .scenario_data import read_toml

    data = read_toml(file)
    scenario = parse_scenario(data, file)  # refuses bad claims, like any bad field
    claims = scenario.claim
    groups = run_groups(claims)
    done = [0]

    def tick(_i, _v):
        done[0] += 1
        if progress:
            progress(done[0], len(groups))
    results = map_indexed(run_group, [(data, file, g) for g in groups], on_result=tick)
    return rows_from_runs(claims, dict(zip(groups, results)), file)
