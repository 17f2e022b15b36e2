"""The one guard every file kvviz writes goes through (the CLI's outputs, `claims --readme`, the
app's saves and exports, `kvviz-gui --screenshot`).

Before a command runs, its outputs are checked together: each must name a regular file (or a new
one) in a folder that exists and may be written, never a folder, a device, a FIFO, a socket, a
read-only file or a link to nothing; never one of the command's inputs (the scenario, its trace,
its token file, a ladder's base), however spelled; never another output of the same command; and
a format's name must not say another format (`--png fig.svg`). Each refusal is one line naming
the path (exit 2), and nothing is written. After the run the outputs are written as one set
(kvviz.io.atomic_write_set): the previous set stays whole if any of them cannot be written.
"""
from __future__ import annotations

import errno
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from .errors import ScenarioError
from .format import printable
from .io import UnsafeTarget, atomic_write_set, write_target

if TYPE_CHECKING:  # pydantic is imported by the scenario's loading, not here
    from pydantic import BaseModel

NO_ROOM = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is used up",
           errno.EFBIG: "the file is larger than this process may write"}

# Names that say a format: an output of one format is refused a name that says another.
FORMAT_SUFFIXES = {".png": "PNG", ".pdf": "PDF", ".svg": "SVG", ".json": "JSON", ".csv": "CSV",
                   ".toml": "TOML", ".jsonl": "JSONL", ".md": "Markdown"}


def output_error(path: str | Path, e: OSError) -> ScenarioError:
    why = (NO_ROOM.get(e.errno) if e.errno is not None else None) or e.strerror or type(e).__name__
    return ScenarioError(f"cannot write the file: {why}", str(path))


def check_target(path: str | Path, fmt: str | None = None) -> None:
    """Refuse at once a path that cannot be written (see the module docstring); `fmt`, the
    format written (a FORMAT_SUFFIXES name), refuses a name ending in another format's suffix."""
    text = str(path)
    if not text or text.endswith(("/", os.sep)) or Path(text).name in ("", ".", ".."):
        raise ScenarioError("cannot write the file: the name ends in a folder, not a file name", text)
    said = FORMAT_SUFFIXES.get(Path(text).suffix.lower())
    if fmt is not None and said is not None and said != fmt:
        raise ScenarioError(f"cannot write the file: this output is {fmt}, but the name says {said}", text)
    try:
        _check_folder(Path(path))
        write_target(path)
    except UnsafeTarget as e:
        raise ScenarioError(f"cannot write the file: it {e.strerror}", text) from None
    except OSError as e:  # a name too long, a loop of links
        raise output_error(path, e) from None


def _check_folder(p: Path) -> None:
    path = str(p)
    if p.is_dir():
        raise ScenarioError("cannot write the file: it is a folder", path)
    parent = next((a for a in p.absolute().parents if a.exists()), None)
    if parent is not None and not parent.is_dir():
        raise ScenarioError(f"cannot write the file: {parent} is not a folder", path)
    if parent is not None and parent != p.absolute().parent:  # as most Unix tools: a typo is not a new folder
        raise ScenarioError(f"cannot write the file: the folder {p.parent} does not exist", path)
    # root may write into any folder: its mode says no, as a read-only file's does (io.write_target)
    if parent is not None and (not os.access(parent, os.W_OK | os.X_OK) or not parent.stat().st_mode & 0o222):
        raise ScenarioError(f"cannot write the file: {parent} is not writable", path)


def _identity(path: str | Path) -> tuple[int, int] | str:
    """What makes two names one file: its device and inode (links, `a/../a`, hard links), or,
    for a file not there yet, its resolved path."""
    try:
        st = os.stat(path)
        return (st.st_dev, st.st_ino)
    except OSError:
        return os.path.realpath(path)


def check_outputs(outputs: Sequence[tuple[str, str | Path, str | None]],
                  inputs: Sequence[tuple[str, str | Path]] = ()) -> None:
    """Refuse, before anything runs, outputs (flag, path, format) that check_target refuses, that
    name an input (what, path) of the command, or that name the same file twice."""
    seen = {_identity(p): f"the {what} (kvviz never writes over an input)" for what, p in inputs if p}
    for flag, path, fmt in outputs:
        key = _identity(path)
        if key in seen:
            raise ScenarioError(f"cannot write the file: it is {seen[key]}", str(path))
        check_target(path, fmt)
        seen[key] = f"also the {flag} output: one file cannot be two outputs"


def scenario_inputs(file: str | Path, sc: BaseModel) -> list[tuple[str, str]]:
    """The files a run of `sc`, loaded from `file`, reads: the scenario and each path field (a
    trace, a token file, a ladder's base), as the scenario resolves them."""
    from .scenario import file_fields, relative_to_source
    out = [("scenario this run reads", str(file))]
    for parts in file_fields(type(sc)):
        value: object = sc
        for name in parts:
            value = getattr(value, name, None)
        if isinstance(value, str) and value:
            out.append((f"scenario's {'.'.join(parts)}, which this run reads",
                        str(relative_to_source(value, {"source": str(file)}))))
    return out


def write_outputs(items: list[tuple[str, str | bytes]]) -> None:
    """Write (path, data) as one set (kvviz.io.atomic_write_set); a failure is one line naming
    the path, with every previous file as it was."""
    try:
        atomic_write_set(items)
    except UnsafeTarget as e:  # became unsafe since the check (a folder made in its place)
        raise ScenarioError(f"cannot write the file: it {e.strerror}", e.filename) from None
    except OSError as e:
        raise output_error(e.filename or (items[0][0] if len(items) == 1 else "output"), e) from None


def write_text(path: str | Path, data: str | bytes) -> None:
    write_outputs([(str(path), data)])


def write_run_outputs(rasters: list[tuple[str, str]], svg: str | None, dpi: int,
                      texts: Sequence[tuple[str | None, str | bytes]]) -> None:
    """Rasters (path, png|pdf) rendered to bytes first from `svg` (given whenever rasters are),
    then every output written as one set (a text without a path is not written); "wrote PATH" for each."""
    from .export.raster import ExportError, render
    items: list[tuple[str, str | bytes]] = []
    for path, fmt in rasters:
        if svg is None:
            raise ValueError(f"{path}: a {fmt} is rendered from the run's SVG, and none was made")
        try:
            items.append((path, render(svg, fmt, dpi)))
        except ExportError as e:
            raise ScenarioError(str(e), path) from None
    items += [(path, data) for path, data in texts if path]
    if items:
        write_outputs(items)
    for path, _ in items:
        print(f"wrote {printable(path)}", file=sys.stderr)
