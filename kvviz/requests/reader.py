"""Any request trace as object requests, its format told by content (or named: the CLI's
--format): CSV, libCacheSim's plain text and oracleGeneral, Mooncake, Qwen/Bailian and plain
(kvviz.requests.plain) request traces as KV blocks, any format registered in
kvviz.requests.formats, any of them zstd-compressed. Bad input raises ScenarioError naming the
file and the line (or byte offset)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ScenarioError
from .blocks import DEFAULT_KV_BYTES_PER_TOKEN
from .formats import TRACE_FORMATS, ReadOptions, claimant, names

if TYPE_CHECKING:
    from .csv_layout import CsvLayout
    from .objects import Requests

# The readers (numpy all) are imported where a trace is read: the CLI's parser takes the formats'
# names (kvviz.requests.formats) without them.


def detect_format(path: Path) -> str:
    """csv, oracleGeneral, jsonl or txt by the file's first bytes (and the name for oracleGeneral
    and txt)."""
    from .common import BOM, read_bytes
    from .oracle_general import fits_oracle_general
    head = read_bytes(path, 4096)
    if ".oraclegeneral" in path.name.lower() or (b"\0" in head and fits_oracle_general(head, path.stat().st_size)):
        return "oracleGeneral"  # a NUL alone does not make one: a text reader names its line
    stripped = head.removeprefix(BOM).lstrip()
    if stripped.startswith(b"{"):
        return "jsonl"
    lines = stripped.replace(b"\r\n", b"\n").split(b"\n")
    if path.suffix.lower() in (".csv", ".tsv") or any(c in lines[0] for c in (b",", b"\t", b";", b"|")):
        return "csv"  # the CSV reader names a missing column
    whole = lines[:-1] if len(head) == 4096 else lines  # the last may be cut short
    if path.suffix.lower() == ".txt" and all(ln.split() == [ln] for ln in whole if ln):
        return "txt"  # one object id per line, as libCacheSim's plain-text traces
    raise ScenarioError("not a trace format kvviz knows: expected a CSV with header time,id,size (or --columns), "
                        "libCacheSim oracleGeneral binary (24-byte records) or plain-text ids (.txt, one per line), "
                        "or a Mooncake or Qwen/Bailian JSONL request trace; any of them zstd-compressed",
                        str(path), "line 1")



def read_trace(path: str | Path, fmt: str = "auto", kv_bytes_per_token: int = DEFAULT_KV_BYTES_PER_TOKEN,
               layout: CsvLayout | None = None, max_ratio: float | None = None,
               max_decompressed: int | None = None) -> Requests:
    """Any trace kvviz reads, by its content (or `fmt`); zstd-compressed ones (libCacheSim's
    datasets ship as .oracleGeneral.zst) are decompressed to a temporary file first, at most
    `max_ratio` times their size and `max_decompressed` bytes (defaults: kvviz.limits)."""
    from .blocks import read_blocks
    from .plain import is_plain_csv
    from .zstd import open_decompressed
    path = Path(path)
    if fmt != "auto" and fmt not in TRACE_FORMATS:
        raise ScenarioError(f"unknown trace format {fmt!r} (one of: {', '.join(names())})", "--format")
    says_csv = layout is not None and layout.says_csv
    if says_csv and fmt not in ("auto", "csv"):
        raise ScenarioError(f"--columns, --delimiter and --header describe a CSV, not {fmt}", "--format")
    with open_decompressed(path, max_ratio, max_decompressed) as plain:
        claimed = claimant(plain, "replay") if fmt == "auto" and not says_csv else None
        kind = claimed.name if claimed else "csv" if says_csv else detect_format(plain) if fmt == "auto" else fmt
        if kind == "csv" and not says_csv and is_plain_csv(plain):
            kind = "plain"  # a header naming hash_ids: prompts with block hashes
        try:
            if kind == "jsonl":  # Mooncake, Qwen/Bailian or plain, told by the first record
                reqs = read_blocks(plain, kv_bytes_per_token, None)
            else:
                reader = TRACE_FORMATS[kind].objects
                if reader is None:
                    raise ScenarioError(f"a {kind} trace is read by kvviz replay --prefix, not as object requests",
                                        "--format")
                reqs = reader(plain, ReadOptions(kv_bytes_per_token, layout))
        except ScenarioError as e:
            if plain != path and e.file == str(plain):
                e.file = f"{path} (decompressed)"
            raise
    if plain != path:  # the source names the file given, not the temporary one
        reqs = replace(reqs, source=str(path) + reqs.source[len(str(plain)):])
    return reqs

