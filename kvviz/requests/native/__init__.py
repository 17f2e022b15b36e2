"""The compiled Mooncake scanner (`_mooncake.pyx`, built by setup.py at install, or in place by
`make native`), or None where it cannot run: not built (no C compiler), not loadable, or built
from other sources than the ones beside it (a checkout moved on). Then kvviz.requests.fast_jsonl
reads with orjson, or the strict reader does: slower, never different.

The sources' hash is the one setup.py compiles into every extension (attention_store's
native/sources.py, which setup.py runs for each extension's folder); it is computed here again,
not imported, because the request readers sit below the mechanisms (a test holds the two equal).

Imports no numpy (nor does the scanner): `scanned` serves the lean `kvviz replay --prefix`."""
from __future__ import annotations

import hashlib
from array import array
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from typing_extensions import Buffer

    # the scanner's arrays: lines, timestamps, input_length, output_length, ids per record, ids
    Scanned = tuple[array[int], array[int], array[int], array[int], array[int], array[int]]


class Scan(Protocol):
    """_mooncake.scan (its interface: _mooncake.pyi)."""
    def __call__(self, data: Buffer, max_records: int, max_ids: int, block_tokens: int = 0,
                 in_order: bool = False) -> Scanned | None: ...

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
def scanner() -> Scan | None:
    """_mooncake.scan, or None."""
    try:
        from . import _mooncake
    except Exception:  # ImportError mostly (not built); a module's init can raise anything
        return None
    if any(p.suffix in SUFFIXES for p in HERE.iterdir()) and getattr(_mooncake, "SOURCE_HASH", "") != source_hash(HERE):
        return None
    return _mooncake.scan


def scanned(data: bytes) -> Scanned | None:
    """A Mooncake trace's bytes as the scanner's array('q')s (lines, timestamps, input_length,
    output_length, ids per record, ids), where the file is in its grammar, every record's ids
    agree with its input_length and the times never go back: the records the strict reader would
    read, every check of it passed. None where the scanner is not built or the file needs another
    reader (which then names what is wrong and where)."""
    from ..jsonl import MOONCAKE_BLOCK_TOKENS
    scan = scanner()
    if scan is None:
        return None
    return scan(data, *room(data), MOONCAKE_BLOCK_TOKENS, True)


def room(data: bytes) -> tuple[int, int]:
    """Records and ids to make room for at first (the scanner grows its arrays beyond): a
    Mooncake record is at least ~70 bytes, an id at most 1 + 19 bytes and usually 7-9 (a count
    of newlines and commas was exact, and three passes over the file)."""
    return len(data) // 64 + 16, len(data) // 6 + 16
