"""How many records a request trace holds, told cheaply before it is read: the size guard
(kvviz.size_guard) sizes a trace-driven run from it, so a trace that would exhaust memory is
refused before it is parsed.

Counted in the first SAMPLE_BYTES (exact for a file no longer) and scaled by the file's size: a
record is a line of text (a CSV row, a JSONL request), 24 bytes of oracleGeneral, or, for a
trace replayed as KV blocks, one hash id (a comma in a JSONL line, ours: an upper bound, since a
line's other fields have commas too). A zstd file is sized by the decompressed size its frame
header states; without one, or unreadable, it is not sized here (None): the decompression cap
still bounds it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..io import open_regular
from .signatures import BOM, ZSTD_MAGIC

SAMPLE_BYTES = 1 << 20


@dataclass(frozen=True)
class Extent:
    bytes: int      # the file's size (decompressed, for a zstd file)
    lines: float    # records as lines (text), or 24-byte records (oracleGeneral)
    blocks: float   # hash ids (a JSONL request trace), else as lines
    kind: str       # "text", "jsonl" or "binary"


def extent(path: str | Path, what: str = "trace file") -> Extent | None:
    """The trace's size and its records, estimated from its first MiB; None for a zstd file
    whose frame header does not state its size. Unreadable files raise ScenarioError (what a
    read would say)."""
    path = Path(path)
    with open_regular(path, what) as f:
        head = f.read(SAMPLE_BYTES)
        size = f.seek(0, 2)
    if head.startswith(ZSTD_MAGIC):
        unpacked, size = _zstd_head(path, head)
        if unpacked is None:
            return None
        head = unpacked
    scale = size / len(head) if head else 0.0
    body = head.removeprefix(BOM)
    if ".oraclegeneral" in path.name.lower() or b"\0" in head:
        from .oracle_general import ORACLE_RECORD, fits_oracle_general  # numpy: binary traces only
    if ".oraclegeneral" in path.name.lower() or (b"\0" in head and fits_oracle_general(head, size)):
        n = size / ORACLE_RECORD.itemsize
        return Extent(size, n, n, "binary")
    lines = (body.count(b"\n") + (not body.endswith(b"\n"))) * scale
    if body.lstrip().startswith(b"{"):
        return Extent(size, lines, max(lines, body.count(b",") * scale), "jsonl")
    return Extent(size, lines, lines, "text")


def _zstd_head(path: Path, head: bytes) -> tuple[bytes | None, int]:
    """The first decompressed MiB and the stated decompressed size, or (None, 0)."""
    try:
        import zstandard
        size = zstandard.frame_content_size(head)
        if size < 0:  # not stated (a streamed file)
            return None, 0
        with open_regular(path, "trace file") as f:
            return zstandard.ZstdDecompressor().stream_reader(f).read(SAMPLE_BYTES), size
    except Exception:  # no zstandard, a ZstdError, a read error: the reader says what is wrong
        return None, 0
