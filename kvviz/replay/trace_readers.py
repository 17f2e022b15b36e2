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
from pathlib import Path

import numpy as np

from ..errors import ScenarioError
from ..limits import MAX_BYTES
from .model import Requests

COLUMNS = ("time", "id", "size")
FORMATS = ("auto", "csv", "oracleGeneral", "mooncake", "qwen")
ORACLE_RECORD = np.dtype([("time", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
# KV bytes per token when a JSONL trace is replayed as blocks: Llama-2-70B (80 layers, 8 KV heads
# of 128 dims, K and V, FP16), as in the attention_store presets.
DEFAULT_KV_BYTES_PER_TOKEN = 2 * 80 * 8 * 128 * 2


BOM = b"\xef\xbb\xbf"


def detect_format(path: Path) -> str:
    """csv, oracleGeneral or jsonl by the file's first bytes (and the name for oracleGeneral)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as e:
        raise ScenarioError(f"cannot read the trace: {e.strerror or e}", str(path)) from None
    if ".oraclegeneral" in path.name.lower() or b"\0" in head:
        return "oracleGeneral"
    stripped = head.removeprefix(BOM).lstrip()
    if stripped.startswith(b"{"):
        return "jsonl"
    first = stripped.split(b"\n", 1)[0]
    if path.suffix.lower() == ".csv" or b"," in first:
        return "csv"  # the CSV reader names a missing column
    raise ScenarioError("not a trace format kvviz knows: expected a CSV with header time,id,size, libCacheSim "
                        "oracleGeneral binary (24-byte records), or a Mooncake or Qwen/Bailian JSONL request "
                        "trace", str(path), "line 1")


def read_trace(path: str | Path, fmt: str = "auto",
               kv_bytes_per_token: int = DEFAULT_KV_BYTES_PER_TOKEN) -> Requests:
    path = Path(path)
    if fmt not in FORMATS:
        raise ScenarioError(f"unknown trace format {fmt!r} (one of: {', '.join(FORMATS)})", "--format")
    kind = detect_format(path) if fmt == "auto" else fmt
    if kind == "csv":
        return read_csv(path)
    if kind == "oracleGeneral":
        return read_oracle_general(path)
    return read_blocks(path, kv_bytes_per_token, None if kind == "jsonl" else kind)


# --- time,id,size CSV --------------------------------------------------------------------------

def read_csv(path: str | Path, fast: bool = True) -> Requests:
    """A CSV with header `time,id,size` (extra columns ignored; rows in request order). Object ids
    are strings compared as written ("07" and "7" are two objects), numbered by first request.

    pyarrow's CSV reader (kvviz[replay]) reads a well-formed file, in C on every core; anything it
    refuses, and every file where pyarrow is missing (or `fast` is False), goes through kvviz's own
    reader, which gives the same requests and names the line of a bad row."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ScenarioError(f"cannot read the trace: {e.strerror or e}", str(path)) from None
    data = data.removeprefix(BOM)  # a UTF-8 byte order mark (spreadsheets write one)
    cut = data.find(b"\n")
    header = [h.strip() for h in (data if cut < 0 else data[:cut]).decode("utf-8", "replace").split(",")]
    got = _arrow_columns(data, header) if fast and all(c in header for c in COLUMNS) else None
    if got is None:
        times, ids, sizes = _exact_columns(path, data)
    else:
        times, ids, sizes = got
    _check_values(path, times, sizes)
    return Requests(ids, sizes, times, str(path))


def _arrow_columns(data: bytes, header: list[str]):
    """(times, ids, sizes) through pyarrow, or None: pyarrow missing, or anything it would read
    differently from kvviz's reader (a lone CR as a line end, an empty line or field, a bad number)."""
    try:
        import pyarrow as pa
        import pyarrow.csv as pcsv
    except ImportError:
        return None
    lone_cr = b"\r" in data and data.count(b"\r") != data.count(b"\r\n")
    if lone_cr or b"\n\n" in data or b"\n\r\n" in data:
        return None
    names = [f"c{i}" for i in range(len(header))]
    it, ii, isz = (names[header.index(c)] for c in COLUMNS)
    try:
        table = pcsv.read_csv(pa.BufferReader(data), read_options=pcsv.ReadOptions(skip_rows=1, column_names=names),
                              parse_options=pcsv.ParseOptions(ignore_empty_lines=False),
                              convert_options=pcsv.ConvertOptions(
                                  include_columns=[it, ii, isz], null_values=[], strings_can_be_null=False,
                                  column_types={it: pa.float64(), ii: pa.binary(), isz: pa.int64()}))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if table.num_rows == 0:
        return None
    ids = table.column(ii).combine_chunks().dictionary_encode().indices.to_numpy().astype(np.int64)
    return table.column(it).to_numpy(), ids, table.column(isz).to_numpy()


def _exact_columns(path: Path, data: bytes):
    """kvviz's own reader: numbers parsed by numpy chunk by chunk (quoted fields by the csv
    module); a bad row is named by its line."""
    if not data.strip():
        raise ScenarioError("empty trace", str(path), "line 1")
    data = data.replace(b"\r\n", b"\n")
    cut = data.find(b"\n")
    head, body = (data, b"") if cut < 0 else (data[:cut], data[cut + 1:])
    header = [h.strip() for h in head.decode("utf-8", "replace").split(",")]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise ScenarioError(f"missing column(s) {', '.join(missing)} (the header must name time,id,size)",
                            str(path), "line 1")
    if body.endswith(b"\n"):
        body = body[:-1]
    if not body:
        raise ScenarioError("the trace has no requests", str(path), "line 2")
    width = len(header)
    it, ii, isz = (header.index(c) for c in COLUMNS)
    if b'"' in body:
        cols = _quoted_columns(path, body, width)
        times, sizes = _numbers(path, cols[it], "time", np.float64, float), _numbers(path, cols[isz], "size", np.int64, int)
        ids = _Ids()
        ids.add(cols[ii])
    else:
        times, sizes, ids = _read_chunks(path, body, width, it, ii, isz)
    return times, ids.dense(), sizes


def _check_values(path: Path, times: np.ndarray, sizes: np.ndarray) -> None:
    bad = np.flatnonzero(sizes < 0)
    if len(bad):
        raise ScenarioError(f"size: must be >= 0 (got {sizes[bad[0]]})", str(path), f"line {bad[0] + 2}")
    bad = np.flatnonzero(sizes > MAX_BYTES)
    if len(bad):
        raise ScenarioError(f"size: beyond {MAX_BYTES:.3g} bytes (got {sizes[bad[0]]})", str(path),
                            f"line {bad[0] + 2}")
    bad = np.flatnonzero(~np.isfinite(times) | (times < 0))
    if len(bad):
        raise ScenarioError(f"time: must be a finite number >= 0 (got {times[bad[0]]})", str(path),
                            f"line {bad[0] + 2}")
    back = np.flatnonzero(np.diff(times) < 0)
    if len(back):
        i = back[0] + 1
        raise ScenarioError(f"time goes backwards ({times[i]} after {times[i - 1]}); requests must be in time "
                            f"order", str(path), f"line {i + 2}")


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


def _read_chunks(path: Path, body: bytes, width: int, it: int, ii: int, isz: int):
    times, sizes, ids = [], [], _Ids()
    start, line = 0, 2
    while start < len(body):
        end = body.find(b"\n", start + CHUNK_BYTES)
        end = len(body) if end < 0 else end
        chunk = body[start:end]
        _check_widths(path, chunk, width, line)
        fields = chunk.replace(b"\n", b",").split(b",")
        times.append(_numbers(path, fields[it::width], "time", np.float64, float, line))
        sizes.append(_numbers(path, fields[isz::width], "size", np.int64, int, line))
        ids.add(fields[ii::width])
        line += len(times[-1])
        start = end + 1
    return np.concatenate(times), np.concatenate(sizes), ids


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


def _check_widths(path: Path, body: bytes, width: int, first_line: int = 2) -> None:
    """Every row has `width` fields: commas per line counted on the bytes, without a Python loop."""
    b = np.frombuffer(body, dtype=np.uint8)
    newlines, commas = np.flatnonzero(b == ord("\n")), np.flatnonzero(b == ord(","))
    lines = len(newlines) + 1
    if width > 1 and len(commas) == lines * (width - 1):
        # the common case, checked cheaply: each newline lies between its line's last comma
        # and the next line's first
        c = commas.reshape(lines, width - 1)
        if np.all(c[:-1, -1] < newlines) and np.all(newlines < c[1:, 0]):
            return
    ends = np.append(np.flatnonzero(b == ord("\n")), len(b))
    starts = np.concatenate(([0], ends[:-1] + 1))
    commas = np.concatenate(([0], np.cumsum(b == ord(","))))  # commas[k]: commas in b[:k]
    fields = commas[ends] - commas[starts] + 1
    fields[starts == ends] = 0  # a blank line
    wrong = np.flatnonzero(fields != width)
    if len(wrong):
        i = int(wrong[0])
        raise ScenarioError(f"expected {width} fields, got {fields[i]}", str(path), f"line {i + first_line}")


def _quoted_columns(path: Path, body: bytes, width: int) -> list:
    reader = csv.reader(body.decode("utf-8", "replace").split("\n"))
    try:
        rows = list(reader)
    except csv.Error as e:
        why = "a carriage return inside a row (lines must end in \\n or \\r\\n)" if "new-line" in str(e) else str(e)
        raise ScenarioError(why, str(path), f"line {reader.line_num + 1}") from None
    for n, row in enumerate(rows, 2):
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
