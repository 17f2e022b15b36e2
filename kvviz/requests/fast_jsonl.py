"""Fast paths for Mooncake JSONL traces, tried in turn, each handing back a result only when it
is certain to equal what the strict, line-by-line reader (kvviz.requests.jsonl, prompts.read)
would give. On anything unusual, or any doubt, they answer None and the strict reader reads the
file again, so every refusal keeps its exact message and line number (tests/test_hostile_traces.py):
1. the compiled scanner (kvviz/requests/native/_mooncake.pyx): the traces' own shape (the four
   keys, integers only), numbers straight into int64 arrays; its docstring gives the grammar;
2. orjson (optional: the `replay` extra) for any other JSON, the fields checked column-wise.

Measured on 10 time-shifted copies of the Mooncake conversation trace (120,310 lines, 2.9M
hash ids, 34 MB; 2 cores, other jobs running): the strict reader 0.97-1.04 s; the scanner
0.08-0.14 s; orjson about 0.3 s, of which the parse is 0.19-0.21 s with the garbage collector
paused (0.48-0.52 s with it running: 240K new lists and dicts set off collections that walk them
all). pyarrow's JSON reader took 0.19-0.25 s on two threads (0.28-0.34 s on one), plus 0.18 s to
import it, and its errors name no line: no gain over orjson worth a second set of rules.

Why a file orjson's path accepts reads the same as the strict reader reads it:
- lines: ASCII only (so no byte of a multi-byte separator str.splitlines would cut at) and a
  carriage return only before a newline; then splitting the bytes at b"\\n" gives the strict
  reader's lines, at the same numbers. A line blank to bytes.strip() is blank to str.strip();
  the converse can fail (\\x1c-\\x1f), and such a line then fails orjson: strict reader.
- JSON: orjson rejects all the json module rejects, and more (NaN, Infinity, 1e400, lone
  surrogates: strict reader). It keeps the last of two equal keys, which the strict reader
  refuses; so the file's double quotes must number exactly twice the keys of the records: each
  key takes at least two, so any key given twice, any key of a nested object and any string
  value makes the count larger.
- depth: exactly one '{' and one '[' per line. String contents could only add to those counts,
  so each line is one object whose one list is hash_ids: two levels deep.
- fields, as mooncake_record checks them: the four keys present (others may be there, numbers
  only, as the quote count says); timestamp an int or a float, finite, >= 0, well inside the time
  range; input_length and output_length ints within [0, MAX_TOKENS] (a float such as 6758.0,
  which the strict reader takes, goes to it); hash_ids a list of ints within int64 (orjson reads
  an integer beyond 64 bits as a float: caught); ceil(input_length / 512) ± 1 ids.
- time order: the strict reader's own check (in_time_order), on the same times and lines.
"""
from __future__ import annotations

from itertools import chain
from operator import itemgetter

import numpy as np

from ..gc_pause import gc_paused
from ..limits import MAX_NS, MAX_TOKENS
from .jsonl import MOONCAKE, MOONCAKE_BLOCK_TOKENS, MOONCAKE_KEYS, NS_PER_UNIT, in_time_order
from .native import room, scanner

try:
    import orjson
except ImportError:  # optional: without it every file takes the strict reader
    orjson = None  # type: ignore[assignment]  # optional: None where absent, tested before every use

_FIELDS = itemgetter(*MOONCAKE_KEYS)
# Timestamps (ms) up to here are surely inside the simulator's range; nearer the edge the strict
# reader decides (its check is exact integer arithmetic on an int).
_LATEST_MS = MAX_NS / NS_PER_UNIT[MOONCAKE] * 0.999

# (lines, times_s, input_tokens, output_tokens, hash_offsets, hashes): PromptRequests' arrays
MooncakeArrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def mooncake(data: bytes, source: str) -> MooncakeArrays | None:
    """A Mooncake JSONL trace's bytes as PromptRequests' arrays (lines, times_s, input_tokens,
    output_tokens, hash_offsets, hashes; file order, every line checked), or None: the strict
    reader must read it (to refuse it, or because this path cannot be sure). Raises only what
    the strict reader would raise for the same file (time order)."""
    scan = scanner()
    if scan is not None:
        got = scan(data, *room(data))
        if got is not None:  # array('q')s, as numpy arrays without a copy
            return _requests(source, *(np.frombuffer(a, dtype=np.int64) for a in got)) if len(got[0]) else None
    if orjson is None or not data.isascii() or data.count(b"\r") != data.count(b"\r\n"):
        return None
    # the 240K lists and dicts (and 120K tuples) made here hold no cycles: with the collector on, their
    # number sets off collections that walk them all, again and again (1.1 s of collecting for 0.4 s
    # of work at 2.9M ids)
    with gc_paused():
        return _mooncake(data, source)


def _requests(source: str, lines: np.ndarray, recorded: np.ndarray, inputs: np.ndarray, outputs: np.ndarray,
              counts: np.ndarray, hashes: np.ndarray) -> MooncakeArrays | None:
    """The arrays of records whose fields passed their checks one by one; None where the ids
    contradict input_length (the strict reader names the line)."""
    if np.any(np.abs(counts - -(-inputs // MOONCAKE_BLOCK_TOKENS)) > 1):
        return None
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    times_s = recorded / 1000  # as the strict reader's t / 1000: every such timestamp is exact as a float
    in_time_order(times_s, lines, source, "timestamp")
    return lines, times_s, inputs, outputs, offsets, hashes


def _mooncake(data: bytes, source: str) -> MooncakeArrays | None:
    lines = data.split(b"\n")
    kept = list(filter(bytes.strip, lines))
    if not kept:
        return None
    if len(kept) == len(lines) or (len(kept) == len(lines) - 1 and not lines[-1].strip()):
        numbers = np.arange(1, len(kept) + 1, dtype=np.int64)
    else:  # blank lines inside: each record keeps its own line number
        numbers = np.flatnonzero(np.fromiter(map(bool, map(bytes.strip, lines)), bool, len(lines))) + 1
    n = len(kept)
    if data.count(b"{") != n or data.count(b"[") != n:
        return None
    try:
        recs = list(map(orjson.loads, kept))
    except orjson.JSONDecodeError:
        return None
    if set(map(type, recs)) != {dict}:
        return None
    if data.count(b'"') != 2 * sum(map(len, recs)):
        return None
    try:
        ts, n_in, n_out, ids = zip(*map(_FIELDS, recs))
    except KeyError:
        return None
    if not set(map(type, ts)) <= {int, float} or set(map(type, n_in)) | set(map(type, n_out)) != {int} \
            or set(map(type, ids)) != {list} or not set(map(type, chain.from_iterable(ids))) <= {int}:
        return None
    try:
        inputs, outputs = np.array(n_in, dtype=np.int64), np.array(n_out, dtype=np.int64)
        counts = np.fromiter(map(len, ids), np.int64, n)
        hashes = np.fromiter(chain.from_iterable(ids), np.int64, int(counts.sum()))
    except OverflowError:
        return None
    recorded = np.array(ts, dtype=np.float64)
    if not (np.all(np.isfinite(recorded)) and recorded.min() >= 0 and recorded.max() <= _LATEST_MS):
        return None
    if inputs.min() < 0 or outputs.min() < 0 or max(inputs.max(), outputs.max()) > MAX_TOKENS:
        return None
    return _requests(source, numbers, recorded, inputs, outputs, counts, hashes)
