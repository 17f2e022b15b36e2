"""What File → Export writes, rendered to bytes: the same exporters as `kvviz run`'s flags (one
per format of kvviz.export's registry: --svg/--png/--pdf/--perfetto/--csv/--json-out, and any
format registered since). No Qt here: this runs in the export's child process
(app.export_job), so the window repaints while a flagship-sized Perfetto trace (~180 MB) is built and Cancel
ends the child at once; PNG and PDF are rasterised as the CLI does (kvviz.export.raster: a
child of its own, the one that loads Qt)."""
from __future__ import annotations

from pathlib import Path

from kvviz.export import EXPORT_FORMATS, export_format
from kvviz.export.figure_size import FigureSize
from kvviz.result import Result

CHUNK = 4 << 20  # bytes per message from the export's child to the window


def said(fmt: str) -> str:
    """What `fmt`'s file is called in a refusal ("cannot write the file: … is not JSON"): a
    registered format's name for it, else `fmt` in capitals (a view as PNG, a table as CSV)."""
    return EXPORT_FORMATS[fmt].said if fmt in EXPORT_FORMATS else fmt.upper()


def _target(fmt: str, path: str) -> str:
    """What the format's flag would take for the file chosen: a prefix is the name without its
    extension (CSV: PREFIX_lanes.csv, ...)."""
    return str(Path(path).with_suffix("")) if export_format(fmt).prefix else path


def export_paths(fmt: str, path: str) -> list[str]:
    """The files an export of `fmt` to `path` writes (CSV: one per table)."""
    return export_format(fmt).paths(_target(fmt, path))


def render_items(result: Result, fmt: str, path: str, time_range_ns: tuple[int, int] | None = None,
                 size: FigureSize | None = None) -> list[tuple[str, str | bytes]]:
    """(path, data) for each file of the export; ValueError for a figure size out of range."""
    t0, t1 = time_range_ns or (None, None)
    size = size or FigureSize()
    f = export_format(fmt)
    if f.render is not None:
        return f.render(result, _target(fmt, path))
    if f.ranged:  # a timeline figure
        from kvviz.export.svg import timeline_svg
        if problem := size.problem(raster=fmt == "png"):
            raise ValueError(problem[1])
        svg = timeline_svg(result, width=round(size.width_px), t0_ns=t0, t1_ns=t1,
                           height=None if size.height_px is None else round(size.height_px))
        if fmt == "svg":
            return [(path, svg)]
        from kvviz.export.raster import render
        return [(path, render(svg, fmt, size.dpi))]
    raise ValueError(f"no writer for the export format {fmt!r}")


def child(conn, result: Result, fmt: str, path: str, time_range_ns, size) -> None:
    """The export's child process: render, then send ("ok", [path, ...]) and each file's bytes,
    or ("error", one line). It writes nothing: the window writes what it sends, unless the
    export was cancelled meanwhile."""
    import os
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C belongs to the app
    if hasattr(os, "setpgrp"):
        os.setpgrp()  # its own process group: Cancel ends the rasteriser it may start too
    from kvviz.errors import ScenarioError
    from kvviz.export.raster import ExportError
    try:
        items = render_items(result, fmt, path, time_range_ns, size)
    except (ScenarioError, ExportError, ValueError, OSError) as e:
        conn.send(("error", str(e)))
        return
    except Exception as e:  # a bug: one line for the window, the details on the terminal
        import traceback
        traceback.print_exc()
        conn.send(("error", f"internal error while exporting: {e!r}"))
        return
    blobs = [(p, data.encode("utf-8") if isinstance(data, str) else data) for p, data in items]
    conn.send(("ok", [(p, len(b)) for p, b in blobs]))
    for _, b in blobs:  # in pieces: the window copies each as it comes, never the whole trace at once
        for at in range(0, len(b), CHUNK):
            conn.send_bytes(b, at, min(CHUNK, len(b) - at))
    conn.close()
