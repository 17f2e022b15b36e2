"""zstd-compressed traces (libCacheSim's public datasets ship as .oracleGeneral.zst): any format
decompressed to a temporary file first, so every reader reads a plain file. A file cut short
is refused, not read as a shorter trace."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

from ..errors import ScenarioError
from ..io import scratch_tree
from .common import read_bytes

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


@contextmanager
def open_decompressed(path: Path):
    """The path itself, or a temporary file holding its zstd-decompressed content (named as the
    file without .zst, so the format is still told by name)."""
    if read_bytes(path, len(ZSTD_MAGIC)) != ZSTD_MAGIC:
        yield path
        return
    try:
        import zstandard
    except ImportError:
        raise ScenarioError("a zstd-compressed trace needs the zstandard package (pip install 'kvviz[replay]')",
                            str(path)) from None
    with scratch_tree(None) as d:  # on disk: the decompressed size is not known
        plain = Path(d) / (path.name[:-4] if path.name.lower().endswith(".zst") else path.name)
        try:
            with open(path, "rb") as src, open(plain, "wb") as dst:
                _unzstd(zstandard, src, dst)
        except zstandard.ZstdError as e:
            raise ScenarioError(f"not a readable zstd file: {e}", str(path)) from None
        except OSError as e:
            raise ScenarioError(f"cannot decompress the trace: {e.strerror or e}", str(path)) from None
        yield plain


def _unzstd(zstandard, src, dst) -> None:
    """Every frame of src into dst; a file cut short is an error, not a shorter trace."""
    dobj, in_frame = None, False
    for chunk in iter(lambda: src.read(1 << 22), b""):
        while chunk:
            if dobj is None:
                dobj = zstandard.ZstdDecompressor().decompressobj()
            dst.write(dobj.decompress(chunk))
            in_frame, chunk = not dobj.eof, b""
            if dobj.eof:  # a next frame may start in what this one left
                chunk, dobj = dobj.unused_data, None
    if in_frame:
        raise zstandard.ZstdError("the file ends inside a frame (truncated?)")
