"""The hash of the compiled engine's source files: setup.py compiles it into the module
(SOURCE_HASH, a C macro) and the loader compares it with the files beside the module, so a build
from other sources (an older checkout's, one copied in) is never run whatever its mtime says.
Imports nothing of kvviz: setup.py runs this file before kvviz can be imported."""
from __future__ import annotations

import hashlib
from pathlib import Path

SUFFIXES = (".pyx", ".pxi", ".pxd")


def source_files(folder: Path) -> list[Path]:
    return sorted(p for p in Path(folder).iterdir() if p.suffix in SUFFIXES)


def source_hash(folder: Path) -> str:
    """16 hex digits over the names and contents of `folder`'s Cython sources."""
    h = hashlib.sha256()
    for p in source_files(folder):
        data = p.read_bytes()
        h.update(f"{p.name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()[:16]
