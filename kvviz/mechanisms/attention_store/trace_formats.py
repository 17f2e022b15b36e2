"""Two public request-trace formats read as multi-turn `Workload`s, told apart by the keys of
the first JSON record (any other first record goes to the conversation-log reader of
workload.py, unchanged).

**Qwen/Bailian** (alibaba-edu/qwen-bailian-usagetraces-anon; KVCache@ATC'25), one request
per line: `chat_id`, `parent_chat_id` (-1 for a first turn, as the public trace writes it; a
missing key or null is read the same way), `timestamp` (seconds from the start of the trace),
`input_length`, `output_length`, `turn` (optional; checked for type only), and fields we ignore
(`type`, `hash_ids` of 16-token blocks). Sessions are the recorded parent chains: a request
continues its parent's conversation. A parent that already has a child is a fork (a second
reply to the same turn, e.g. a regenerated answer); a fork starts a conversation of its own,
named by its `chat_id`, whose first turn carries its whole `input_length` as new tokens, since
a conversation here is one linear history. Forks are counted.

**Mooncake FAST'25** (kvcache-ai/Mooncake `FAST25-release/traces/`), one request per line:
`timestamp` (milliseconds), `input_length`, `output_length`, `hash_ids` (remapped hashes of
the prompt's 512-token blocks, the last block usually partial). The trace records no
sessions: the conversations here are a *reconstruction*, not recorded sessions. In file order,
a request continues the open session whose last request's block ids are a prefix of its own:

- Compared are the last request's *complete* blocks (its first input_length // 512 ids). A
  partial last block is not: the follow-up fills that block with more tokens (the reply and
  the new message), so its hash changes. Compared literally, all ids, the rule links only
  requests whose lists are identical (on the bundled sample: 213 links, every one with fewer
  tokens than its "parent" plus reply); `match="all_blocks"` gives that literal reading.
- The prefix must be non-empty and shorter than the request's own list (a follow-up holds at
  least one token past its parent's complete blocks). A session whose last request is shorter
  than one block (512 tokens) can therefore never be continued: its follow-ups start new
  conversations.
- The longest matching prefix wins. Several sessions whose last requests have the same
  complete blocks (a tie) go to the most recently continued or started one, and ties are
  counted. A request whose list equals a candidate's whole last list (same blocks, the
  partial one included, so the same prompt again, which cannot contain the reply) does not
  continue that candidate: it is a repeat, counted, and tries the next candidate. (With
  `match="all_blocks"` an identical list is not a proper prefix, so never a candidate.)
- Conversations are named by the line of their first request ("line 17").

Both: one row per turn, sorted by conversation (in order of their first request) then turn;
arrival_ns is the recorded timestamp; think_ns the gap to the previous turn's arrival in the
same conversation (0 for a first turn); in_tok the turn's NEW tokens = input_length - (parent
input_length + parent output_length) (a first turn: its input_length); out_tok the
output_length. Where the new tokens come out below 1 (the recorded prompt does not hold the
whole parent context, e.g. a chat template stripped tokens, or a reconstructed link is wrong)
they are set to 1 and counted in `TraceNotes.clamped`.

Bad input raises ScenarioError naming the file and the line: malformed JSON, a missing or
mistyped key, a negative number, a duplicate chat_id, a parent that does not exist or comes
later in the file, a turn that arrives before the previous turn of its conversation.

Cost: one pass over the records. Mooncake prefix matching indexes the open sessions by the
tuple of their last complete block ids, and a request tests only its prefixes whose last id
ends some session's key (a dict from id to key lengths), from the longest down, so a request
costs O(its list) plus one tuple per real candidate, never a scan of the sessions.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...errors import ScenarioError
from ...io import read_text
from .workload import Workload, json_lines

MOONCAKE_BLOCK_TOKENS = 512
QWEN = "qwen"
MOONCAKE = "mooncake"


@dataclass(frozen=True)
class TraceNotes:
    """What a reader did to a request trace, for a README or a log line."""
    format: str             # "qwen" or "mooncake"
    requests: int           # lines read = turns in the Workload
    conversations: int
    clamped: int            # turns whose new tokens came out < 1 and were set to 1
    forks: int = 0          # qwen: requests whose parent already had a child (new conversation)
    turn_mismatch: int = 0  # qwen: `turn` differs from the position in the parent chain
    ties: int = 0           # mooncake: requests with several equally long candidate sessions
    repeats: int = 0        # mooncake: candidates passed over because the lists were identical
    multi_turn: int = 0     # conversations with more than one turn

    @property
    def multi_turn_share(self) -> float:
        return 0.0 if not self.conversations else self.multi_turn / self.conversations


def detect(rec) -> str | None:
    """Which request-trace format a first record is in, or None (a conversation log)."""
    if not isinstance(rec, dict) or "conversation" in rec:
        return None
    if "chat_id" in rec:
        return QWEN
    if "hash_ids" in rec:
        return MOONCAKE
    return None


def _first_record(path: Path):
    """The first non-blank line parsed as JSON, or None (unreadable, not JSON: the
    conversation-log reader reports such files as it always has)."""
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    return json.loads(line)
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return None


def read(path: str | Path, match: str = "complete_blocks") -> tuple[Workload, TraceNotes] | None:
    """A Qwen/Bailian or Mooncake trace as (Workload, notes); None if the file's first record
    is neither (then it is a conversation log, or not JSON lines at all)."""
    path = Path(path)
    fmt = detect(_first_record(path))
    if fmt is None:
        return None
    text = read_text(path, "trace file")
    if fmt == QWEN:
        return _qwen(path, text)
    return _mooncake(path, text, match)


# --- record checks ---------------------------------------------------------------------------

def _require(rec: dict, keys: tuple[str, ...], fmt: str, path: Path, line: int):
    missing = [k for k in keys if k not in rec]
    if missing:
        raise ScenarioError(f"missing field(s) {', '.join(missing)} (a {fmt} trace line needs "
                            f"{', '.join(keys)})", str(path), f"line {line}")


def _int(rec: dict, key: str, path: Path, line: int, minimum: int = 0) -> int:
    v = rec[key]
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if type(v) is not int:
        raise ScenarioError(f"{key}: expected an integer, got {v!r}", str(path), f"line {line}")
    if v < minimum:
        raise ScenarioError(f"{key}: must be >= {minimum} (got {v})", str(path), f"line {line}")
    return v


def _time(rec: dict, key: str, path: Path, line: int) -> float:
    v = rec[key]
    if type(v) not in (int, float) or not math.isfinite(v):
        raise ScenarioError(f"{key}: expected a number, got {v!r}", str(path), f"line {line}")
    if v < 0:
        raise ScenarioError(f"{key}: must be >= 0 (got {v})", str(path), f"line {line}")
    return v


def _id(v, key: str, path: Path, line: int):
    if (type(v) is int) or (isinstance(v, str) and v.strip()):
        return v
    raise ScenarioError(f"{key}: expected an integer or a non-empty string, got {v!r}",
                        str(path), f"line {line}")


def _finish(path: Path, kind: str, ns_per_unit: int, rows_t, conv, pos, in_tok, rows_out, names, clamped,
            **notes) -> tuple[Workload, "TraceNotes"]:
    """The Workload of the rows read, and the notes on how it was made."""
    if not rows_t:
        raise ScenarioError("the trace has no requests", str(path))
    arrival = [round(t * ns_per_unit) for t in rows_t]
    wl = _workload(conv, pos, arrival, in_tok, rows_out, names)
    multi = int(np.count_nonzero(np.bincount(wl.conv) > 1))
    return wl, TraceNotes(kind, len(rows_t), len(names), clamped, multi_turn=multi, **notes)


def _workload(conv: list[int], turn: list[int], arrival: list[int], in_tok: list[int],
              out_tok: list[int], names: list[str]) -> Workload:
    """Rows (in any order) sorted by conversation then turn; think times from the arrivals."""
    c = np.asarray(conv, dtype=np.int64)
    t = np.asarray(turn, dtype=np.int64)
    order = np.lexsort((t, c))
    c, t = c[order], t[order]
    a = np.asarray(arrival, dtype=np.int64)[order]
    think = np.zeros(len(c), dtype=np.int64)
    later = np.flatnonzero(t > 0)
    think[later] = a[later] - a[later - 1]
    return Workload(c, t, a, think, np.asarray(in_tok, dtype=np.int64)[order],
                    np.asarray(out_tok, dtype=np.int64)[order], tuple(names))


# --- Qwen/Bailian ----------------------------------------------------------------------------

QWEN_KEYS = ("chat_id", "timestamp", "input_length", "output_length")


def _later_line(text: str, after: int, chat_id) -> int | None:
    """The line after `after` whose chat_id is `chat_id` (only for an error message)."""
    for i, line in enumerate(text.splitlines()[after:], after + 1):
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and rec.get("chat_id") == chat_id and type(rec.get("chat_id")) is type(chat_id):
            return i
    return None


def _qwen(path: Path, text: str) -> tuple[Workload, TraceNotes]:
    seen: dict = {}              # chat_id -> row
    rows_line: list[int] = []
    rows_t: list[float] = []
    rows_in: list[int] = []
    rows_out: list[int] = []
    rows_turn: list[int | None] = []
    has_child: list[bool] = []
    conv: list[int] = []
    pos: list[int] = []
    in_tok: list[int] = []
    names: list[str] = []
    clamped = forks = mismatch = 0
    for line, rec in json_lines(path, text):
        _require(rec, QWEN_KEYS, "Qwen/Bailian", path, line)
        cid = _id(rec["chat_id"], "chat_id", path, line)
        parent = rec.get("parent_chat_id", -1)
        if parent is None:
            parent = -1
        if parent != -1 or type(parent) is not int:
            parent = _id(parent, "parent_chat_id", path, line)
        t = _time(rec, "timestamp", path, line)
        n_in = _int(rec, "input_length", path, line)
        n_out = _int(rec, "output_length", path, line)
        turn = _int(rec, "turn", path, line, 1) if rec.get("turn") is not None else None
        if cid in seen:
            raise ScenarioError(f"chat_id {cid!r} already used on line {rows_line[seen[cid]]}",
                                str(path), f"line {line}")
        row = len(rows_line)
        if parent == -1:
            p = None
        else:
            p = seen.get(parent)
            if p is None:
                if parent == cid:
                    raise ScenarioError(f"parent_chat_id {parent!r} is the request itself",
                                        str(path), f"line {line}")
                later = _later_line(text, line, parent)
                where = (f"comes later in the file (line {later}); a parent must come before its "
                         f"follow-ups" if later else "does not exist in the file")
                raise ScenarioError(f"parent_chat_id {parent!r} {where}", str(path), f"line {line}")
            if t < rows_t[p]:
                raise ScenarioError(f"chat {cid!r} arrives at {t} s, before its parent {parent!r} "
                                    f"(line {rows_line[p]}, {rows_t[p]} s)", str(path), f"line {line}")
        if p is None or has_child[p]:
            if p is not None:
                forks += 1
            conv.append(len(names))
            pos.append(0)
            names.append(str(cid))
            new = n_in
            if p is None and turn is not None and turn != 1:
                mismatch += 1
        else:
            has_child[p] = True
            conv.append(conv[p])
            pos.append(pos[p] + 1)
            new = n_in - (rows_in[p] + rows_out[p])
            if turn is not None and rows_turn[p] is not None and turn != rows_turn[p] + 1:
                mismatch += 1
        if new < 1:
            new = 1
            clamped += 1
        seen[cid] = row
        rows_line.append(line)
        rows_t.append(t)
        rows_in.append(n_in)
        rows_out.append(n_out)
        rows_turn.append(turn)
        has_child.append(False)
        in_tok.append(new)
    return _finish(path, QWEN, 1_000_000_000, rows_t, conv, pos, in_tok, rows_out, names, clamped,
                   forks=forks, turn_mismatch=mismatch)


# --- Mooncake --------------------------------------------------------------------------------

MOONCAKE_KEYS = ("timestamp", "input_length", "output_length", "hash_ids")


def _mooncake_record(rec: dict, path: Path, line: int) -> tuple[float, int, int, list]:
    """(timestamp ms, input_length, output_length, hash_ids) of one checked Mooncake line."""
    _require(rec, MOONCAKE_KEYS, "Mooncake", path, line)
    t = _time(rec, "timestamp", path, line)
    n_in = _int(rec, "input_length", path, line)
    n_out = _int(rec, "output_length", path, line)
    return t, n_in, n_out, _hash_ids(rec, path, line)


def _hash_ids(rec: dict, path: Path, line: int) -> list:
    ids = rec["hash_ids"]
    if type(ids) is not list or not all(type(h) is int for h in ids):
        raise ScenarioError(f"hash_ids: expected a list of integers, got {str(ids)[:60]}",
                            str(path), f"line {line}")
    return ids


BLOCK_TOKENS = {MOONCAKE: MOONCAKE_BLOCK_TOKENS, QWEN: 16}


def block_requests(path: str | Path):
    """A Mooncake or Qwen/Bailian trace as block requests for a cache replay: (format, tokens
    per block, [(line, timestamp in seconds, hash_ids)] in file order), or None when the first
    record is neither. Each hash id is one block of KV; the same checks as `read`."""
    path = Path(path)
    fmt = detect(_first_record(path))
    if fmt is None:
        return None
    text = read_text(path, "trace file")
    out = []
    for line, rec in json_lines(path, text):
        if fmt == MOONCAKE:
            t, _, _, ids = _mooncake_record(rec, path, line)
            out.append((line, t / 1000, ids))
        else:
            _require(rec, QWEN_KEYS + ("hash_ids",), "Qwen/Bailian", path, line)
            out.append((line, _time(rec, "timestamp", path, line), _hash_ids(rec, path, line)))
    if not out:
        raise ScenarioError("the trace has no requests", str(path))
    return fmt, BLOCK_TOKENS[fmt], out


def _mooncake(path: Path, text: str, match: str = "complete_blocks") -> tuple[Workload, TraceNotes]:
    if match not in ("complete_blocks", "all_blocks"):
        raise ValueError(f"match: {match!r} (complete_blocks or all_blocks)")
    complete = match == "complete_blocks"
    # An open session s: its last request's ids (last_ids[s]) and its key, the tuple of that
    # request's complete-block ids. keys: key -> sessions with that key, most recent last;
    # ends: last id of a key -> {key length: how many keys}.
    keys: dict[tuple, list[int]] = {}
    ends: dict[int, dict[int, int]] = {}
    sess_key: list[tuple | None] = []
    last_ids: list[list] = []
    last_row: list[int] = []
    conv: list[int] = []
    pos: list[int] = []
    rows_line: list[int] = []
    rows_t: list[float] = []
    rows_in: list[int] = []
    rows_out: list[int] = []
    in_tok: list[int] = []
    names: list[str] = []
    clamped = ties = repeats = 0

    def drop_key(s: int):
        k = sess_key[s]
        if k is None:
            return
        stack = keys[k]
        if stack[-1] == s:
            stack.pop()
        else:
            stack.remove(s)
        if not stack:
            del keys[k]
        lens = ends[k[-1]]
        lens[len(k)] -= 1
        if not lens[len(k)]:
            del lens[len(k)]
            if not lens:
                del ends[k[-1]]
        sess_key[s] = None

    def add_key(s: int, ids: list, n_in: int):
        k = tuple(ids[:n_in // MOONCAKE_BLOCK_TOKENS] if complete else ids)
        if not k:
            return  # no complete block: nothing a follow-up could be recognised by
        keys.setdefault(k, []).append(s)
        lens = ends.setdefault(k[-1], {})
        lens[len(k)] = lens.get(len(k), 0) + 1
        sess_key[s] = k

    for line, rec in json_lines(path, text):
        t, n_in, n_out, ids = _mooncake_record(rec, path, line)
        row = len(rows_line)
        # The longest non-empty proper prefix of ids that is some open session's key.
        found = None
        n = len(ids)
        for length in range(n - 1, 0, -1):
            lens = ends.get(ids[length - 1])
            if lens is None or length not in lens:
                continue
            stack = keys.get(tuple(ids[:length]))
            if not stack:
                continue
            for s in reversed(stack):  # most recent first; stops at the second eligible one
                if last_ids[s] == ids:
                    repeats += 1
                elif found is None:
                    found = s
                else:
                    ties += 1
                    break
            if found is not None:
                break
        if found is None:
            s = len(names)
            names.append(f"line {line}")
            sess_key.append(None)
            last_ids.append(ids)
            last_row.append(row)
            conv.append(s)
            pos.append(0)
            new = n_in
        else:
            s = found
            p = last_row[s]
            if t < rows_t[p]:
                raise ScenarioError(f"continues the conversation of line {rows_line[p]} (its block ids "
                                    f"are a prefix of this request's) but arrives at {t:g} ms, before "
                                    f"that request ({rows_t[p]:g} ms)", str(path), f"line {line}")
            drop_key(s)
            conv.append(s)
            pos.append(pos[p] + 1)
            new = n_in - (rows_in[p] + rows_out[p])
            last_ids[s] = ids
            last_row[s] = row
        add_key(s, ids, n_in)
        if new < 1:
            new = 1
            clamped += 1
        rows_line.append(line)
        rows_t.append(t)
        rows_in.append(n_in)
        rows_out.append(n_out)
        in_tok.append(new)
    return _finish(path, MOONCAKE, 1_000_000, rows_t, conv, pos, in_tok, rows_out, names, clamped,
                   ties=ties, repeats=repeats)
