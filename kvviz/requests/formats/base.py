"""The trace-format record and its registry (the package's __init__ imports each format's file,
which registers it)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..blocks import DEFAULT_KV_BYTES_PER_TOKEN

if TYPE_CHECKING:
    from ..csv_layout import CsvLayout
    from ..objects import Requests
    from ..prompts import PromptRequests

# Where `--format auto` (or a scenario's trace file, which names no format) asks a format's `claims`:
# the object replay (kvviz replay), the block-level replay (kvviz replay --prefix), a prefix_cache
# scenario's workload.trace_file
Where = Literal["replay", "prefix", "workload"]
EVERYWHERE: frozenset[Where] = frozenset(("replay", "prefix", "workload"))


@dataclass(frozen=True)
class ReadOptions:
    """What the object replay's flags say about a trace: KV bytes per token (a trace of prompts
    read as blocks), and a CSV's layout (--columns, --delimiter, --header)."""
    kv_bytes_per_token: int = DEFAULT_KV_BYTES_PER_TOKEN
    layout: CsvLayout | None = None


ObjectReader = Callable[[Path, ReadOptions], "Requests"]
PromptReader = Callable[[Path], "PromptRequests"]


@dataclass(frozen=True)
class TraceFormat:
    """One trace format. Its readers raise kvviz.errors.ScenarioError naming the file and the
    line (or byte, or field) of bad input."""
    name: str                            # --format NAME
    objects: ObjectReader | None = None  # the trace as object requests (kvviz replay), the file decompressed
    prompts: PromptReader | None = None  # as prompts with block hashes (--prefix, workload), the path as given
    # under --format auto: is this file in the format? Asked in registration order before kvviz's
    # detection by content, with the path as the reader gets it; None: read only when named
    claims: Callable[[Path], bool] | None = None
    claimed_in: frozenset[Where] = EVERYWHERE  # where `claims` is asked


TRACE_FORMATS: dict[str, TraceFormat] = {}


def register(fmt: TraceFormat) -> TraceFormat:
    """Add `fmt` (its file calls this once, at import); a name taken already is refused."""
    if fmt.name in TRACE_FORMATS or fmt.name in ("auto", "jsonl"):
        raise ValueError(f"trace format {fmt.name!r} is registered already")
    if fmt.objects is None and fmt.prompts is None:
        raise ValueError(f"trace format {fmt.name!r} reads nothing: give `objects`, `prompts` or both")
    TRACE_FORMATS[fmt.name] = fmt
    return fmt


def names(prompts: bool = False) -> tuple[str, ...]:
    """"auto" and every format's name (`prompts`: of those with block hashes), in registration order."""
    return ("auto", *(f.name for f in TRACE_FORMATS.values() if not prompts or f.prompts is not None))


def claimant(path: Path, where: Where) -> TraceFormat | None:
    """The first registered format whose `claims` takes `path` at `where`, or None."""
    for f in TRACE_FORMATS.values():
        if f.claims is not None and where in f.claimed_in and (f.objects if where == "replay" else f.prompts) \
                and f.claims(path):
            return f
    return None


def read_workload(path: Path) -> PromptRequests | None:
    """A scenario's trace file as prompts: a format that claims it, else Mooncake, Qwen/Bailian or
    plain by content (kvviz.requests.prompts.read); None when it is none of them."""
    f = claimant(path, "workload")
    if f is not None and f.prompts is not None:
        return f.prompts(path)
    from .. import prompts
    return prompts.read(path)
