"""The plain request trace: kvviz's own format for prompts with block hashes, for traces written
by hand or by a script rather than published by Mooncake or Qwen/Bailian. One request per line,
as JSONL or as CSV:

    {"time": 0.25, "input_tokens": 40, "output_tokens": 8, "block_tokens": 16, "hash_ids": [1, 2]}

    time,input_tokens,output_tokens,block_tokens,hash_ids
    0.25,40,8,16,1 2

- `time`: arrival in seconds (a number >= 0), never earlier than the line before.
- `input_tokens`, `output_tokens`: integers >= 0.
- `block_tokens`: tokens per hash id, an integer >= 1, **required on every line and the same on
  every line** (one trace, one block size; the published formats imply theirs: 512 Mooncake,
  16 Qwen/Bailian, and a plain trace has no such convention to fall back on).
- `hash_ids`: the prompt's block hashes in order, integers (64-bit). In a CSV cell they are
  separated by spaces (or commas inside a quoted cell, with or without [ ]); an empty cell is a
  prompt of no complete block.

A CSV is told by a header line naming `hash_ids`; its columns may come in any order; the
separator is a comma; blank lines are skipped.
"""
from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterator
from pathlib import Path

from ..errors import ScenarioError
from .common import BOM, read_bytes
from .jsonl import Record, hash_ids, integer, require, timestamp

PLAIN_KEYS = ("time", "input_tokens", "output_tokens", "block_tokens", "hash_ids")
_INT = re.compile(r"[+-]?[0-9]+")
_SEPARATORS = re.compile(r"[\s,]+")


def plain_record(rec: Record, path: Path, line: int) -> tuple[float, int, int, int, list[int]]:
    """(time s, input_tokens, output_tokens, block_tokens, hash_ids) of one checked line."""
    require(rec, PLAIN_KEYS, "plain", path, line)
    t = timestamp(rec, "time", path, line)
    n_in = integer(rec, "input_tokens", path, line)
    n_out = integer(rec, "output_tokens", path, line)
    tokens = integer(rec, "block_tokens", path, line, 1)
    return t, n_in, n_out, tokens, hash_ids(rec, path, line)


def _header(text_line: str) -> list[str]:
    return [c.strip().lower() for c in next(csv.reader([text_line]))]


def is_plain_csv(path: Path) -> bool:
    """Whether the file's first non-blank line is a CSV header naming hash_ids."""
    head = read_bytes(path, 65536).removeprefix(BOM)
    for raw in head.split(b"\n"):
        if raw.strip():
            try:
                return "hash_ids" in _header(raw.decode("utf-8"))
            except (UnicodeDecodeError, csv.Error):
                return False
    return False


def _number(cell: str) -> int | float | str:
    """A cell as int, float or (unparsable) the string itself: the field checks name it."""
    cell = cell.strip()
    if _INT.fullmatch(cell):
        return int(cell)
    try:
        v = float(cell)
    except ValueError:
        return cell
    return v if math.isfinite(v) else cell


def _ids(cell: str) -> list[int] | str:
    """A hash_ids cell as a list of ints, or the cell itself (which the check then refuses)."""
    body = cell.strip()
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    parts = [p for p in _SEPARATORS.split(body) if p]
    if not all(_INT.fullmatch(p) for p in parts):
        return cell
    return [int(p) for p in parts]


def csv_records(path: Path, text: str) -> Iterator[tuple[int, Record]]:
    """(line number, record dict) per non-blank data line of a plain CSV trace, the cells
    converted to numbers and lists where they read as such (plain_record checks the rest)."""
    lines = text.splitlines()
    first = next(i for i, ln in enumerate(lines) if ln.strip())
    names = _header(lines[first])
    twice = sorted({c for c in names if c and names.count(c) > 1})
    if twice:  # a record keeps one of them: which?
        raise ScenarioError(f"column(s) {', '.join(twice)} named twice in the header", str(path), f"line {first + 1}")
    missing = [k for k in PLAIN_KEYS if k not in names]
    if missing:
        raise ScenarioError(f"the header lacks column(s) {', '.join(missing)} (a plain CSV trace has "
                            f"{', '.join(PLAIN_KEYS)})", str(path), f"line {first + 1}")
    for i in range(first + 1, len(lines)):
        if not lines[i].strip():
            continue
        try:
            cells = next(csv.reader([lines[i]]))
        except csv.Error as e:
            raise ScenarioError(f"malformed CSV: {e}", str(path), f"line {i + 1}") from None
        if len(cells) != len(names):
            raise ScenarioError(f"{len(cells)} fields where the header names {len(names)}",
                                str(path), f"line {i + 1}")
        rec = {k: (_ids(c) if k == "hash_ids" else _number(c)) for k, c in zip(names, cells)}
        yield i + 1, rec
