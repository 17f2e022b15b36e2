"""The mechanisms kvviz simulates: each is one package exporting one record, `MECHANISM`.

Adding a mechanism means adding its package and one line to `PACKAGES`. Nothing outside a
mechanism's package names its kind: the CLI, sweeps, the size guard and the app ask the record.
The packages are imported on first use (pydantic and each model take a moment to load), so
commands that need no scenario, such as `kvviz replay`, start quickly.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING, Any, Callable, Generic, TypeVar

from ..errors import ScenarioError

if TYPE_CHECKING:  # the records' types; each module is imported where a run needs it
    from ..result import Result
    from ..runs import Plan
    from ..scenario import ScenarioBase
    from ..size_guard import Estimate

S = TypeVar("S", bound="ScenarioBase")  # the mechanism's scenario model

# One line per mechanism: its package under kvviz.mechanisms.
PACKAGES = (
    "rope_window",
    "engram",
    "ladder",
    "attention_store",
    "prefix_cache",
    "cluster",
)


@dataclass(frozen=True)
class Mechanism(Generic[S]):
    kind: str  # the scenario's `kind`
    model: type[S]  # the scenario model (a ScenarioBase with `kind` as a Literal)
    simulate: Callable[[S], Result]  # scenario -> Result
    # scenario -> kvviz.size_guard.Estimate (a trace file's size and records told cheaply by
    # kvviz.requests.extent; None only where they cannot be, a zstd file that does not state its
    # size); every run is checked against the memory limit before it starts
    estimate: Callable[[S], Estimate | None]
    # (lane name, field path, what it does): picking a span on that lane (a double-click in the
    # app) sets the field to the span's ref, e.g. the AttentionStore turn whose layers are drawn
    pick: tuple[str, str, str] | None = None
    # result -> (t0, t1) in ns where a view of a new scenario opens (None, or no function: the whole run)
    initial_range: Callable[[Result], tuple[int, int] | None] | None = None
    # scenario data (a dict, as in the file) -> {field path: why it is ignored}: fields another
    # field overrides, which the app greys out so their values are not read as in effect
    inactive: Callable[[dict[str, Any]], dict[str, str]] | None = None
    # what a run of this kind carries beyond the timeline, for the views that read it:
    # "rope_bound" (an attention profile to hold against RoPE's bound), "ladder" (hit-rate
    # rungs), "policies" (placement policies compared side by side), "tiers" (eviction policies'
    # hits split by the tier that served them, over tier capacities: metrics.policies.<p>.tiers)
    analyses: tuple[str, ...] = ()
    # scenario -> kvviz.runs.Plan, for a run made of independent parts (one per policy, say):
    # the app draws it as its parts end and keeps parts an edit did not change. None: one piece
    plan: Callable[[S], Plan[S, Any, Any]] | None = None
    # (time unit, scenario or None) -> the timeline's axis title where its time is not plain time
    # (the ladder draws 1,000 accesses: its µs are ns per access; prefix_cache's untimed replay
    # draws arrivals); None: "time (unit)"
    time_axis: Callable[[str, S | None], str] | None = None
    # () -> one line on why this kind's runs take its slower reference engine (a compiled one
    # missing or older than its source), or "" when the compiled one runs
    engine_note: Callable[[], str] | None = None
    # () -> why the CLI refuses to run this kind under the environment's engine choice (a value it
    # does not know, a compiled engine asked for that cannot run), or ""; the app notes it instead
    engine_refusal: Callable[[], str] | None = None


_noted: set[str] = set()


def engine_note_once(kind: object, strict: bool = False) -> str:
    """`kind`'s engine note the first time it is asked for in this process, else "": the CLI and
    the app say it once, where a run starts. `strict` (the CLI): a ScenarioError where the engine
    choice is refused (exit 2), rather than a note."""
    m = mechanisms().get(kind) if isinstance(kind, str) else None
    if strict and m is not None and m.engine_refusal is not None and (why := m.engine_refusal()):
        raise ScenarioError(why)
    if m is None or m.engine_note is None or m.kind in _noted:
        return ""
    _noted.add(m.kind)
    return m.engine_note()


def time_axis_title(kind: str | None, unit: str, scenario: ScenarioBase | None = None) -> str:
    """The timeline's axis title for a run of `kind` (its `scenario`, where the words depend on
    a setting) in `unit`: the CLI's figure and the app's timeline say the same."""
    m = mechanisms().get(kind) if isinstance(kind, str) else None
    return m.time_axis(unit, scenario) if m is not None and m.time_axis is not None else f"time ({unit})"


@cache
def mechanisms() -> dict[str, Mechanism[Any]]:
    """Every mechanism by kind, in `PACKAGES` order."""
    records = (import_module(f"{__name__}.{p}").MECHANISM for p in PACKAGES)
    return {m.kind: m for m in records}
