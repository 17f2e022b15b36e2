"""The app's Export menu: the same exporters as `kvviz run --svg/--png/--pdf/--perfetto/--csv`."""
from __future__ import annotations

from pathlib import Path

from kvviz.export.csv import csv_paths, trace_csv
from kvviz.export.perfetto import perfetto_json
from kvviz.export.svg import timeline_svg
from kvviz.io import atomic_write
from kvviz.result import Result

from .render import render_svg

FIGURE_DPI = 300  # print resolution for PNG/PDF figures


def export_result(result: Result, fmt: str, path: str, time_range_ns: tuple[int, int] | None = None) -> list[str]:
    """Write `result` as `fmt` to `path`; returns the files written."""
    t0, t1 = time_range_ns or (None, None)
    if fmt in ("svg", "png", "pdf"):
        svg = timeline_svg(result, t0_ns=t0, t1_ns=t1)
        if fmt == "svg":
            atomic_write(path, svg)
        else:
            render_svg(svg.encode("utf-8"), path, fmt, FIGURE_DPI)
        return [path]
    if fmt == "perfetto":
        atomic_write(path, perfetto_json(result))
        return [path]
    if fmt == "json":
        atomic_write(path, result.to_json(indent=2) + "\n")
        return [path]
    if fmt == "csv":
        prefix = str(Path(path).with_suffix(""))
        texts = trace_csv(result.trace)
        out = []
        for table, p in csv_paths(prefix).items():
            atomic_write(p, texts[table])
            out.append(str(p))
        return out
    raise ValueError(f"unknown export format {fmt!r}")
