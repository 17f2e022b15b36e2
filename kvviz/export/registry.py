"""The export-format record and its registry (kvviz/export/__init__.py imports each format's
file, which registers it)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..result import Result

# (path, data) of each file an export writes: text is written as UTF-8
Files = list[tuple[str, "str | bytes"]]


@dataclass(frozen=True)
class ExportFormat:
    name: str      # the format's key: app.exporting.export_result(result, name, path)
    label: str     # the app's File → Export entry
    ext: str       # the file name's extension
    ranged: bool   # a timeline figure (kvviz.export.svg), which may be cut to the visible time range
    flag: str      # kvviz run's option that writes it, e.g. --perfetto
    metavar: str   # its value in --help, e.g. OUT.json
    help: str      # its line in --help
    said: str      # what a refusal calls the file: "cannot write the file: … is not JSON"
    # the run as the files an export to `target` (what the flag takes) writes; None for a timeline
    # figure, drawn once by kvviz.export.svg for --svg, --png and --pdf together
    render: Callable[[Result, str], Files] | None = None
    # the files an export to `target` writes, known before the run (default: [target]); a target
    # it cannot take raises kvviz.errors.ScenarioError
    files: Callable[[str], list[str]] | None = None
    prefix: bool = False  # `target` is a prefix of several files: the app passes its file name without extension

    @property
    def dest(self) -> str:
        """The flag's attribute on argparse's namespace."""
        return self.flag.removeprefix("--").replace("-", "_")

    def paths(self, target: str) -> list[str]:
        return self.files(target) if self.files is not None else [target]


EXPORT_FORMATS: dict[str, ExportFormat] = {}


def register(fmt: ExportFormat) -> ExportFormat:
    """Add `fmt` (its file calls this once, at import); a name or flag taken already is refused."""
    if fmt.name in EXPORT_FORMATS or any(f.flag == fmt.flag for f in EXPORT_FORMATS.values()):
        raise ValueError(f"export format {fmt.name!r} (or its flag {fmt.flag}) is registered already")
    if fmt.render is None and not fmt.ranged:
        raise ValueError(f"export format {fmt.name!r} writes nothing: give it `render`")
    EXPORT_FORMATS[fmt.name] = fmt
    return fmt


def export_format(name: str) -> ExportFormat:
    """The record for `name`; ValueError for a format no exporter writes."""
    try:
        return EXPORT_FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown export format {name!r}") from None
