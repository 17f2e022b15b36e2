"""JSON-lines request traces: the line reader, the format told from the first record, and the
per-field checks the Mooncake and Qwen/Bailian readers share. Every check raises a
ScenarioError naming the file and the line.

**Mooncake FAST'25** (kvcache-ai/Mooncake `FAST25-release/traces/`): `timestamp` (ms),
`input_length`, `output_length`, `hash_ids` (remapped hashes of the prompt's 512-token blocks,
the last block usually partial).

**Qwen/Bailian** (alibaba-edu/qwen-bailian-usagetraces-anon; KVCache@ATC'25): `chat_id`,
`parent_chat_id` (-1 for a first turn; a missing key or null reads the same), `timestamp` (s),
`input_length`, `output_length`, `turn` (optional), `type`, `hash_ids` (16-token blocks).

**Plain** (kvviz's own, for traces written by hand or by a script; kvviz.requests.plain):
`time` (s), `input_tokens`, `output_tokens`, `block_tokens`, `hash_ids`; as JSONL or CSV.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ScenarioError
from ..limits import MAX_DEPTH, MAX_NS, MAX_TOKENS, nesting_depth

if TYPE_CHECKING:  # numpy is imported where a time check runs: the lean replay path reads no numpy
    import numpy as np

QWEN = "qwen"
MOONCAKE = "mooncake"
PLAIN = "plain"
MOONCAKE_BLOCK_TOKENS = 512
BLOCK_TOKENS = {MOONCAKE: MOONCAKE_BLOCK_TOKENS, QWEN: 16}
NS_PER_UNIT = {MOONCAKE: 1_000_000, QWEN: 1_000_000_000, PLAIN: 1_000_000_000}  # the timestamp's unit: ms, s, s
MOONCAKE_KEYS = ("timestamp", "input_length", "output_length", "hash_ids")
QWEN_KEYS = ("chat_id", "timestamp", "input_length", "output_length")

# One trace line as parsed JSON: its values are whatever the file holds, which the checks below refuse or narrow
Record = dict[str, Any]
ChatId = int | str  # a Qwen chat_id (or a conversation log's conversation): an integer or a non-empty string
# (chat_id, parent_chat_id or -1, timestamp s, input_length, output_length, turn or None, hash_ids or None)
QwenRecord = tuple[ChatId, ChatId, float, int, int, "int | None", "list[int] | None"]


class DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> Record:
    rec = dict(pairs)
    if len(rec) < len(pairs):  # json.loads would keep the last value silently
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise DuplicateKey(k)
            seen.add(k)
    return rec


# One decoder, built once: json.loads(line, object_pairs_hook=...) builds one per call (+50% here)
_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys)


def parse_line(line: str, path: Path, i: int) -> Any:
    """One JSONL line as JSON, refused naming the line if malformed, if a key repeats in an
    object, or if it nests deeper than MAX_DEPTH (no trace format nests beyond 3; 1,000 deep
    makes the json module recurse out of the stack)."""
    try:
        rec = _DECODER.decode(line)
    except DuplicateKey as e:
        raise ScenarioError(f"{e.key}: given twice in one record", str(path), f"line {i}") from None
    except json.JSONDecodeError as e:
        raise ScenarioError(f"malformed JSON: {e.msg}", str(path), f"line {i}") from None
    except RecursionError:
        deep = True
    else:  # counting brackets is cheap (C): the walk runs only on a line that could nest too deep
        deep = line.count("[") + line.count("{") > MAX_DEPTH and nesting_depth(rec) > MAX_DEPTH
    if deep:
        raise ScenarioError(f"nested deeper than {MAX_DEPTH} levels", str(path), f"line {i}")
    return rec


def json_lines(path: Path, text: str) -> Iterator[tuple[int, Record]]:
    """(line number, dict) per non-blank line of a JSONL file."""
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        rec = parse_line(line, path, i)
        if not isinstance(rec, dict):
            raise ScenarioError("expected a JSON object per line", str(path), f"line {i}")
        yield i, rec


def looks_like_ragpulse(rec: object) -> bool:
    """A first record with hash_ids by component (timestamps as strings): a RAGPulse trace line."""
    return isinstance(rec, dict) and isinstance(rec.get("hash_ids"), dict)


def detect(rec: Any, path: Path | None = None) -> str | None:
    """Which request-trace format a first record is in, or None (a conversation log)."""
    if not isinstance(rec, dict) or "conversation" in rec:
        return None
    if looks_like_ragpulse(rec):
        raise ScenarioError("a RAGPulse trace (hash_ids by component): kvviz reads Mooncake, Qwen/Bailian "
                            "and plain request traces, not RAGPulse", str(path), "line 1")
    if "chat_id" in rec:
        return QWEN
    if "time" in rec or "input_tokens" in rec:  # Mooncake's keys are timestamp, input_length
        return PLAIN
    if "hash_ids" in rec:
        return MOONCAKE
    return None


def first_record(path: Path) -> Any:
    """The first non-blank line parsed as JSON, or None (unreadable, not JSON: the
    conversation-log reader reports such files as it always has). Only that line is decoded: a
    byte that is not UTF-8 further on is the whole-file reader's to name (by its offset), not a
    reason to call line 1 no trace record."""
    try:  # (strict decoding failed on any bad byte of the first 8 KB read, whichever line held it)
        with open(path, encoding="utf-8-sig", errors="surrogateescape") as f:
            i, line = next(((i, ln) for i, ln in enumerate(f, 1) if ln.strip()), (0, None))
        if line is not None:
            line.encode("utf-8")  # a byte of this line that is not UTF-8 (escaped above) raises here
    except (OSError, UnicodeError):
        return None
    if line is None:
        return None
    try:
        json.loads(line)
    except ValueError:
        return None
    except RecursionError:
        pass
    return parse_line(line, path, i)  # JSON, but nested too deep or a key given twice: refused here


def require(rec: Record, keys: tuple[str, ...], fmt: str, path: Path, line: int) -> None:
    missing = [k for k in keys if k not in rec]
    if missing:
        raise ScenarioError(f"missing field(s) {', '.join(missing)} (a {fmt} trace line needs "
                            f"{', '.join(keys)})", str(path), f"line {line}")


def integer(rec: Record, key: str, path: Path, line: int, minimum: int = 0, maximum: int = MAX_TOKENS) -> int:
    v = rec[key]
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if type(v) is not int:
        raise ScenarioError(f"{key}: expected an integer, got {v!r}", str(path), f"line {line}")
    if v < minimum:
        raise ScenarioError(f"{key}: must be >= {minimum} (got {v})", str(path), f"line {line}")
    if v > maximum:
        raise ScenarioError(f"{key}: at most {maximum:,} (got {v:.3g})", str(path), f"line {line}")
    return v


def timestamp(rec: Record, key: str, path: Path, line: int, ns_per_unit: int = NS_PER_UNIT[QWEN]) -> float:
    v: float = rec[key]
    if type(v) not in (int, float) or not math.isfinite(v):
        raise ScenarioError(f"{key}: expected a number, got {v!r}", str(path), f"line {line}")
    if v < 0:
        raise ScenarioError(f"{key}: must be >= 0 (got {v})", str(path), f"line {line}")
    if v * ns_per_unit > MAX_NS:  # a time the simulation could not represent
        raise ScenarioError(f"{key}: beyond the simulator's time range (at most {MAX_NS / ns_per_unit:.3g}; "
                            f"got {v:.3g})", str(path), f"line {line}")
    return v


def identifier(v: Any, key: str, path: Path, line: int) -> ChatId:
    if (type(v) is int) or (isinstance(v, str) and v.strip()):
        return v
    raise ScenarioError(f"{key}: expected an integer or a non-empty string, got {v!r}",
                        str(path), f"line {line}")


def hash_ids(rec: Record, path: Path, line: int) -> list[int]:
    ids: list[int] = rec["hash_ids"]
    if type(ids) is not list or not all(type(h) is int for h in ids):
        raise ScenarioError(f"hash_ids: expected a list of integers, got {str(ids)[:60]}",
                            str(path), f"line {line}")
    return ids


def mooncake_record(rec: Record, path: Path, line: int) -> tuple[float, int, int, list[int]]:
    """(timestamp ms, input_length, output_length, hash_ids) of one checked Mooncake line."""
    require(rec, MOONCAKE_KEYS, "Mooncake", path, line)
    t = timestamp(rec, "timestamp", path, line, NS_PER_UNIT[MOONCAKE])
    n_in = integer(rec, "input_length", path, line)
    n_out = integer(rec, "output_length", path, line)
    ids = hash_ids(rec, path, line)
    # One id per 512-token block, the last partial: on the bundled traces (16,024 records) exactly
    # ceil(input_length / 512) every time; one block either way is allowed (a writer counting
    # only complete blocks), more is a record that contradicts itself.
    blocks = -(-n_in // MOONCAKE_BLOCK_TOKENS)
    if abs(len(ids) - blocks) > 1:
        raise ScenarioError(f"hash_ids: {len(ids):,} ids for input_length {n_in:,}, which is {blocks:,} "
                            f"512-token block(s) (±1 allowed)", str(path), f"line {line}")
    return t, n_in, n_out, ids


def qwen_record(rec: Record, path: Path, line: int, need_hashes: bool) -> QwenRecord:
    """(chat_id, parent_chat_id or -1, timestamp s, input_length, output_length, turn or None,
    hash_ids or None) of one checked Qwen/Bailian line; hash_ids required if `need_hashes`."""
    require(rec, QWEN_KEYS + ("hash_ids",) if need_hashes else QWEN_KEYS, "Qwen/Bailian", path, line)
    cid = identifier(rec["chat_id"], "chat_id", path, line)
    parent = rec.get("parent_chat_id", -1)
    if parent is None:
        parent = -1
    if parent != -1 or type(parent) is not int:
        parent = identifier(parent, "parent_chat_id", path, line)
    t = timestamp(rec, "timestamp", path, line)
    n_in = integer(rec, "input_length", path, line)
    n_out = integer(rec, "output_length", path, line)
    turn = integer(rec, "turn", path, line, 1, 2 ** 62) if rec.get("turn") is not None else None
    ids = hash_ids(rec, path, line) if "hash_ids" in rec else None
    return cid, parent, t, n_in, n_out, turn, ids


def in_time_order(times_s: Sequence[float] | np.ndarray, lines: Sequence[int] | np.ndarray, path: str | Path,
                  key: str = "timestamp") -> None:
    """The one time rule of a request trace, wherever it is read (replay and AttentionStore
    alike): requests in file order never go back in time (equal times are fine: Mooncake's
    first requests all arrive at 0); the first that does is named by its line."""
    import numpy as np
    t = np.asarray(times_s, dtype=np.float64)
    back = np.flatnonzero(t[1:] < t[:-1])
    if len(back):
        i = int(back[0]) + 1
        raise ScenarioError(f"{key} goes backwards ({t[i]:g} s after {t[i - 1]:g} s on line {lines[i - 1]}); "
                            f"requests must be in time order", str(path), f"line {lines[i]}")
