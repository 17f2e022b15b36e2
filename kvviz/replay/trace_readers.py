"""Request traces a replay reads, told apart by content (or named with --format):

- `csv`: a header naming `time,id,size` (other columns ignored), one request per row in time
  order. Read as bytes and split once, numbers parsed by numpy: about 0.6 s per million rows
  here, against 3.2 s for Python's csv module (benchmarks/bench_replay.py). Quoted fields
  (a `"` anywhere) take the csv-module path.
- `oracleGeneral`: libCacheSim's binary format, 24-byte records (uint32 time, uint64 id, uint32
  size, int64 next request); the last field is recomputed, not trusted.
- `mooncake` / `qwen`: the JSONL request traces of kvviz.mechanisms.attention_store.trace_formats
  (read and checked there), as block requests: each hash id of a request's prompt (512-token
  blocks in Mooncake, 16 in Qwen/Bailian) is one request for an object of one block's KV bytes,
  in prompt order, at the request's timestamp. Every block counts full: the partial last block
  of a prompt re-hashes when it fills, so it is a different object anyway.

Bad input raises ScenarioError naming the file and the line (or byte offset).
"""
from __future__ import annotations

import csv
import re
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..errors import ScenarioError
from ..io import scratch_tree
from ..limits import MAX_BYTES
from .model import Requests

COLUMNS = ("time", "id", "size")
FORMATS = ("auto", "csv", "txt", "oracleGeneral", "mooncake", "qwen")
ORACLE_RECORD = np.dtype([("time", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
# KV bytes per token when a JSONL trace is replayed as blocks: Llama-2-70B (80 layers, 8 KV heads
# of 128 dims, K and V, FP16), as in the attention_store presets.
DEFAULT_KV_BYTES_PER_TOKEN = 2 * 80 * 8 * 128 * 2


BOM = b"\xef\xbb\xbf"


def detect_format(path: Path) -> str:
    """csv, oracleGeneral, jsonl or txt by the file's first bytes (and the name for oracleGeneral
    and txt)."""
    head = _read_bytes(path, 4096)
    if ".oraclegeneral" in path.name.lower() or b"\0" in head:
        return "oracleGeneral"
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


ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def read_trace(path: str | Path, fmt: str = "auto", kv_bytes_per_token: int = DEFAULT_KV_BYTES_PER_TOKEN,
               layout: CsvLayout | None = None) -> Requests:
    """Any trace kvviz reads, by its content (or `fmt`); zstd-compressed ones (libCacheSim's
    datasets ship as .oracleGeneral.zst) are decompressed to a temporary file first."""
    path = Path(path)
    if fmt not in FORMATS:
        raise ScenarioError(f"unknown trace format {fmt!r} (one of: {', '.join(FORMATS)})", "--format")
    says_csv = layout is not None and layout.says_csv
    if says_csv and fmt not in ("auto", "csv"):
        raise ScenarioError(f"--columns, --delimiter and --header describe a CSV, not {fmt}", "--format")
    with open_decompressed(path) as plain:
        kind = "csv" if says_csv else detect_format(plain) if fmt == "auto" else fmt
        try:
            if kind == "csv":
                reqs = read_csv(plain, layout=layout)
            elif kind == "txt":
                reqs = read_txt(plain)
            elif kind == "oracleGeneral":
                reqs = read_oracle_general(plain)
            else:
                reqs = read_blocks(plain, kv_bytes_per_token, None if kind == "jsonl" else kind)
        except ScenarioError as e:
            if plain != path and e.file == str(plain):
                e.file = f"{path} (decompressed)"
            raise
    if plain != path:  # the source names the file given, not the temporary one
        reqs = replace(reqs, source=str(path) + reqs.source[len(str(plain)):])
    return reqs


@contextmanager
def open_decompressed(path: Path):
    """The path itself, or a temporary file holding its zstd-decompressed content (named as the
    file without .zst, so the format is still told by name)."""
    if _read_bytes(path, len(ZSTD_MAGIC)) != ZSTD_MAGIC:
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


# --- CSV: by header names, or by field numbers as libCacheSim's CSV reader takes them ---------

@dataclass(frozen=True)
class CsvLayout:
    """Where a CSV's fields are. By default a header names time,id,size. With `id` set, fields go by
    1-based number, as libCacheSim's CSV reader takes them (cachesim -t "obj-id-col: 2, ..."):
    without a time field a request's time is its index, without a size field it is 1 byte, as
    libCacheSim reads such a trace."""
    id: int | None = None
    time: int | None = None
    size: int | None = None
    delimiter: str | None = None  # None: told from the first line (sniff_delimiter)
    header: str = "auto"  # yes | no | auto: the first line is a header if its time or size is no number
    source: str = "--columns"  # where the field numbers are given, for messages

    @property
    def says_csv(self) -> bool:
        """Anything but the defaults: the file is a CSV, whatever its content suggests."""
        return self.id is not None or self.delimiter is not None or self.header != "auto"


HEADER_CHOICES = ("auto", "yes", "no")
_DELIMITER_NAMES = {"\\t": "\t", "tab": "\t", "space": " ", "comma": ",", "semicolon": ";", "pipe": "|"}


def parse_layout(columns: str | None = None, delimiter: str | None = None, header: str | None = None,
                 source: str = "--columns") -> CsvLayout:
    """The CLI's --columns time=1,id=2,size=3 / --delimiter / --header (the app's "CSV fields")."""
    sep = None if delimiter is None else _DELIMITER_NAMES.get(delimiter.lower(), delimiter)
    if sep is not None and (len(sep) != 1 or sep in "\r\n\"" or not sep.isprintable() and sep != "\t"):
        raise ScenarioError(f"one character (or tab, space, comma, semicolon, pipe), not {delimiter!r}", "--delimiter")
    if header is not None and header not in HEADER_CHOICES:
        raise ScenarioError(f"one of {', '.join(HEADER_CHOICES)}, not {header!r}", "--header")
    fields: dict[str, int] = {}
    for part in (columns or "").split(","):
        if not part.strip() and columns is None:
            continue
        name, eq, number = part.partition("=")
        name = name.strip().lower()
        if name not in COLUMNS or not eq or not number.strip().isdigit() or int(number) < 1:
            raise ScenarioError(f"expected NAME=FIELD with NAME one of time, id, size and FIELD a number from 1 "
                                f"(got {part.strip()!r})", source)
        if name in fields:
            raise ScenarioError(f"{name} is given twice", source)
        fields[name] = int(number)
    if fields and "id" not in fields:
        raise ScenarioError("name the id field (id=N); time and size may be left out", source)
    if len(set(fields.values())) < len(fields):
        raise ScenarioError("two names share one field", source)
    if not fields and header == "no":
        raise ScenarioError(f"without a header, say where the fields are with {source} (e.g. id=2,size=3)", "--header")
    return CsvLayout(fields.get("id"), fields.get("time"), fields.get("size"), sep, header or "auto", source)


def read_csv(path: str | Path, fast: bool = True, layout: CsvLayout | None = None) -> Requests:
    """A CSV, rows in request order: by default with a header naming `time,id,size` (extra columns
    ignored), or laid out as `layout` says. Object ids are strings compared as written ("07" and
    "7" are two objects), numbered by first request.

    pyarrow's CSV reader (kvviz[replay]) reads a well-formed file, in C on every core; anything it
    refuses, and every file where pyarrow is missing (or `fast` is False), goes through kvviz's own
    reader, which gives the same requests and names the line of a bad row."""
    path = Path(path)
    layout = layout or CsvLayout()
    data = _read_bytes(path).removeprefix(BOM)  # a UTF-8 byte order mark (spreadsheets write one)
    if not data or data.isspace():
        raise ScenarioError("empty trace", str(path), "line 1")
    cut = data.find(b"\n")
    line1 = (data if cut < 0 else data[:cut]).rstrip(b"\r").decode("utf-8", "replace")
    delimiter = layout.delimiter or sniff_delimiter(line1)
    sep = delimiter.encode()
    first = [f.strip().strip('"') for f in line1.split(delimiter)]
    if layout.id is None:
        missing = [c for c in COLUMNS if c not in first]
        if missing:
            raise ScenarioError(f"missing column(s) {', '.join(missing)} (the header must name time,id,size; "
                                f"or give the field numbers: {layout.source} id=N,...)", str(path), "line 1")
        cols = tuple(first.index(c) for c in COLUMNS)
        skip = 1
    else:
        for name, number in (("id", layout.id), ("time", layout.time), ("size", layout.size)):
            if number and number > len(first):
                raise ScenarioError(f"{name} is field {number}, but line 1 has {len(first)} field(s) split by "
                                    f"{delimiter!r}", str(path), layout.source)
        cols = tuple(None if n is None else n - 1 for n in (layout.time, layout.id, layout.size))
        skip = int(layout.header == "yes" or layout.header == "auto" and _is_header(first, cols))
    got = _arrow_columns(data, len(first), cols, skip, delimiter) if fast else None
    if got is None:
        got = _exact_columns(path, data, len(first), cols, skip, sep)
    times, ids, sizes = got
    n = len(ids)
    times = np.arange(n, dtype=np.float64) if times is None else times
    sizes = np.ones(n, dtype=np.int64) if sizes is None else sizes
    _check_values(path, times, sizes, 1 + skip)
    return Requests(ids, sizes, times, str(path))


def sniff_delimiter(line: str) -> str:
    """The separator of a first line: the most frequent of , tab ; | (ties in that order), else a
    space where there is one, else a comma (a file of one field)."""
    counts = [(line.count(c), -i, c) for i, c in enumerate(",\t;|")]
    best = max(counts)
    if best[0]:
        return best[2]
    return " " if " " in line.strip() else ","


def _is_header(first: list[str], cols: tuple) -> bool:
    """A first line whose time or size field is not a number names the fields."""
    for i in (cols[0], cols[2]):
        if i is not None:
            try:
                float(first[i])
            except ValueError:
                return True
    return False


def _read_bytes(path: Path, limit: int = -1) -> bytes:
    """The file's bytes (its first `limit`), or a ScenarioError naming it."""
    try:
        with open(path, "rb") as f:
            return f.read(limit)
    except OSError as e:
        raise ScenarioError(f"cannot read the trace: {e.strerror or e}", str(path)) from None


def _arrow_columns(data: bytes, width: int, cols: tuple, skip: int, delimiter: str):
    """(times, ids, sizes) through pyarrow (None for a column the layout lacks), or None: pyarrow
    missing, or anything it would read differently from kvviz's reader (a lone CR as a line end,
    an empty line or field, a bad number)."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.csv as pcsv
    except ImportError:
        return None
    if b"\r" in data and data.count(b"\r") != data.count(b"\r\n"):
        return None
    names = [f"c{i}" for i in range(width)]
    types = dict(zip((names[i] if i is not None else None for i in cols), (pa.float64(), pa.binary(), pa.int64())))
    types.pop(None, None)
    try:
        table = pcsv.read_csv(pa.BufferReader(data), read_options=pcsv.ReadOptions(skip_rows=skip, column_names=names),
                              parse_options=pcsv.ParseOptions(delimiter=delimiter, ignore_empty_lines=False),
                              convert_options=pcsv.ConvertOptions(include_columns=list(types), column_types=types,
                                                                  null_values=[], strings_can_be_null=False))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    it, ii, isz = (None if i is None else table.column(names[i]) for i in cols)
    # An empty id is a blank line where the id is the only field (elsewhere an empty number
    # fails above); kvviz's reader names its line.
    if table.num_rows == 0 or pc.min(pc.binary_length(ii)).as_py() == 0:
        return None
    # One dictionary across pyarrow's chunks, so no copy into one array first.
    ids = np.concatenate([c.indices.to_numpy() for c in ii.dictionary_encode().chunks], dtype=np.int64)
    return (None if it is None else it.to_numpy()), ids, (None if isz is None else isz.to_numpy())


def _exact_columns(path: Path, data: bytes, width: int, cols: tuple, skip: int, sep: bytes):
    """kvviz's own reader: numbers parsed by numpy chunk by chunk (quoted fields by the csv
    module); a bad row is named by its line."""
    data = data.replace(b"\r\n", b"\n")
    if skip:
        cut = data.find(b"\n")
        data = b"" if cut < 0 else data[cut + 1:]
    body = data[:-1] if data.endswith(b"\n") else data
    if not body:
        raise ScenarioError("the trace has no requests", str(path), f"line {1 + skip}")
    it, ii, isz = cols
    if b'"' in body:
        fields = _quoted_columns(path, body, width, sep, 1 + skip)
        times = None if it is None else _numbers(path, fields[it], "time", np.float64, float, 1 + skip)
        sizes = None if isz is None else _numbers(path, fields[isz], "size", np.int64, int, 1 + skip)
        ids = _Ids()
        ids.add(fields[ii])
        return times, ids.dense(), sizes
    return _read_chunks(path, body, width, cols, sep, 1 + skip)


def _check_values(path: Path, times: np.ndarray, sizes: np.ndarray, first_line: int = 2) -> None:
    """Sizes in range, times finite, >= 0 and in order; the first bad row named by its line. The
    whole-array tests come first: on a good trace (the usual case) nothing else is computed."""
    if len(sizes) and (sizes.min() < 0 or sizes.max() > MAX_BYTES):
        i = int(np.flatnonzero((sizes < 0) | (sizes > MAX_BYTES))[0])
        why = "must be >= 0" if sizes[i] < 0 else f"beyond {MAX_BYTES:.3g} bytes"
        raise ScenarioError(f"size: {why} (got {sizes[i]})", str(path), f"line {i + first_line}")
    if not (np.isfinite(times).all() and (len(times) == 0 or times.min() >= 0)):
        i = int(np.flatnonzero(~np.isfinite(times) | (times < 0))[0])
        raise ScenarioError(f"time: must be a finite number >= 0 (got {times[i]})", str(path), f"line {i + first_line}")
    back = times[1:] < times[:-1]
    if back.any():
        i = int(np.flatnonzero(back)[0]) + 1
        raise ScenarioError(f"time goes backwards ({times[i]} after {times[i - 1]}); requests must be in time "
                            f"order", str(path), f"line {i + first_line}")


def first_request_ids(values: np.ndarray) -> np.ndarray:
    """Object ids 0..k-1 numbered in order of first request, from any integer ids: every reader
    numbers objects this way, so one trace in two formats gives the same requests."""
    values = np.asarray(values)
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    _, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.reshape(-1)]


CHUNK_BYTES = 8 << 20  # rows are split and parsed this many bytes at a time: a few million small
                       # objects alive at once, not tens of millions


def _read_chunks(path: Path, body: bytes, width: int, cols: tuple, sep: bytes, first_line: int):
    it, ii, isz = cols
    times, sizes, ids = [], [], _Ids()
    start, line = 0, first_line
    while start < len(body):
        end = body.find(b"\n", start + CHUNK_BYTES)
        end = len(body) if end < 0 else end
        chunk = body[start:end]
        _check_widths(path, chunk, width, sep, line)
        fields = chunk.replace(b"\n", sep).split(sep)
        ids.add(fields[ii::width])
        if it is not None:
            times.append(_numbers(path, fields[it::width], "time", np.float64, float, line))
        if isz is not None:
            sizes.append(_numbers(path, fields[isz::width], "size", np.int64, int, line))
        line += len(fields) // width
        start = end + 1
    return (np.concatenate(times) if times else None), ids.dense(), (np.concatenate(sizes) if sizes else None)


class _Ids:
    """Object ids as 0..objects-1, chunk by chunk. Integer ids (the usual case) go through numpy,
    twice as fast as a dict of byte strings; digits only and no leading zero, so two different
    strings are never one number ("07", "7"). Any other id, by first request, through a dict."""

    def __init__(self):
        self.ints: list[np.ndarray] | None = []
        self.index: dict = {}
        self.dense_chunks: list[np.ndarray] = []

    def add(self, col: list) -> None:
        if self.ints is not None:
            joined = b"\n".join(col)
            if joined.replace(b"\n", b"").isdigit() and not re.search(rb"(?:^|\n)0[0-9]", joined) \
                    and max(map(len, col)) < 19:  # fits int64
                self.ints.append(np.fromiter(map(int, col), np.int64, len(col)))
                return
            earlier, self.ints = self.ints, None  # from here on, by dict: earlier ints as their strings
            for arr in earlier:
                self._by_dict([b"%d" % v for v in arr.tolist()])
        self._by_dict(col)

    def _by_dict(self, col: list) -> None:
        index = self.index
        index.update(zip(dict.fromkeys(k for k in col if k not in index), range(len(index), len(index) + len(col))))
        self.dense_chunks.append(np.fromiter(map(index.__getitem__, col), np.int64, len(col)))

    def dense(self) -> np.ndarray:
        if self.ints is not None:
            return first_request_ids(np.concatenate(self.ints))
        return np.concatenate(self.dense_chunks)


def _check_widths(path: Path, body: bytes, width: int, sep: bytes, first_line: int) -> None:
    """Every row has `width` fields: separators per line counted on the bytes, without a Python loop."""
    b = np.frombuffer(body, dtype=np.uint8)
    newlines, commas = np.flatnonzero(b == ord("\n")), np.flatnonzero(b == sep[0])
    lines = len(newlines) + 1
    if width > 1 and len(commas) == lines * (width - 1):
        # the common case, checked cheaply: each newline lies between its line's last comma
        # and the next line's first
        c = commas.reshape(lines, width - 1)
        if np.all(c[:-1, -1] < newlines) and np.all(newlines < c[1:, 0]):
            return
    ends = np.append(np.flatnonzero(b == ord("\n")), len(b))
    starts = np.concatenate(([0], ends[:-1] + 1))
    commas = np.concatenate(([0], np.cumsum(b == sep[0])))  # commas[k]: commas in b[:k]
    fields = commas[ends] - commas[starts] + 1
    fields[starts == ends] = 0  # a blank line
    wrong = np.flatnonzero(fields != width)
    if len(wrong):
        i = int(wrong[0])
        raise ScenarioError(f"expected {width} fields, got {fields[i]}", str(path), f"line {i + first_line}")


def _quoted_columns(path: Path, body: bytes, width: int, sep: bytes, first_line: int) -> list:
    reader = csv.reader(body.decode("utf-8", "replace").split("\n"), delimiter=sep.decode())
    try:
        rows = list(reader)
    except csv.Error as e:
        why = "a carriage return inside a row (lines must end in \\n or \\r\\n)" if "new-line" in str(e) else str(e)
        raise ScenarioError(why, str(path), f"line {reader.line_num + first_line - 1}") from None
    for n, row in enumerate(rows, first_line):
        if len(row) != width:
            raise ScenarioError(f"expected {width} fields, got {len(row)}", str(path), f"line {n}")
    return [[c.encode() for c in col] for col in zip(*rows)]


def _numbers(path: Path, col: list, name: str, dtype, conv, first_line: int = 2) -> np.ndarray:
    try:
        return np.fromiter(map(conv, col), dtype, len(col))
    except (ValueError, OverflowError):
        for n, x in enumerate(col, first_line):
            try:
                v = conv(x)
            except ValueError:
                raise ScenarioError(f"{name}: expected a number, got {x.decode('utf-8', 'replace')!r}",
                                    str(path), f"line {n}") from None
            except OverflowError:
                v = None
            if v is None or (dtype is np.int64 and not -2**63 <= v < 2**63):  # Python ints never overflow
                raise ScenarioError(f"{name}: beyond {MAX_BYTES:.3g} (got {x.decode('utf-8', 'replace')})",
                                    str(path), f"line {n}")
        raise


# --- plain text: one object id per line --------------------------------------------------------

def read_txt(path: str | Path) -> Requests:
    """libCacheSim's plain-text trace: one object id per line (surrounding spaces ignored), each
    request 1 byte at the time of its index, as libCacheSim reads it: capacities count objects."""
    path = Path(path)
    data = _read_bytes(path).removeprefix(BOM).replace(b"\r\n", b"\n")
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    if not lines:
        raise ScenarioError("empty trace", str(path), "line 1")
    col = [ln.strip() for ln in lines]
    blank = next((n for n, k in enumerate(col, 1) if not k), None)
    if blank:
        raise ScenarioError("an empty line: every line names one object", str(path), f"line {blank}")
    ids = _Ids()
    for a in range(0, len(col), 1 << 20):
        ids.add(col[a:a + (1 << 20)])
    n = len(col)
    return Requests(ids.dense(), np.ones(n, dtype=np.int64), np.arange(n, dtype=np.float64), str(path))


# --- libCacheSim oracleGeneral -----------------------------------------------------------------

def read_oracle_general(path: str | Path) -> Requests:
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as e:
        raise ScenarioError(f"cannot read the trace: {e.strerror or e}", str(path)) from None
    rec_size = ORACLE_RECORD.itemsize
    if size == 0 or size % rec_size:
        raise ScenarioError(f"an oracleGeneral trace is whole {rec_size}-byte records; this file has {size:,} bytes "
                            f"({size // rec_size:,} records and {size % rec_size} bytes over)", str(path))
    rec = np.fromfile(path, dtype=ORACLE_RECORD)
    ids = first_request_ids(rec["id"])
    times = rec["time"].astype(np.float64)
    back = np.flatnonzero(np.diff(times) < 0)
    if len(back):
        i = int(back[0]) + 1
        raise ScenarioError(f"time goes backwards ({int(times[i])} after {int(times[i - 1])}) in record {i + 1} "
                            f"(byte {i * rec_size:,})", str(path))
    return Requests(ids.astype(np.int64), rec["size"].astype(np.int64), times, str(path))


# --- Mooncake / Qwen JSONL as blocks ------------------------------------------------------------

def read_blocks(path: str | Path, kv_bytes_per_token: int = DEFAULT_KV_BYTES_PER_TOKEN,
                expect: str | None = None) -> Requests:
    from ..mechanisms.attention_store.trace_formats import block_requests
    path = Path(path)
    if kv_bytes_per_token < 1:
        raise ScenarioError(f"KV bytes per token must be >= 1 (got {kv_bytes_per_token})", "--kv-bytes-per-token")
    got = block_requests(path)
    if got is None or (expect and got[0] != expect):
        what = f"a {expect} request trace" if expect else "a Mooncake or Qwen/Bailian request trace"
        raise ScenarioError(f"not {what}: the first record has neither hash_ids with timestamp "
                            f"(Mooncake) nor chat_id (Qwen/Bailian)", str(path), "line 1")
    fmt, tokens, records = got
    for (line, t, _), (_, t_prev, _) in zip(records[1:], records):
        if t < t_prev:
            raise ScenarioError(f"timestamp goes backwards ({t:g} s after {t_prev:g} s); requests must be in "
                                f"time order", str(path), f"line {line}")
    counts = np.array([len(h) for _, _, h in records])
    hashes = np.fromiter((h for _, _, ids in records for h in ids), np.int64, int(counts.sum()))
    times = np.repeat(np.array([t for _, t, _ in records], dtype=np.float64), counts)
    ids = first_request_ids(hashes)
    sizes = np.full(len(ids), tokens * kv_bytes_per_token, dtype=np.int64)
    return Requests(ids.astype(np.int64), sizes, times, f"{path} ({fmt}: {len(records):,} requests as "
                                                         f"{len(ids):,} {tokens}-token blocks)")
