"""Exporters that need no Qt: they read a finished Result and write files.

FORMATS lists every format a run exports to, for the app's File → Export menu and its writer
(`app/exporting.py`): one row per format, so a new exporter is one module and one row."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExportFormat:
    name: str      # the format's key: export_result(result, name, path)
    label: str     # the menu entry
    ext: str       # the file name's extension
    ranged: bool   # a timeline figure, which may be cut to the visible time range


FORMATS = (
    ExportFormat("svg", "Timeline as SVG…", "svg", True),
    ExportFormat("png", "Timeline as PNG…", "png", True),
    ExportFormat("pdf", "Timeline as PDF…", "pdf", True),
    ExportFormat("perfetto", "Perfetto trace JSON…", "json", False),
    ExportFormat("csv", "Trace as CSV…", "csv", False),
    ExportFormat("json", "Metrics as JSON…", "json", False),
)


def export_format(name: str) -> ExportFormat:
    """The row for `name`; ValueError for a format no exporter writes."""
    for f in FORMATS:
        if f.name == name:
            return f
    raise ValueError(f"unknown export format {name!r}")
