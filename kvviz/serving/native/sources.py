"""The hash of the compiled engine's source files: setup.py compiles it into the module
(SOURCE_HASH, a C macro) and the loader compares it with the files beside the module, so a build
from other sources (an older checkout's, one copied in) is never run whatever its mtime says.
Imports nothing of kvviz: setup.py runs this file before kvviz can be imported."""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

SUFFIXES = (".pyx", ".pxi", ".pxd")
KVVIZ = Path(__file__).resolve().parents[2]  # the kvviz package this file is in
INCLUDE = re.compile(r'^include\s+"([^"]+)"', re.MULTILINE)


def source_files(folder: Path) -> list[Path]:
    return sorted(p for p in Path(folder).iterdir() if p.suffix in SUFFIXES)


def included_elsewhere(folder: Path) -> list[tuple[str, Path]]:
    """(as written, the file) for each file `folder`'s sources include from another folder (the
    serving core's shared pieces: kvviz/serving/native/*.pxi), whose edits make a build stale
    too. A path that does not resolve from `folder` (a copy of it elsewhere) is read from this
    kvviz, by its path below the `..`s: the same sources give the same hash wherever they are."""
    folder = Path(folder).resolve()
    out = {}
    for p in source_files(folder):
        for name in INCLUDE.findall(p.read_text(encoding="utf-8")):
            if "/" not in name:
                continue  # a file of this folder's own
            q = (folder / name).resolve()
            if not q.exists():
                q = KVVIZ.joinpath(*[part for part in Path(name).parts if part != ".."])
            if q.exists():
                out[name] = q
    return sorted(out.items())


def source_hash(folder: Path) -> str:
    """16 hex digits over the names and contents of `folder`'s Cython sources and of the files
    they include from elsewhere (named as their include names them)."""
    h = hashlib.sha256()
    files = [(p.name, p) for p in source_files(folder)] + included_elsewhere(folder)
    for name, p in files:
        data = p.read_bytes()
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()[:16]
