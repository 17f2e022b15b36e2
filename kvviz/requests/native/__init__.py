"""The compiled Mooncake scanner (`_mooncake.pyx`, built by setup.py at install, or in place by
`make native`), or None where it cannot run: not built (no C compiler), not loadable, or built
from other sources than the ones beside it (a checkout moved on). Then kvviz.requests.fast_jsonl
reads with orjson, or the strict reader does: slower, never different.

The sources' hash is the one setup.py compiles into every extension (attention_store's
native/sources.py, which setup.py runs for each extension's folder); it is computed here again,
not imported, because the request readers sit below the mechanisms (a test holds the two equal)."""
from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

HERE = Path(__file__).parent
SUFFIXES = (".pyx", ".pxi", ".pxd")


def source_hash(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(p for p in Path(folder).iterdir() if p.suffix in SUFFIXES):
        data = p.read_bytes()
        h.update(f"{p.name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()[:16]


@cache
def scanner():
    """_mooncake.scan, or None."""
    try:
        from . import _mooncake
    except Exception:  # ImportError mostly (not built); a module's init can raise anything
        return None
    if any(p.suffix in SUFFIXES for p in HERE.iterdir()) and getattr(_mooncake, "SOURCE_HASH", "") != source_hash(HERE):
        return None
    return _mooncake.scan
