"""Multi-turn conversations: the table of turns a serving model replays (`Conversations`), and
the two public request-trace formats read as one, told apart by the keys of the first JSON
record (any other first record is a conversation log: conversation_log.py). The requests as
recorded, block hashes and Qwen's chat ids included, come along (`Conversations.requests`).

**Qwen/Bailian** (alibaba-edu/qwen-bailian-usagetraces-anon; KVCache@ATC'25), one request
per line: `chat_id`, `parent_chat_id` (-1 for a first turn, as the public trace writes it; a
missing key or null is read the same way), `timestamp` (seconds from the start of the trace),
`input_length`, `output_length`, `turn` (optional; checked for type only), `type` and
`hash_ids` (16-token blocks; kept on `requests`, not used here). Sessions are the recorded
parent chains: a request continues its parent's conversation. A parent that already has a child is a fork (a second
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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from ..errors import ScenarioError
from ..io import read_text
from .jsonl import (
    MOONCAKE,
    MOONCAKE_BLOCK_TOKENS,
    NS_PER_UNIT,
    PLAIN,
    QWEN,
    ChatId,
    detect,
    first_record,
    json_lines,
    mooncake_record,
    qwen_record,
)
from .prompts import PromptRequests, PromptRows

NS_PER_S = 1_000_000_000


@dataclass(frozen=True)
class Conversations:
    """A table of turns, one row per turn, sorted by conversation then turn, held as numpy arrays.
    Rows carry each turn's token counts, the user's think time before it and a nominal arrival
    time; a serving model decides the actual arrival of later turns, since a user cannot send
    turn k+1 before reading reply k."""
    conv: np.ndarray        # int64 conversation index 0..n_conv-1, non-decreasing
    turn: np.ndarray        # int64 turn number within the conversation, from 0
    arrival_ns: np.ndarray  # int64 nominal (recorded) arrival of the turn
    think_ns: np.ndarray    # int64 think time before the turn (0 for a first turn)
    in_tok: np.ndarray      # int64 user tokens of the turn
    out_tok: np.ndarray     # int64 reply tokens of the turn
    names: tuple[str, ...]  # conversation ids as given (generated: their index)
    # Read from a Mooncake or Qwen/Bailian trace: the requests as recorded (file order, with
    # their block hashes), and for each row the index of its request there.
    requests: PromptRequests | None = None
    request: np.ndarray | None = None

    @property
    def n_conv(self) -> int:
        return len(self.names)

    def __len__(self) -> int:
        return len(self.conv)


def sorted_turns(conv: ArrayLike, turn: ArrayLike, arrival: ArrayLike, in_tok: ArrayLike, out_tok: ArrayLike,
                 names: Sequence[str], requests: PromptRequests | None = None) -> Conversations:
    """Rows (in any order) sorted by conversation then turn; think times from the arrivals."""
    c = np.asarray(conv, dtype=np.int64)
    t = np.asarray(turn, dtype=np.int64)
    order = np.lexsort((t, c))
    c, t = c[order], t[order]
    a = np.asarray(arrival, dtype=np.int64)[order]
    think = np.zeros(len(c), dtype=np.int64)
    later = np.flatnonzero(t > 0)
    think[later] = a[later] - a[later - 1]
    return Conversations(c, t, a, think, np.asarray(in_tok, dtype=np.int64)[order],
                         np.asarray(out_tok, dtype=np.int64)[order], tuple(names), requests,
                         None if requests is None else order)


@dataclass(frozen=True)
class TraceNotes:
    """What a reader did to a request trace, for a README or a log line."""
    format: str             # "qwen" or "mooncake"
    requests: int           # lines read = turns in the Conversations
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


def read(path: str | Path, match: str = "complete_blocks") -> tuple[Conversations, TraceNotes] | None:
    """A Qwen/Bailian or Mooncake trace as (Conversations, notes); None if the file's first
    record is neither (then it is a conversation log, or not JSON lines at all)."""
    path = Path(path)
    fmt = detect(first_record(path), path)
    if fmt is None:
        return None
    if fmt == PLAIN:
        raise ScenarioError("a plain request trace (time, input_tokens, ..., hash_ids) records no conversations: "
                            "give a Mooncake or Qwen/Bailian trace or a conversation log", str(path), "line 1")
    text = read_text(path, "trace file")
    if fmt == QWEN:
        return _qwen(path, text)
    return _mooncake(path, text, match)


def _finish(path: Path, rows: PromptRows, conv: list[int], pos: list[int], in_tok: list[int], names: list[str],
            clamped: int, **notes: int) -> tuple[Conversations, TraceNotes]:
    """The Conversations of the rows read, and the notes on how they were made."""
    if not len(rows):
        raise ScenarioError("the trace has no requests", str(path))
    requests = rows.finish()
    # From the recorded timestamps, not times_s: ms x 10^6 as Python numbers, exact.
    arrival = [round(t * NS_PER_UNIT[rows.fmt]) for t in rows.recorded]
    table = sorted_turns(conv, pos, arrival, in_tok, rows.outputs, names, requests)
    multi = int(np.count_nonzero(np.bincount(table.conv) > 1))
    return table, TraceNotes(rows.fmt, len(rows), len(names), clamped, multi_turn=multi, **notes)


# --- Qwen/Bailian ----------------------------------------------------------------------------

def _later_line(text: str, after: int, chat_id: ChatId) -> int | None:
    """The line after `after` whose chat_id is `chat_id` (only for an error message)."""
    for i, line in enumerate(text.splitlines()[after:], after + 1):
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):  # only for a message: a line past the one refused
            continue
        if isinstance(rec, dict) and rec.get("chat_id") == chat_id and type(rec.get("chat_id")) is type(chat_id):
            return i
    return None


def _qwen(path: Path, text: str) -> tuple[Conversations, TraceNotes]:
    seen: dict[ChatId, int] = {}  # chat_id -> row
    rows = PromptRows(QWEN, str(path))
    rows_turn: list[int | None] = []
    has_child: list[bool] = []
    conv: list[int] = []
    pos: list[int] = []
    in_tok: list[int] = []
    names: list[str] = []
    clamped = forks = mismatch = 0
    rows_line, rows_t, rows_in, rows_out = rows.lines, rows.recorded, rows.inputs, rows.outputs
    for line, rec in json_lines(path, text):
        cid, parent, t, n_in, n_out, turn, ids = qwen_record(rec, path, line, need_hashes=False)
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
            parent_turn = rows_turn[p]
            if turn is not None and parent_turn is not None and turn != parent_turn + 1:
                mismatch += 1
        if new < 1:
            new = 1
            clamped += 1
        seen[cid] = row
        rows.add(line, t, n_in, n_out, ids, (cid, parent, turn, rec.get("type")))
        rows_turn.append(turn)
        has_child.append(False)
        in_tok.append(new)
    return _finish(path, rows, conv, pos, in_tok, names, clamped, forks=forks, turn_mismatch=mismatch)


# --- Mooncake --------------------------------------------------------------------------------

def _mooncake(path: Path, text: str, match: str = "complete_blocks") -> tuple[Conversations, TraceNotes]:
    if match not in ("complete_blocks", "all_blocks"):
        raise ValueError(f"match: {match!r} (complete_blocks or all_blocks)")
    complete = match == "complete_blocks"
    # An open session s: its last request's ids (last_ids[s]) and its key, the tuple of that
    # request's complete-block ids. keys: key -> sessions with that key, most recent last;
    # ends: last id of a key -> {key length: how many keys}.
    keys: dict[tuple[int, ...], list[int]] = {}
    ends: dict[int, dict[int, int]] = {}
    sess_key: list[tuple[int, ...] | None] = []
    last_ids: list[list[int]] = []
    last_row: list[int] = []
    conv: list[int] = []
    pos: list[int] = []
    rows = PromptRows(MOONCAKE, str(path))
    rows_line, rows_t, rows_in, rows_out = rows.lines, rows.recorded, rows.inputs, rows.outputs
    in_tok: list[int] = []
    names: list[str] = []
    clamped = ties = repeats = 0

    def drop_key(s: int) -> None:
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

    def add_key(s: int, ids: list[int], n_in: int) -> None:
        k = tuple(ids[:n_in // MOONCAKE_BLOCK_TOKENS] if complete else ids)
        if not k:
            return  # no complete block: nothing a follow-up could be recognised by
        keys.setdefault(k, []).append(s)
        lens = ends.setdefault(k[-1], {})
        lens[len(k)] = lens.get(len(k), 0) + 1
        sess_key[s] = k

    for line, rec in json_lines(path, text):
        t, n_in, n_out, ids = mooncake_record(rec, path, line)
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
        rows.add(line, t, n_in, n_out, ids)
        in_tok.append(new)
    return _finish(path, rows, conv, pos, in_tok, names, clamped, ties=ties, repeats=repeats)
