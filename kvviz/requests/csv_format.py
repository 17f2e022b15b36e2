"""CSV request traces: a header naming `time,id,size` (other columns ignored), or any CSV by
field numbers as libCacheSim's CSV reader takes them (`CsvLayout`, the CLI's --columns,
--delimiter and --header). One request per row, in time order.

Read as bytes and split once, numbers parsed by numpy: about 0.6 s per million rows here,
against 3.2 s for Python's csv module (benchmarks/bench_replay.py); pyarrow's reader, where
installed, takes every file it reads exactly as kvviz's reader would. Quoted fields (a `"`
anywhere) take the csv-module path. A bad row is named by its line.
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from ..errors import ScenarioError
from ..limits import MAX_BYTES, MAX_NS
from .common import BOM, DenseIds, read_bytes
from .csv_layout import COLUMNS, HEADER_CHOICES, CsvLayout, parse_layout  # noqa: F401 (their home was here)
from .objects import Requests

MAX_SECONDS = MAX_NS / 1e9  # a row's time (s) in the simulator's integer ns

# The field index (from 0) of the time, id and size; None for a column the layout lacks (never the id)
Cols = tuple["int | None", int, "int | None"]
# (times, dense ids, sizes), None for a column the layout lacks
Columns = tuple["np.ndarray | None", np.ndarray, "np.ndarray | None"]


def read_csv(path: str | Path, fast: bool = True, layout: CsvLayout | None = None) -> Requests:
    """A CSV, rows in request order: by default with a header naming `time,id,size` (extra columns
    ignored), or laid out as `layout` says. Object ids are strings compared as written ("07" and
    "7" are two objects), numbered by first request.

    pyarrow's CSV reader (kvviz[replay]) reads a well-formed file, in C on every core; anything it
    refuses, and every file where pyarrow is missing (or `fast` is False), goes through kvviz's own
    reader, which gives the same requests and names the line of a bad row."""
    path = Path(path)
    layout = layout or CsvLayout()
    data = read_bytes(path).removeprefix(BOM)  # a UTF-8 byte order mark (spreadsheets write one)
    if not data or data.isspace():
        raise ScenarioError("empty trace", str(path), "line 1")
    nul = data.find(b"\0")  # one C scan: a NUL is no text (ids would differ by an invisible byte)
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise ScenarioError("a NUL byte: a CSV trace is text", str(path), f"line {line}")
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
        twice = sorted({c for c in first if c and first.count(c) > 1})
        if twice:  # which of two `id` columns is the id?
            raise ScenarioError(f"column(s) {', '.join(twice)} named twice in the header", str(path), "line 1")
        cols: Cols = (first.index("time"), first.index("id"), first.index("size"))
        skip = 1
    else:
        for name, number in (("id", layout.id), ("time", layout.time), ("size", layout.size)):
            if number and number > len(first):
                raise ScenarioError(f"{name} is field {number}, but line 1 has {len(first)} field(s) split by "
                                    f"{delimiter!r}", str(path), layout.source)
        cols = (None if layout.time is None else layout.time - 1, layout.id - 1,
                None if layout.size is None else layout.size - 1)
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


def _is_header(first: list[str], cols: Cols) -> bool:
    """A first line whose time or size field is not a number names the fields."""
    for i in (cols[0], cols[2]):
        if i is not None:
            try:
                float(first[i])
            except ValueError:
                return True
    return False


def _arrow_columns(data: bytes, width: int, cols: Cols, skip: int, delimiter: str) -> Columns | None:
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
    it, ii, isz = (None if cols[0] is None else table.column(names[cols[0]]), table.column(names[cols[1]]),
                   None if cols[2] is None else table.column(names[cols[2]]))
    # An empty id is a blank line where the id is the only field (elsewhere an empty number
    # fails above); kvviz's reader names its line.
    if table.num_rows == 0 or pc.min(pc.binary_length(ii)).as_py() == 0:
        return None
    # One dictionary across pyarrow's chunks, so no copy into one array first.
    ids = np.concatenate([c.indices.to_numpy() for c in ii.dictionary_encode().chunks], dtype=np.int64)
    return (None if it is None else it.to_numpy()), ids, (None if isz is None else isz.to_numpy())


def _exact_columns(path: Path, data: bytes, width: int, cols: Cols, skip: int, sep: bytes) -> Columns:
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
        ids = DenseIds()
        ids.add(_named_ids(path, fields[ii], 1 + skip))
        return times, ids.dense(), sizes
    return _read_chunks(path, body, width, cols, sep, 1 + skip)


def _check_values(path: Path, times: np.ndarray, sizes: np.ndarray, first_line: int = 2) -> None:
    """Sizes in range, times finite, >= 0, within the simulator's range and in order; the first
    bad row named by its line. The whole-array tests come first: on a good trace (the usual
    case) nothing else is computed."""
    if len(sizes) and (sizes.min() < 0 or sizes.max() > MAX_BYTES):
        i = int(np.flatnonzero((sizes < 0) | (sizes > MAX_BYTES))[0])
        why = "must be >= 0" if sizes[i] < 0 else f"beyond {MAX_BYTES:.3g} bytes"
        raise ScenarioError(f"size: {why} (got {sizes[i]})", str(path), f"line {i + first_line}")
    if len(times) and not (times.min() >= 0 and times.max() <= MAX_SECONDS):  # nan fails both
        i = int(np.flatnonzero(~(times >= 0) | (times > MAX_SECONDS))[0])
        why = "must be a finite number >= 0 (got" if not 0 <= times[i] < np.inf else \
            f"beyond the simulator's time range (at most {MAX_SECONDS:.3g} s; got"
        raise ScenarioError(f"time: {why} {times[i]:g})", str(path), f"line {i + first_line}")
    back = times[1:] < times[:-1]
    if back.any():
        i = int(np.flatnonzero(back)[0]) + 1
        raise ScenarioError(f"time goes backwards ({times[i]} after {times[i - 1]}); requests must be in time "
                            f"order", str(path), f"line {i + first_line}")


CHUNK_BYTES = 8 << 20  # rows are split and parsed this many bytes at a time: a few million small
                       # objects alive at once, not tens of millions


def _read_chunks(path: Path, body: bytes, width: int, cols: Cols, sep: bytes, first_line: int) -> Columns:
    it, ii, isz = cols
    times: list[np.ndarray] = []
    sizes: list[np.ndarray] = []
    ids = DenseIds()
    start, line = 0, first_line
    while start < len(body):
        end = body.find(b"\n", start + CHUNK_BYTES)
        end = len(body) if end < 0 else end
        chunk = body[start:end]
        _check_widths(path, chunk, width, sep, line)
        fields = chunk.replace(b"\n", sep).split(sep)
        ids.add(_named_ids(path, fields[ii::width], line))
        if it is not None:
            times.append(_numbers(path, fields[it::width], "time", np.float64, float, line))
        if isz is not None:
            sizes.append(_numbers(path, fields[isz::width], "size", np.int64, int, line))
        line += len(fields) // width
        start = end + 1
    return (np.concatenate(times) if times else None), ids.dense(), (np.concatenate(sizes) if sizes else None)


def _named_ids(path: Path, col: list[bytes], first_line: int) -> list[bytes]:
    """The id column, refused at the first empty id (two empty ids would be one object)."""
    if b"" in col:
        raise ScenarioError("id: empty", str(path), f"line {col.index(b'') + first_line}")
    return col


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


def _quoted_columns(path: Path, body: bytes, width: int, sep: bytes, first_line: int) -> list[list[bytes]]:
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


def _numbers(path: Path, col: list[bytes], name: str, dtype: type[np.float64] | type[np.int64],
             conv: type[float] | type[int], first_line: int = 2) -> np.ndarray:
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
                                    str(path), f"line {n}") from None
        raise
