"""Scenario models' common base: sections, `param()` fields, `[[expect]]` checks, and validation
of plain data against one model with messages that name the field.

Each mechanism defines one frozen pydantic model with `kind` as a Literal; kvviz.loading picks
the model by `kind` (kvviz.scenario_data reads and edits the plain data before that).
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Literal, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic.config import JsonDict
from pydantic_core import ErrorDetails

from .errors import MAX_MESSAGES, ScenarioError, ValidatorBug
from .format import format_value
from .limits import unrepresentable
from .metric_paths import COMPARISONS, finite_number


class Section(BaseModel):
    """A nested [table] of a scenario: frozen, and unknown keys are errors, not ignored.
    Floats must be finite (a field that takes inf or nan says so with allow_inf_nan=True),
    and a number with a unit must fit the simulator's integer ns and bytes (kvviz.limits)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="after")
    @classmethod
    def _representable(cls, value: Any, info: ValidationInfo) -> Any:
        extra = cls.model_fields[info.field_name].json_schema_extra if info.field_name is not None else None
        unit = extra.get("unit") if isinstance(extra, dict) else None
        if not isinstance(unit, str):  # param() sets a unit as a string, or none
            return value
        if isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                problem = unrepresentable(v, unit)
                if problem:
                    raise FieldError(f"[{i}]", f"{problem} (got {v!r})")
        else:
            problem = unrepresentable(value, unit)
            if problem:
                raise ValueError(problem)
        return value


def param(default: Any = ..., *, unit: str | None = None, description: str, file: bool = False,
          **constraints: Any) -> Any:
    """A scenario field whose range, unit and description drive validation, the GUI panel
    and `kvviz schema` alike. `file`: a path, relative to the scenario's own file."""
    extra: JsonDict | None = {k: v for k, v in (("unit", unit), ("file", file)) if v} or None
    return Field(default, description=description, json_schema_extra=extra, **constraints)


def file_fields(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The key paths of a model's `file` fields, nested sections included: the paths that
    must be rewritten when the scenario is saved in another folder."""
    out: list[tuple[str, ...]] = []
    for name, f in model.model_fields.items():
        extra = f.json_schema_extra if isinstance(f.json_schema_extra, dict) else {}
        if extra.get("file"):
            out.append(prefix + (name,))
        elif isinstance(f.annotation, type) and issubclass(f.annotation, BaseModel):
            out += file_fields(f.annotation, prefix + (name,))
    return out


def rebase(path: str, old_source: str | Path, new_source: str | Path) -> str:
    """A relative `path` written in `old_source`, as written in `new_source` so it names the
    same file (absolute and empty paths unchanged)."""
    p = Path(path).expanduser()
    if not path or p.is_absolute():
        return path
    target = (Path(old_source).resolve().parent / p).resolve()
    try:
        return os.path.relpath(target, Path(new_source).resolve().parent)
    except ValueError:  # another drive (Windows): no relative path
        return str(target)


class FieldError(ValueError):
    """Raised by validators to blame a sub-field (e.g. `queries[1]`) rather than its section."""

    def __init__(self, path: str, message: str) -> None:
        self.path, self.message = path, message
        super().__init__(message)


class Expectation(Section):
    """An `[[expect]]` table: a check on one metric after the run (kvviz.checks), never an input."""

    metric: str = param(description="Metric path, e.g. speedup or policies.lru.hit_rate", min_length=1)
    equals: bool | int | float | str | None = param(None, description="The value (numbers within rel_tol)")
    min: float | None = param(None, description="Lowest value that passes")
    max: float | None = param(None, description="Highest value that passes")
    greater_than: str | None = param(None, description="Another metric path this one must exceed, e.g. "
                                                       "policies.lru.hit_rate")
    at_least: str | None = param(None, description="Another metric path this one must not fall below")
    rel_tol: float = param(1e-9, ge=0, le=1, description="Relative tolerance of `equals` for numbers")
    why: str = param("", description="Where the expected value comes from (shown with the outcome)")

    @model_validator(mode="before")
    @classmethod
    def _plain_equals(cls, data: Any) -> Any:
        # one clear message rather than one per member of the union
        if isinstance(data, dict) and not isinstance(data.get("equals"), (bool, int, float, str, type(None))):
            raise FieldError("equals", f"must be a number, true/false or a string (got {data['equals']!r})")
        return data

    @model_validator(mode="after")
    def _one_bound(self) -> Self:
        for name in ("min", "max"):
            if getattr(self, name) is not None and not math.isfinite(getattr(self, name)):
                raise FieldError(name, "must be a finite number")
        relative = self.greater_than is not None or self.at_least is not None
        if self.equals is None and self.min is None and self.max is None and not relative:
            raise FieldError("equals", "give equals, min, max, greater_than or at_least")
        if self.equals is not None and (self.min is not None or self.max is not None or relative):
            raise FieldError("equals", "give either equals or bounds, not both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise FieldError("min", f"min {self.min} is above max {self.max}")
        return self

    def _numeric_equals(self) -> bool:
        return isinstance(self.equals, (int, float)) and not isinstance(self.equals, bool)

    def wanted(self) -> str:
        if isinstance(self.equals, str):
            return f'= "{self.equals}"'  # quoted: a string, not the yes/no a bool prints as
        if self.equals is not None:
            tol = f" (±{self.rel_tol:g} relative)" if self._numeric_equals() and self.rel_tol > 1e-9 else ""
            return f"= {format_value(self.equals)}{tol}"
        lo = f"≥ {format_value(self.min)}" if self.min is not None else ""
        hi = f"≤ {format_value(self.max)}" if self.max is not None else ""
        gt = f"> {self.greater_than}" if self.greater_than else ""
        ge = f"≥ {self.at_least}" if self.at_least else ""
        return " and ".join(x for x in (lo, hi, gt, ge) if x)

    def holds(self, v: Any, others: dict[str, Any] | None = None) -> bool:
        """`others`: the values of the metrics named by greater_than / at_least."""
        number = isinstance(v, (int, float)) and not isinstance(v, bool)
        if self.equals is not None:
            if isinstance(self.equals, (bool, str)) or isinstance(v, (bool, str)) or v is None:
                return type(v) is type(self.equals) and v == self.equals  # true is not 1, "8" is not 8
            return number and math.isclose(v, self.equals, rel_tol=self.rel_tol, abs_tol=1e-12)
        if not number or not math.isfinite(v):
            return False
        others = others or {}
        for name, path in (("greater_than", self.greater_than), ("at_least", self.at_least)):
            if path and not (finite_number(others.get(path)) and COMPARISONS[name][1](v, others[path])):
                return False
        return (self.min is None or v >= self.min) and (self.max is None or v <= self.max)



SEEDS = ("000", "001", "003")  # the seed documents; other published sources go by a short name


class Claim(Section):
    """A `[[claim]]` table: what a seed paper states, beside what the run gives (kvviz.claims).
    Never a check: `kvviz check` ignores it; `kvviz claims` computes its verdict."""

    seed: str = param(description="The source the claim comes from: 000 (the RoPE prefetch walkthrough), 001 "
                                  "(the Engram note), 003 (CachedAttention), or a short name of another published "
                                  "source (e.g. Mooncake)", min_length=1, max_length=40)
    claim: str = param(description="The claim, one line", min_length=1)
    paper: bool | int | float | str = param(description="The paper's value: a number in the metric's unit (compared "
                                                        "within the scale's tolerance), or text shown as written")
    scale: Literal["ratio", "share", "value", "text"] = param(
        description="How the claim's number is read (kvviz.claims.verdict): `ratio` an N× (effect r − 1), `share` "
                    "a fraction, a cut or a rate (effect: the value), `value` a time, size or count (effect: the "
                    "value), `text` words, true/false or a shape alone (no effect)")
    basis: Literal["simulated", "arithmetic", "input"] = param(
        description="What decides the model's value: `simulated` an event of the run, `arithmetic` closed form on "
                    "inputs (sizes, bandwidths, a calibration point, a definition, true by construction), `input` "
                    "the value was typed into the scenario or generator. Only simulated rows are headline counts")
    conditions: list[str] = param([], description="What this row's value rests on beyond the file's "
                                                  "`claim_conditions`: a setting path (shown as PATH = its value in "
                                                  "the row's run) or a few words")
    whole: float = param(1.0, gt=0, description="What 100% is in the metric's unit, for a share (100 for a metric "
                                                "in percent): the share tolerance is ±0.05 of it")
    than_paper: float | None = param(None, description="The paper's value of the metric a strict shape (greater_than "
                                                       "/ less_than) beats: the margin is a tenth of the paper's gap")
    metric: str | None = param(None, description="The metric path that answers it; absent: the model cannot "
                                                 "express the claim (then `why` says why)", min_length=1)
    set: list[str] = param([], description='Overrides of the run it needs, as --set takes them, e.g. '
                                           '["model.preset=llama-13b"]; claims with the same set share one run')
    rel_tol: float | None = param(None, ge=0, le=10, description="A tighter relative tolerance than the scale's "
                                                                  "(kvviz.claim_tolerance.TOLERANCE); never a looser one")
    abs_tol: float | None = param(None, ge=0, description="A tighter absolute tolerance than the scale's")
    between: list[float] | None = param(None, description="The paper's value is a range [low, high] (such as "
                                                          "9–16.4%): the tolerance is the distance from it")
    greater_than: str | None = param(None, description="Shape: the model exceeds this metric", min_length=1)
    at_least: str | None = param(None, description="Shape: the model is not below this metric", min_length=1)
    less_than: str | None = param(None, description="Shape: the model is below this metric", min_length=1)
    at_most: str | None = param(None, description="Shape: the model is not above this metric", min_length=1)
    sign: Literal["positive", "negative"] | None = param(None, description="Shape: the model's sign")
    than_set: list[str] | None = param(None, description="The overrides of the run the shape metrics are read "
                                                         "from (default: the claim's own `set`; [] = the file as is)")
    relative_to_set: list[str] | None = param(None, description="The model's value is the relative change of the "
                                                                "metric against the run with these overrides: "
                                                                "value / reference − 1 (e.g. −0.35 for a 35% cut)")
    why: str = param("", description="For a claim not reproduced or not expressible: the reason, one line")

    @model_validator(mode="before")
    @classmethod
    def _plain_paper(cls, data: Any) -> Any:
        if isinstance(data, dict) and "paper" in data and not isinstance(data["paper"], (bool, int, float, str)):
            raise FieldError("paper", f"must be a number, true/false or a string (got {data['paper']!r:.60})")
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.seed.isdigit() and self.seed not in SEEDS:
            raise FieldError("seed", f"not a seed: {', '.join(SEEDS)}, or the short name of another source "
                                     f"(got {self.seed!r:.20})")
        if isinstance(self.paper, float) and not math.isfinite(self.paper):
            raise FieldError("paper", "must be a finite number")
        for name in ("set", "than_set", "relative_to_set"):
            for i, s in enumerate(getattr(self, name) or ()):
                if "=" not in s or not s.split("=", 1)[0].strip():
                    raise FieldError(f"{name}[{i}]", f"expected PATH=VALUE (got {s!r:.60})")
        if self.rel_tol is not None and self.abs_tol is not None:
            raise FieldError("abs_tol", "give rel_tol or abs_tol, not both")
        if self.between is not None:
            if len(self.between) != 2 or self.between[0] > self.between[1]:
                raise FieldError("between", f"must be [low, high] with low <= high (got {self.between})")
            if isinstance(self.paper, bool):
                raise FieldError("between", "a true/false paper value has no range")
        if self.metric is None:
            if not self.why.strip():
                raise FieldError("why", "a claim without a metric needs the reason the model cannot express it")
            if self.set or self.shape_paths() or self.sign or self.than_set is not None or self.relative_to_set:
                raise FieldError("metric", "a claim without a metric has nothing to run or compare")
        elif self.than_set is not None and not self.shape_paths():
            raise FieldError("than_set", "give greater_than, at_least, less_than or at_most to read from it")
        numeric = self.between is not None or finite_number(self.paper)
        if self.scale == "text":
            if self.rel_tol is not None or self.abs_tol is not None or self.between is not None:
                raise FieldError("scale", "a text claim has no tolerance or range: it matches exactly or by its shape")
        elif not numeric:
            raise FieldError("scale", f"a {self.scale} needs a number or a range as `paper` (words: scale = \"text\")")
        else:
            from .claim_tolerance import tolerance_problem
            problem = tolerance_problem(self)
            if problem:
                raise FieldError("rel_tol" if self.rel_tol is not None else "abs_tol", problem)
        if self.than_paper is not None and not self.strict_shape():
            raise FieldError("than_paper", "only a strict shape (greater_than or less_than) has a gap to the paper's")
        return self

    def strict_shape(self) -> dict[str, str]:
        """The "beats X" conditions (greater_than, less_than): they need a margin to count."""
        return {k: v for k, v in self.shape_paths().items() if k in ("greater_than", "less_than")}

    def shape_paths(self) -> dict[str, str]:
        """The shape conditions that name another metric: {condition: metric path}."""
        return {k: getattr(self, k) for k in ("greater_than", "at_least", "less_than", "at_most") if getattr(self, k)}


class Alternative(Section):
    """A `[[robustness]]` table: a sensitive setting and the values a reviewer would try instead
    (`kvviz claims --robustness` re-judges each reproduced / same_shape simulated row under every
    value that differs from the row's own, and marks it fragile where the verdict changes)."""

    setting: str = param(description="The setting's path, as --set takes it (e.g. store.lookahead)", min_length=1)
    values: list[bool | int | float | str] = param(description="The values to try, the file's own among them or "
                                                               "not (a row is re-run under each value that differs "
                                                               "from the setting in its own run)", min_length=1)
    why: str = param("", description="What the alternatives stand for, a few words (e.g. host link aggregate "
                                     "104 / 26 GB/s)")

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        parts = self.setting.split(".")
        if "=" in self.setting or " " in self.setting.strip() or not all(p.strip() for p in parts):
            raise FieldError("setting", f"expected a setting path such as store.lookahead (got {self.setting!r:.60})")
        seen: list[bool | int | float | str] = []
        for i, v in enumerate(self.values):
            if isinstance(v, float) and not math.isfinite(v):
                raise FieldError(f"values[{i}]", "must be a finite number")
            if any(v == w and type(v) is type(w) for w in seen):
                raise FieldError(f"values[{i}]", f"{v!r:.40} is given twice")
            seen.append(v)
        return self


class ScenarioBase(Section):
    kind: str
    name: str = Field("untitled", description="Title shown in the app and in figures")
    description: str = Field("", description="Free text: where the numbers come from")
    expect: list[Expectation] = Field([], description="Checks on the results, run after every simulation "
                                                      "(kvviz check); they never change the run")
    claim: list[Claim] = Field([], description="What a source paper states, with the metric that answers it "
                                               "(kvviz claims); never a check, never an input")
    claim_conditions: list[str] = Field([], description="What every simulated claim of this file rests on: setting "
                                                        "paths that are assumptions or depart from the paper (shown "
                                                        "as PATH = the value in the row's run) or a few words")
    robustness: list[Alternative] = Field([], description="Sensitive settings with the values a reviewer would "
                                                          "try (kvviz claims --robustness marks the rows whose "
                                                          "verdict an alternative changes as fragile)")


def loc_to_path(loc: tuple[int | str, ...]) -> str:
    """('reads', 0, 'positions') -> 'reads[0].positions'"""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def format_validation_error(err: ValidationError, file: str) -> ScenarioError:
    return _first_problem(err.errors(include_url=False), err.error_count(), file)


def _first_problem(errors: list[ErrorDetails], count: int, file: str) -> ScenarioError:
    """The first of `count` problems (`errors` lists some or all) as a ScenarioError that holds
    the next ones and counts the rest."""
    problems: list[ScenarioError] = []
    for e in errors[:MAX_MESSAGES]:
        path = loc_to_path(e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        cause = (e.get("ctx") or {}).get("error")
        if isinstance(cause, FieldError):
            sep = "" if cause.path.startswith("[") else "."
            path = f"{path}{sep}{cause.path}" if path else cause.path
            msg = cause.message
        elif e["type"] == "extra_forbidden":
            msg = "unknown field"
        elif e["type"] == "missing":
            msg = "required field is missing"
        elif "input" in e and not isinstance(e["input"], (dict, list)):
            msg = f"{msg} (got {_excerpt(e['input'])})"
        problems.append(ScenarioError(msg, file, path or "<top>"))
    first = problems[0]
    first.others = problems[1:]
    first.unlisted = max(count - len(problems), 0)
    return first


def _excerpt(value: object, limit: int = 60) -> str:
    text = repr(value) if not isinstance(value, str) or len(value) <= limit else repr(value[:limit]) + "…"
    return text if len(text) <= limit + 10 else text[:limit] + "…"


PRUNING_MAY_CAUSE = {"value_error", "assertion_error", "too_short", "missing"}


def _pruned(data: Any, keep: int) -> Any:
    """`data` with every array cut to its first `keep` items: validating it finds the first
    problems of a huge array without pydantic listing (slowly) every one of a million."""
    if isinstance(data, dict):
        return {k: _pruned(v, keep) for k, v in data.items()}
    if isinstance(data, list):
        return [_pruned(v, keep) for v in data[:keep]]
    return data


def relative_to_source(path: str, context: dict[str, Any] | None) -> Path:
    """A path written in a scenario is relative to that scenario's file when it was loaded
    from one (validation context {"source": file}); otherwise to the current directory."""
    p = Path(path).expanduser()
    if p.is_absolute():
        return p
    source = (context or {}).get("source")
    base = Path(source).parent if source and Path(source).is_file() else Path.cwd()
    return base / p


def existing_file(path: str, context: dict[str, Any] | None, what: str) -> Path:
    """A file a scenario names (relative to the scenario's file, as relative_to_source), checked
    where the field is validated, so the panel marks that field: missing, or there but no regular
    file (a folder, /dev/null, a FIFO), each said as what it is."""
    p = relative_to_source(path, context)
    if not p.exists():
        raise ValueError(f"{what} not found: {p}")
    if not p.is_file():
        raise ValueError(f"{what} is not a regular file: {p}")
    return p


def scenario_to_dict(scenario: BaseModel) -> dict[str, Any]:
    """The plain-data form of a scenario (round-trips through parse_scenario)."""
    return scenario.model_dump(mode="json")


Model = TypeVar("Model", bound=BaseModel)


def validate(model: type[Model], data: dict[str, Any], source: str) -> Model:
    """`data` validated into `model`; a problem raises ScenarioError at its field path (the
    caller bounds the data's nesting: read_toml and parse_value do)."""
    try:
        # the source lets a model resolve paths relative to its own file (ladder base scenarios)
        # strict: a file is typed, so "8" is no integer and true no slot count (a TOML
        # integer may still fill a float field)
        return model.model_validate(data, strict=True, context={"source": source})
    except ValidationError as e:
        if e.error_count() > MAX_MESSAGES:  # the first few messages, from the data's first items
            try:
                model.model_validate(_pruned(data, MAX_MESSAGES + 1), strict=True, context={"source": source})
            except ValidationError as few:
                # a cut array may break a whole-model rule the file keeps (its length): only
                # problems of a value in itself (its type, its range) are the file's own
                own = [x for x in few.errors(include_url=False) if x["type"] not in PRUNING_MAY_CAUSE]
                if own:
                    short = _first_problem(own, len(own), source)
                    short.unlisted = e.error_count() - 1 - len(short.others)
                    raise short from None
            except (TypeError, KeyError, AttributeError, IndexError):
                pass
            raise ScenarioError(f"{e.error_count():,} values are invalid, all in arrays past their first "
                                f"{MAX_MESSAGES + 1} items (a wrong type or range)", source) from None
        raise format_validation_error(e, source) from None
    except (TypeError, KeyError, AttributeError, IndexError) as e:  # a validator assumed a type
        raise ValidatorBug(f"this input is not of the shape the {data.get('kind')} model expects "
                           f"({type(e).__name__}: {e}; a bug in kvviz's checks, please report it)", source) from e
