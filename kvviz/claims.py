"""Seed claims as data: each scenario's `[[claim]]` tables (kvviz.scenario.Claim) evaluated on
runs of that scenario, one run per distinct `set` of overrides, into rows of the
paper-vs-model table (`kvviz claims`, the app's Claims tab, the README's tables).

The verdict is computed, never written, by one rule (`verdict`), stated here once:

- Each claim states its `scale`. Its effect on the paper's own scale: `ratio` (an N×) r − 1;
  `share` (a fraction, a cut, a rate; `whole` is what 100% is) the value; `value` (a time, a
  size, a count) the value; `text` none (words, true/false, or a shape alone).
- One tolerance per scale (TOLERANCE): ±0.05 absolute for a share, ±10% relative for a ratio and
  a value. A claim may tighten it (rel_tol / abs_tol), never loosen it. A paper range
  (`between`) is the paper's value: the tolerance is the distance from the range.
- `reproduced`: within the tolerance AND the same sign with an effect between half and twice the
  paper's (FACTOR); `same_shape`: the same sign and an effect within FACTOR, outside the
  tolerance; anything else `not_reproduced`, with the model's effect beside the paper's in
  `why`. A paper effect of zero (or a range across zero) has no scale: the tolerance alone judges.
- A shape of the form "beats X" (greater_than / less_than another metric) counts only by a margin
  of a tenth of the paper's gap (MARGIN): |paper − than_paper| when the claim gives the paper's
  value of X, else the paper's own effect (X is the baseline, e.g. recompute's 1×), else (a text
  claim) a tenth of X's value. at_least / at_most and `sign` need no margin. Every shape stated
  must hold for `reproduced` and `same_shape`.
- A text claim is `reproduced` when its words (or true/false) equal the model's and its shapes
  hold, else `not_reproduced`: with no effect there is no "same shape".
- `not_expressible`: the claim has no metric (its `why` says what the model lacks).

A broken claim, an unknown override or a metric the run does not report, is `error` with the
message: a broken path never passes for an honest verdict.

Each row also carries its `basis` (simulated / arithmetic / input: only simulated rows are the
headline counts; the others are consistency checks, passed when reproduced), its `conditions`
(the file's `claim_conditions` for a simulated row, and the claim's own, each setting shown as
PATH = its value in the row's run), its `command` (the `kvviz run … --metric` line that prints
the model's value as the table shows it) and `fragile`.

Fragility (`kvviz claims --robustness`; without it `fragile` is None, never a guess): the
scenario's `[[robustness]]` tables name sensitive settings and the values a reviewer would try.
Every simulated row that is `reproduced` or `same_shape` is judged again, by the same rule, under
each value that differs from the setting in its own run, applied to every run the row reads (its
`set`, `than_set` and `relative_to_set`), one setting at a time. `fragile` is True where some
alternative changes the verdict (`fragile_because` names each, with the verdict and value it
gives), False where every alternative that could run keeps it, None where none could (an
alternative the scenario refuses for that row's run, such as store.lookahead = job_list with
saturated release, is listed in `robustness` as not applicable, never as a flip). Runs are
shared as the claims' are: one per distinct set of overrides.
"""
from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .claim_tolerance import TOLERANCE, band
from .errors import ScenarioError
from .metric_paths import COMPARISONS, finite_number, metric_value

if TYPE_CHECKING:  # pydantic is imported by the scenario's loading, not here
    from .scenario import Alternative, Claim, ScenarioBase

# A run of a claim group: its metrics, or why it could not be made
RunOutcome = dict[str, Any] | str


class Progress(Protocol):
    """progress(done, total[, what]): runs done of total, of the claims' runs or of `what`."""

    def __call__(self, done: int, total: int, what: str = ..., /) -> object: ...

VERDICTS = ("reproduced", "same_shape", "not_reproduced", "not_expressible")
SCALES = ("ratio", "share", "value", "text")
BASES = ("simulated", "arithmetic", "input")
ERROR = "error"  # a claim the run cannot evaluate: an unknown override or metric
NOT_RUN = "not run"  # a claim whose run was not asked for yet (the app runs `set` groups on demand)

FACTOR = (0.5, 2.0)  # the model's effect between half and twice the paper's
MARGIN = 0.1  # a "beats X" counts by at least a tenth of the paper's gap
JSON_KEYS = ("seed", "claim", "paper", "model", "verdict", "why", "basis", "scale", "conditions", "command",
             "fragile", "fragile_because", "robustness")
JUDGED = ("reproduced", "same_shape")  # the verdicts --robustness re-judges (simulated rows only)


@dataclass(frozen=True)
class Row:
    """One line of the table. `model` is the run's value (None when there is none); `shown`
    is how the text and Markdown tables print it (with the shape's other value, if any)."""
    seed: str
    claim: str
    paper: bool | int | float | str
    model: Any  # a metric's value (JSON-able) or None
    verdict: str
    why: str
    shown: str = ""
    file: str = ""
    paper_shown: str = ""  # the paper's value with the tolerance it is held to
    basis: str = "simulated"
    scale: str = "value"
    conditions: tuple[str, ...] = field(default_factory=tuple)
    command: str = ""
    fragile: bool | None = None  # not judged (no --robustness): null, never a guess
    fragile_because: tuple[str, ...] = field(default_factory=tuple)  # the alternatives that change the verdict
    robustness: tuple[str, ...] = field(default_factory=tuple)  # every alternative tried: its verdict and value

    @property
    def simulated(self) -> bool:
        return self.basis == "simulated"

    def to_dict(self) -> dict[str, Any]:
        """The --json form: exactly JSON_KEYS."""
        return {"seed": self.seed, "claim": self.claim, "paper": self.paper, "model": self.model,
                "verdict": self.verdict, "why": self.why, "basis": self.basis, "scale": self.scale,
                "conditions": list(self.conditions), "command": self.command, "fragile": self.fragile,
                "fragile_because": list(self.fragile_because), "robustness": list(self.robustness)}


def fmt(v: object) -> str:
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


def effect(claim: Claim, x: float) -> float:
    """`x` (in the metric's unit) as an effect on the claim's scale."""
    if claim.scale == "ratio":
        return x - 1.0
    if claim.scale == "share":
        return x / claim.whole
    return x


def paper_range(claim: Claim) -> tuple[float, float]:
    """The paper's value as a range (low, high): its `between`, else its number at both ends."""
    if claim.between is not None:
        return claim.between[0], claim.between[1]
    if isinstance(claim.paper, str):  # the model gives words only to a text claim, which has no range
        raise TypeError(f"a {claim.scale} claim's paper value is a number (got {claim.paper!r:.40})")
    return claim.paper, claim.paper


def paper_effect(claim: Claim) -> tuple[float, float]:
    lo, hi = paper_range(claim)
    return effect(claim, lo), effect(claim, hi)


def factor_holds(model_effect: float, paper: tuple[float, float]) -> bool | None:
    """The same sign, within FACTOR of the paper's effect; None when the paper's effect has no
    sign (zero, or a range across zero): only the tolerance can judge it."""
    lo, hi = paper
    f_lo, f_hi = FACTOR
    if lo > 0:
        return f_lo * lo <= model_effect <= f_hi * hi
    if hi < 0:
        return f_hi * lo <= model_effect <= f_lo * hi
    return None


def margin(claim: Claim, other: object) -> float:
    """What a "beats X" must win by (module docstring)."""
    if claim.than_paper is not None and finite_number(claim.paper):
        return MARGIN * abs(claim.paper - claim.than_paper)
    if claim.scale != "text":
        lo, hi = paper_range(claim)
        base = 1.0 if claim.scale == "ratio" else 0.0
        return MARGIN * min(abs(lo - base), abs(hi - base))
    return MARGIN * abs(other) if finite_number(other) else 0.0


def shape_check(claim: Claim, v: object, others: Mapping[str, Any]) -> tuple[bool | None, str]:
    """(whether every shape stated holds, what failed); None: the claim states no shape."""
    conditions = claim.shape_paths()
    if not conditions and claim.sign is None:
        return None, ""
    if not finite_number(v):
        return False, "no value to compare"
    if claim.sign == "positive" and not v > 0 or claim.sign == "negative" and not v < 0:
        return False, f"not {'> 0' if claim.sign == 'positive' else '< 0'}"
    for cond, path in conditions.items():
        x = others.get(path)
        if not finite_number(x):
            return False, f"{path} has no value"
        m = margin(claim, x) if cond in ("greater_than", "less_than") else 0.0
        symbol, holds = COMPARISONS[cond]
        target = x + m if cond == "greater_than" else x - m if cond == "less_than" else x
        if not holds(v, target):
            by = f" by the margin {fmt(m)}" if m else ""
            return False, f"not {symbol} {fmt(x)}{by}"
    return True, ""


def _text_matches(claim: Claim, v: object) -> bool | None:
    paper = claim.paper
    if isinstance(paper, bool) or isinstance(v, bool):
        return v is paper if isinstance(paper, bool) and isinstance(v, bool) else None
    if isinstance(paper, str):
        return v == paper if isinstance(v, str) else None
    if finite_number(paper) and finite_number(v):
        return v == paper
    return None


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def verdict(claim: Claim, v: object, others: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """(verdict, why) of a claim whose metric gave `v` (the shape's metrics in `others`): the
    one rule of the module docstring."""
    shape, shape_why = shape_check(claim, v, others or {})
    if claim.scale == "text":
        matched = _text_matches(claim, v)
        if matched is None and shape is None:
            return ERROR, (f"the paper's {type(claim.paper).__name__} cannot be compared with the model's "
                           f"{type(v).__name__}, and no shape condition is given")
        if matched is not False and shape is not False:
            return "reproduced", ""
        return "not_reproduced", _join("not the paper's words" if matched is False else "", shape_why,
                                       _reason(claim))
    if not finite_number(v):
        return "not_reproduced", _join("no value", _reason(claim))
    lo, hi = paper_range(claim)
    within = max(lo - v, v - hi, 0.0) <= band(claim) + 1e-12 * max(1.0, abs(v))
    p_effect, m_effect = paper_effect(claim), effect(claim, v)
    factor = factor_holds(m_effect, p_effect)
    said = _effect_text(claim, m_effect, p_effect, factor)
    shape_ok = shape is not False
    if factor is None:  # no sign to keep: the tolerance alone
        if within and shape_ok:
            return "reproduced", ""
        return "not_reproduced", _join("outside the tolerance" if not within else "", shape_why, _reason(claim))
    if factor and shape_ok:
        return ("reproduced", "") if within else ("same_shape", _join(said, _reason(claim)))
    return "not_reproduced", _join(said if not factor else "", shape_why, _reason(claim))


def _effect_text(claim: Claim, m: float, p: tuple[float, float], factor: bool | None) -> str:
    paper = fmt(p[0]) if p[0] == p[1] else f"{fmt(p[0])} to {fmt(p[1])}"
    text = f"effect {fmt(m)} against the paper's {paper}"
    if factor is None:
        return text
    ref = p[0] if p[0] == p[1] else (p[0] if abs(m - p[0]) < abs(m - p[1]) else p[1])
    ratio = m / ref if ref else 0.0
    return f"{text} ({fmt(ratio)}×{'' if factor else ', outside ½–2×'})"


def _reason(claim: Claim) -> str:
    return claim.why or ""


def _shown(claim: Claim, v: object, others: Mapping[str, Any]) -> str:
    text = fmt(v)
    parts: list[str] = []
    for c, p in claim.shape_paths().items():
        symbol, holds = COMPARISONS[c]
        x = others.get(p)
        m = margin(claim, x) if c in ("greater_than", "less_than") else 0.0
        target = x + m if c == "greater_than" and finite_number(x) else x - m if c == "less_than" and \
            finite_number(x) else x
        ok = finite_number(v) and finite_number(x) and holds(v, target)
        parts.append(f"{'' if ok else 'not '}{symbol} {fmt(x)}" + (f" + {fmt(m)}" if c == "greater_than" and m else
                                                                 f" − {fmt(m)}" if c == "less_than" and m else ""))
    return f"{text} ({', '.join(parts)})" if parts else text


def run_groups(claims: Iterable[Claim]) -> list[tuple[str, ...]]:
    """The distinct override sets the claims need, in first-use order (one run each)."""
    groups: list[tuple[str, ...]] = []
    for c in claims:
        if c.metric is None:
            continue
        for g in (tuple(c.set), *_extra_groups(c)):
            if g not in groups:
                groups.append(g)
    return groups


def _extra_groups(c: Claim) -> list[tuple[str, ...]]:
    out = [tuple(c.than_set) if c.than_set is not None else tuple(c.set)]
    return out + ([tuple(c.relative_to_set)] if c.relative_to_set is not None else [])


def rows_from_runs(claims: Iterable[Claim], runs: Mapping[tuple[str, ...], RunOutcome], file: str = "",
                   data: dict[str, Any] | None = None, file_conditions: Iterable[str] = ()) -> list[Row]:
    """The table's rows given each group's run: its metrics, or the error message of a run
    that could not be made (an unknown override, a refused value). `data`: the scenario's plain
    data, to show each condition's setting as it was in the row's run; `file_conditions`: the
    file's `claim_conditions` (a simulated row's)."""
    settings = Settings(data)
    return [_row(c, runs, file, conditions(c, file_conditions, settings)) for c in claims]


def paper_text(c: Claim) -> str:
    """The paper's value as the tables print it, with what "reproduced" allows."""
    text = fmt(c.paper)
    if c.scale == "text":
        return text
    tol = band(c)
    kind, amount = TOLERANCE[c.scale]
    exact = c.abs_tol == 0 or (c.rel_tol is not None and c.rel_tol < 1e-6)
    if exact:
        return text if c.between is None else f"{text} (in [{fmt(c.between[0])}, {fmt(c.between[1])}])"
    if c.abs_tol is None and (c.rel_tol is not None or kind == "rel"):
        said = f"{(c.rel_tol if c.rel_tol is not None else amount) * 100:g}%"
    else:
        said = fmt(tol)
    if c.between is not None:
        return f"{text} (in [{fmt(c.between[0])}, {fmt(c.between[1])}]" + (f" ± {said})" if tol else ")")
    return f"{text} ± {said}"


class Settings:
    """A setting's value in a run of the scenario with some overrides: from the plain data as
    overridden, else the parsed scenario's default (each run's parse kept)."""

    def __init__(self, data: dict[str, Any] | None) -> None:
        self.data = data
        # by overrides: (the data as overridden, its scenario, or None where it is refused)
        self.parsed: dict[tuple[str, ...], tuple[dict[str, Any], ScenarioBase | None]] = {}

    def value(self, overrides: tuple[str, ...], path: str) -> object:
        if self.data is None:
            return None
        from .scenario_data import apply_override
        if overrides not in self.parsed:
            data = self.data
            try:
                for o in overrides:
                    data = apply_override(data, o, "set")
                from .loading import parse_scenario
                self.parsed[overrides] = (data, parse_scenario(data, "<claims>"))
            except ScenarioError:
                self.parsed[overrides] = (data, None)
        data, sc = self.parsed[overrides]
        try:
            return metric_value(data, path)
        except (KeyError, TypeError):
            pass
        node: Any = sc
        for part in path.split("."):
            node = getattr(node, part, None)
            if node is None:
                return None
        return node


def _is_path(text: str) -> bool:
    parts = text.split(".")
    return " " not in text and len(parts) >= 2 and all(p.replace("_", "").isalnum() for p in parts)


def conditions(c: Claim, file_conditions: Iterable[str], settings: Settings) -> tuple[str, ...]:
    """The row's conditions: the file's for a simulated row, then the claim's own; a setting
    path is shown with its value in the row's run."""
    out: list[str] = []
    for item in (*(file_conditions if c.basis == "simulated" else ()), *c.conditions):
        if _is_path(item):
            v = settings.value(tuple(c.set), item)
            item = f"{item} = {_setting_text(v)}" if v is not None else f"{item} (not set)"
        if item not in out:
            out.append(item)
    return tuple(out)


def _setting_text(v: object) -> str:
    import json
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_setting_text(x) for x in v) + "]"
    return fmt(v) if isinstance(v, float) else str(v)


def command(c: Claim, file: str) -> str:
    """The one line that prints the row's model value as the table shows it (kvviz run --metric)."""
    if c.metric is None:
        return ""
    from .bundled import scenario_arg
    parts = ["kvviz", "run", scenario_arg(file)]
    for s in c.set:
        parts += ["--set", s]
    parts += ["--metric", c.metric]
    for s in c.relative_to_set or ():
        parts += ["--relative-to-set", s]
    return " ".join(shlex.quote(p) for p in parts)


def _row(c: Claim, runs: Mapping[tuple[str, ...], RunOutcome], file: str, conds: tuple[str, ...] = ()) -> Row:
    def row(model: object, verdict_: str, why: str, shown: str | None = None) -> Row:
        return Row(c.seed, c.claim, c.paper, model, verdict_, why, fmt(model) if shown is None else shown, file,
                   paper_text(c), c.basis, c.scale, conds, command(c, file))
    if c.metric is None:
        return row(None, "not_expressible", c.why)
    groups = [tuple(c.set), *_extra_groups(c)]
    if any(g not in runs for g in groups):
        return row(None, NOT_RUN, "needs a run with " + "; ".join(", ".join(g) or "the file as is" for g in groups
                                                                   if g not in runs))
    needed = [runs[g] for g in groups]
    broken = next((r for r in needed if isinstance(r, str)), None)
    if broken is not None:
        return row(None, ERROR, f"the run could not be made: {broken.removeprefix(file + ': ')}")
    metrics = [r for r in needed if isinstance(r, dict)]  # all of them: none is broken
    own, other = metrics[0], metrics[1]
    try:
        v = metric_value(own, c.metric)
        others = {p: metric_value(other, p) for p in c.shape_paths().values()}
        ref = metric_value(metrics[2], c.metric) if c.relative_to_set is not None else None
    except KeyError as e:
        return row(None, ERROR, f"no such metric: {e.args[0]}")
    if isinstance(v, (dict, list, tuple)):
        return row(None, ERROR, f"{c.metric} is a table, not a value")
    if c.relative_to_set is not None:
        if not (finite_number(v) and finite_number(ref) and ref):
            return row(None, ERROR, f"{c.metric} = {fmt(v)} against {fmt(ref)}: no relative change")
        v = relative_change(v, ref)
    verdict_, why = verdict(c, v, others)
    return row(v, verdict_, why, _shown(c, v, others))


def relative_change(v: float, ref: float) -> float:
    """A claim's `relative_to_set` value (and `kvviz run --relative-to-set`'s): v / ref − 1."""
    return v / ref - 1


def run_group(task: tuple[dict[str, Any], str, Sequence[str]]) -> RunOutcome:
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


def evaluate_file(file: str, progress: Progress | None = None, robustness: bool = False) -> list[Row]:
    """Every claim of one scenario file, evaluated (bad claim data raises ScenarioError before
    anything runs). `progress(done, total)` is called as runs finish. `robustness`: then judge
    each reproduced / same_shape simulated row under the file's `[[robustness]]` alternatives
    (module docstring); the rows' `fragile` stays None without it."""
    from .executor import map_indexed
    from .loading import parse_scenario
    from .scenario_data import read_toml

    data = read_toml(file)
    scenario = parse_scenario(data, file)  # refuses bad claims, like any bad field
    claims = scenario.claim
    if robustness:
        check_alternatives(data, file, scenario.robustness)  # a bad path is refused before any run
    groups = run_groups(claims)
    done = [0]

    def tick(_i: int, _v: RunOutcome) -> None:
        done[0] += 1
        if progress:
            progress(done[0], len(groups))
    results = map_indexed(run_group, [(data, file, g) for g in groups], on_result=tick)
    runs = dict(zip(groups, results))
    rows = rows_from_runs(claims, runs, file, data, scenario.claim_conditions)
    if not robustness:
        return rows
    settings = Settings(data)
    trials = [alternatives(c, scenario.robustness, settings) if judged(r) else [] for c, r in zip(claims, rows)]
    more = [g for g in run_groups([t for row in trials for _, t in row]) if g not in runs]
    done[0] = 0

    def tick_more(_i: int, _v: RunOutcome) -> None:
        done[0] += 1
        if progress:
            progress(done[0], len(more), "robustness")
    results = map_indexed(run_group, [(data, file, g) for g in more], on_result=tick_more)
    runs.update(zip(more, results))
    return [rejudge(r, [(label, _row(t, runs, file)) for label, t in row]) if judged(r) else r
            for r, row in zip(rows, trials)]


# --- robustness (module docstring) -------------------------------------------------------------

def judged(row: Row) -> bool:
    """Whether --robustness judges this row: a simulated row that is reproduced or same_shape."""
    return row.simulated and row.verdict in JUDGED


def value_text(v: object) -> str:
    """A value as --set takes it: a bare word stays bare, other strings are quoted."""
    import json
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        from .scenario_data import parse_value
        return v if parse_value(v) == v and v.strip() == v and v else json.dumps(v, ensure_ascii=False)
    return repr(v)


def with_setting(group: Iterable[str], path: str, value: object) -> tuple[str, ...]:
    """The overrides `group` with `path` set to `value` (an override of the same path replaced)."""
    return tuple(s for s in group if s.split("=", 1)[0].strip() != path) + (f"{path}={value_text(value)}",)


def _same(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b


def alternatives(c: Claim, alts: Iterable[Alternative], settings: Settings) -> list[tuple[str, Claim]]:
    """(label, the claim under one alternative) for each alternative value that differs from the
    setting in the claim's own run; the alternative goes to every run the claim reads."""
    out: list[tuple[str, Claim]] = []
    for a in alts:
        own = settings.value(tuple(c.set), a.setting)
        for v in a.values:
            if own is not None and _same(own, v):
                continue
            update: dict[str, Any] = {"set": list(with_setting(c.set, a.setting, v))}
            for name in ("than_set", "relative_to_set"):
                g = getattr(c, name)
                if g is not None:
                    update[name] = list(with_setting(g, a.setting, v))
            label = f"{a.setting} = {_setting_text(v)}"
            out.append((label, c.model_copy(update=update)))
    return out


def rejudge(row: Row, trials: list[tuple[str, Row]]) -> Row:
    """The row with its fragility: the verdict under each alternative against its own."""
    from dataclasses import replace
    tried: list[str] = []
    flips: list[str] = []
    ran = 0
    for label, t in trials:
        if t.verdict in (ERROR, NOT_RUN):
            tried.append(f"{label}: not applicable ({t.why})")
            continue
        ran += 1
        said = f"{label}: {t.verdict} ({t.shown or fmt(t.model)})"
        tried.append(said)
        if t.verdict != row.verdict:
            flips.append(said)
    return replace(row, fragile=bool(flips) if ran else None, fragile_because=tuple(flips), robustness=tuple(tried))


def check_alternatives(data: dict[str, Any], file: str, alts: Iterable[Alternative]) -> None:
    """Refuse an alternative the file itself refuses (an unknown path, a value out of range),
    before any run: a broken alternative never passes for a robust row."""
    from .loading import parse_scenario
    from .scenario_data import apply_override
    for i, a in enumerate(alts):
        for v in a.values:
            try:
                parse_scenario(apply_override(data, f"{a.setting}={value_text(v)}", file), file)
            except ScenarioError as e:
                raise ScenarioError(f"{a.setting} = {_setting_text(v)}: {e}", file, f"robustness[{i}]") from None
