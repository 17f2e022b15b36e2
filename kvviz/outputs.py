"""The files `kvviz run` writes, as refusals when they cannot be: a read-only or full disk, a
folder that does not exist (never made: a typo in a path is no new folder), a path that is a
folder. Each is one line naming the path (exit 2),
the previous file stays as it was, and no temporary file is left behind (atomic_write's, and
the rasters' `.NAME.kvviz-tmp`, which the renderer writes in a child process)."""
from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

from .errors import ScenarioError
from .io import atomic_write, remove_stale_partials

NO_ROOM = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is used up"}


def output_error(path: str | Path, e: OSError) -> ScenarioError:
    why = NO_ROOM.get(e.errno) or e.strerror or type(e).__name__
    return ScenarioError(f"cannot write the file: {why}", str(path))


def check_target(path: str | Path) -> None:
    """Refuse at once what cannot be written, before a run's outputs are rendered."""
    try:
        _check_target(Path(path))
    except OSError as e:  # a name too long, a loop of links
        raise output_error(path, e) from None


def _check_target(p: Path) -> None:
    path = str(p)
    if p.is_dir():
        raise ScenarioError("cannot write the file: it is a folder", str(path))
    parent = next((a for a in p.absolute().parents if a.exists()), None)
    if parent is not None and not parent.is_dir():
        raise ScenarioError(f"cannot write the file: {parent} is not a folder", str(path))
    if parent is not None and parent != p.absolute().parent:  # as most Unix tools: a typo is not a new folder
        raise ScenarioError(f"cannot write the file: the folder {p.parent} does not exist", str(path))
    if parent is not None and not os.access(parent, os.W_OK | os.X_OK):
        raise ScenarioError(f"cannot write the file: {parent} is not writable", str(path))


def write_text(path: str | Path, data: str | bytes) -> None:
    try:
        atomic_write(path, data)
    except OSError as e:
        raise output_error(path, e) from None


def write_run_outputs(rasters: list[tuple[str, str]], svg: str | None, dpi: int,
                      texts: list[tuple[str, str]]) -> None:
    """Rasters (path, png|pdf) rendered to temporary names and renamed only when all are done,
    then the text outputs (path, text), each written atomically; "wrote PATH" for each."""
    from .export.raster import ExportError, render
    staged: list[tuple[str, str]] = []
    try:
        for path, fmt in rasters:
            tmp = str(Path(path).with_name(f".{Path(path).name}.kvviz-tmp"))
            remove_stale_partials(Path(path))
            staged.append((tmp, path))  # before rendering: a failed render's partial goes too
            try:
                render(svg, tmp, fmt, dpi)
            except ExportError as e:
                raise ScenarioError(str(e).replace(tmp, path), path) from None
        for tmp, path in staged:
            try:
                os.replace(tmp, path)
            except OSError as e:
                raise output_error(path, e) from None
            print(f"wrote {path}", file=sys.stderr)
    finally:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
    for path, data in texts:
        if path:
            write_text(path, data)
            print(f"wrote {path}", file=sys.stderr)
