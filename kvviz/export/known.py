"""The export formats kvviz ships, registered (kvviz.export.registry), in the order of the app's
File → Export menu: the timeline figures, then the data. Their writers live in their own
modules, imported when a run is exported (`kvviz run --help` lists the flags without numpy)."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..errors import ScenarioError
from .registry import ExportFormat, Files, register

if TYPE_CHECKING:
    from ..result import Result


def _perfetto(result: Result, path: str) -> Files:
    from .perfetto import perfetto_json
    return [(path, perfetto_json(result))]


def _csv_files(prefix: str) -> list[str]:
    from .csv import csv_paths
    if prefix.endswith(("/", os.sep)):  # PREFIX/ would write PREFIX/_lanes.csv: a name, not a folder
        raise ScenarioError("cannot write the files: the prefix ends in a folder, not a file name", prefix)
    return [str(p) for p in csv_paths(prefix).values()]


def _csv(result: Result, prefix: str) -> Files:
    from .csv import csv_paths, trace_csv
    texts = trace_csv(result.trace)
    return [(str(path), texts[table]) for table, path in csv_paths(prefix).items()]


def _json(result: Result, path: str) -> Files:
    return [(path, result.to_json(indent=2) + "\n")]


register(ExportFormat("svg", "Timeline as SVG…", "svg", True, "--svg", "OUT.svg",
                      "timeline as a vector SVG figure", "SVG"))
register(ExportFormat("png", "Timeline as PNG…", "png", True, "--png", "OUT.png",
                      "timeline as PNG (pixels = size in inches × dpi)", "PNG"))
register(ExportFormat("pdf", "Timeline as PDF…", "pdf", True, "--pdf", "OUT.pdf",
                      "timeline as a vector PDF", "PDF"))
register(ExportFormat("perfetto", "Perfetto trace JSON…", "json", False, "--perfetto", "OUT.json",
                      "Chrome/Perfetto trace JSON (ui.perfetto.dev)", "JSON", _perfetto))
register(ExportFormat("csv", "Trace as CSV…", "csv", False, "--csv", "PREFIX",
                      "PREFIX_{lanes,spans,instants,counters,residency}.csv", "CSV", _csv, _csv_files, prefix=True))
register(ExportFormat("json", "Metrics as JSON…", "json", False, "--json-out", "OUT.json",
                      "also write the metrics JSON to a file", "JSON", _json))
