"""zstd-compressed traces (libCacheSim's public datasets ship as .oracleGeneral.zst): any format
decompressed to a temporary file first, so every reader reads a plain file. A file cut short
is refused, not read as a shorter trace; decompression stops at a cap (a multiple of the
compressed size and an absolute ceiling, kvviz.limits), refused before writing past it."""
from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import BinaryIO

from ..errors import ScenarioError
from ..io import open_regular, scratch_tree
from ..limits import MAX_DECOMPRESSED_BYTES, MAX_DECOMPRESSED_RATIO
from .common import read_bytes
from .oracle_general import fits_oracle_general
from .signatures import ZSTD_MAGIC

# Compressions kvviz does not undo, told by their magic bytes: such a file is named for what it
# is, not read as a text trace whose header is missing (bzip2's with its first block's magic,
# so a text file starting "BZh" is not one)
OTHER_MAGIC = {b"\x1f\x8b": "gzip", b"\xfd7zXZ\x00": "xz", b"PK\x03\x04": "zip",
               b"\x04\x22\x4d\x18": "lz4", b"7z\xbc\xaf\x27\x1c": "7z"}
_BZIP2 = re.compile(rb"BZh[1-9]1AY&SY")


def compression(head: bytes, size: int) -> str | None:
    """The compression a file's first bytes (of `size` in all) say it has: zstd, gzip, xz, zip,
    lz4, 7z, bzip2, or None."""
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    kind = "bzip2" if _BZIP2.match(head) else next((k for m, k in OTHER_MAGIC.items() if head.startswith(m)), None)
    # an oracleGeneral trace's first time can start with those bytes too; its records tell it
    return kind if kind and not fits_oracle_general(head, size) else None


@contextmanager
def open_decompressed(path: Path, max_ratio: float | None = None, max_bytes: int | None = None) -> Iterator[Path]:
    """The path itself, or a temporary file holding its zstd-decompressed content (named as the
    file without .zst, so the format is still told by name), at most the smaller of `max_ratio`
    times the compressed size and `max_bytes` (defaults: kvviz.limits)."""
    head = read_bytes(path, 4096)
    if not head.startswith(ZSTD_MAGIC):
        kind = compression(head, path.stat().st_size)
        if kind:
            raise ScenarioError(f"compressed with {kind}: kvviz decompresses zstd traces only (decompress it "
                                f"first, or recompress it with zstd)", str(path))
        yield path
        return
    try:
        import zstandard
    except ImportError:
        raise ScenarioError("a zstd-compressed trace needs the zstandard package (pip install 'kvviz[replay]')",
                            str(path)) from None
    with scratch_tree(None) as d:  # on disk: the decompressed size is not known
        plain = Path(d) / (path.name[:-4] if path.name.lower().endswith(".zst") else path.name)
        ratio = MAX_DECOMPRESSED_RATIO if max_ratio is None else max_ratio
        ceiling = MAX_DECOMPRESSED_BYTES if max_bytes is None else max_bytes
        try:
            with open_regular(path, "trace") as src, open(plain, "wb") as dst:
                size = os.fstat(src.fileno()).st_size
                cap = int(min(ratio * size, ceiling))
                _unzstd(zstandard, src, dst, cap, path, (ratio, ceiling))
        except zstandard.ZstdError as e:
            raise ScenarioError(f"not a readable zstd file: {e}", str(path)) from None
        except OSError as e:
            raise ScenarioError(f"cannot decompress the trace: {e.strerror or e}", str(path)) from None
        yield plain


IN_CHUNK = 8 * 1024  # zstd expands at most ~32,768x (an RLE block), so one call's output is < 256 MiB


def _unzstd(zstandard: ModuleType, src: BinaryIO, dst: BinaryIO, cap: int, path: Path, caps: tuple[float, float]
            ) -> None:
    """Every frame of src into dst, at most `cap` bytes; a file cut short is an error, not a
    shorter trace. Fed in small pieces, so what one call expands to is bounded too."""
    dobj, in_frame, written = None, False, 0
    for chunk in iter(lambda: src.read(IN_CHUNK), b""):
        while chunk:
            if dobj is None:
                dobj = zstandard.ZstdDecompressor().decompressobj()
            out = dobj.decompress(chunk)
            if written + len(out) > cap:
                ratio, ceiling = caps
                raise ScenarioError(f"decompresses to more than {cap:,} bytes (the cap: {ratio:g}x its "
                                    f"compressed size, at most {ceiling / 1e9:g} GB; kvviz replay "
                                    "--max-decompressed-ratio and --max-decompressed-gb raise it)", str(path))
            dst.write(out)
            written += len(out)
            in_frame, chunk = not dobj.eof, b""
            if dobj.eof:  # a next frame may start in what this one left
                chunk, dobj = dobj.unused_data, None
    if in_frame:
        raise zstandard.ZstdError("the file ends inside a frame (truncated?)")
