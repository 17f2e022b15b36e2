"""The serving core's compiled modules (Cython, built by setup.py at install or in place by
`make native`) and the choice between each and its Python reference, which stays the definition.

- `_block_cache.pyx`: the tiered block cache's twin for the policies that have one (`TWINS`);
  kvviz/serving/tiered_cache.py is the reference. Its `prefix_counts` is `kvviz replay
  --prefix`'s pass (kvviz/replay/native.py).
- `policies.pxi`: the compiled lru, fifo and belady, written once: the block cache and
  AttentionStore's engine include it.

`block_cache()` is (the compiled module, "") where it can run, else (None, why not): KVVIZ_ENGINE=
python asks for the reference (as it does of AttentionStore's engine), or the module is missing
(no C compiler at install), cut short (loading it would kill the process), or built from other
sources than the ones beside it (the hash setup.py compiles in: a checkout moved on, a build
copied in). A run that falls back says why in its notes (tiered_cache.make_cache).
"""
from __future__ import annotations

import os
import struct
from functools import cache
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path
from types import ModuleType

from .sources import source_files, source_hash

HERE = Path(__file__).parent
ENV = "KVVIZ_ENGINE"
REBUILD = "`make native` rebuilds it"
TWINS = ("lru", "fifo", "belady")  # the policies _block_cache runs (its KINDS)


def whole(path: Path) -> bool:
    """False for an ELF file shorter than its section table's end (a copy cut short: the dynamic
    loader maps it and the process dies of SIGBUS, which no except clause catches)."""
    with path.open("rb") as f:
        head = f.read(64)
    if head[:4] != b"\x7fELF":
        return True  # not ELF (macOS, Windows; or no object file at all): the import decides
    if len(head) < 64:
        return False
    end = "<" if head[5] == 1 else ">"
    wide = head[4] == 2  # ELFCLASS64: e_shoff is 8 bytes at 0x28, else 4 at 0x20
    (shoff,) = struct.unpack_from(end + ("Q" if wide else "I"), head, 0x28 if wide else 0x20)
    shentsize, shnum = struct.unpack_from(end + "HH", head, 0x3A if wide else 0x2E)
    table_end: int = shoff + shentsize * shnum  # struct.unpack's values are Any to the checker
    return path.stat().st_size >= table_end


def load_built(package: str, name: str, folder: Path, what: str) -> tuple[ModuleType | None, str]:
    """(package.name, "") where that compiled module can run, else (None, why not), `what`
    naming it in the reason."""
    spec = find_spec(f"{package}.{name}")
    if spec is None or not spec.origin:
        return None, f"{what} is not built (`make setup` builds it; it needs a C compiler)"
    if not whole(Path(spec.origin)):
        return None, f"{what}'s file is cut short ({REBUILD})"
    try:
        module = import_module(f"{package}.{name}")
    except Exception as e:  # ImportError mostly; a module's init can raise anything (a numpy ABI change)
        why = (str(e).splitlines() or [type(e).__name__])[0]
        return None, f"{what} does not load ({why}; {REBUILD})"
    if source_files(folder) and getattr(module, "SOURCE_HASH", "") != source_hash(folder):  # a wheel has none
        return None, f"{what} was built from other sources than the ones beside it ({REBUILD})"
    return module, ""


@cache
def _load_block_cache() -> tuple[ModuleType | None, str]:
    return load_built(__name__, "_block_cache", HERE, "the compiled block cache")


def block_cache() -> tuple[ModuleType | None, str]:
    """(the compiled block cache module, "") or (None, why the Python one runs)."""
    if os.environ.get(ENV, "").strip().lower() == "python":
        return None, f"{ENV}=python"
    return _load_block_cache()
