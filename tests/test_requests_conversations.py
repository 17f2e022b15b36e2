"""Qwen/Bailian and Mooncake request traces read as multi-turn Conversations (kvviz.requests):
tiny hand-written files with every expected array written out, every bad line named, the
bundled Mooncake sample, and a generated trace whose true sessions the reader must recover."""
import json
import random
from pathlib import Path

import numpy as np
import pytest

from kvviz.cli import main
from kvviz.errors import ScenarioError
from kvviz.mechanisms.attention_store.workload import load_trace
from kvviz.requests import conversations as tf

from .conftest import ROOT

BUNDLED = ROOT / "resources" / "traces" / "mooncake_synthetic_trace.jsonl"
S = 1_000_000_000  # ns per s
MS = 1_000_000     # ns per ms


def write(tmp_path, lines, name="t.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n" for ln in lines))
    return p


def arrays(w):
    return {k: getattr(w, k).tolist() for k in ("conv", "turn", "arrival_ns", "think_ns", "in_tok", "out_tok")}


# --- Qwen/Bailian ----------------------------------------------------------------------------

QWEN = [
    '{"chat_id": 1, "parent_chat_id": -1, "timestamp": 0.5, "input_length": 100, "output_length": 20, '
    '"type": "text", "turn": 1, "hash_ids": [1, 2, 3, 4, 5, 6, 7]}',
    '{"chat_id": 2, "parent_chat_id": -1, "timestamp": 1.0, "input_length": 50, "output_length": 5, "turn": 1}',
    # 150 - (100 + 20) = 30 new tokens
    '{"chat_id": 3, "parent_chat_id": 1, "timestamp": 2.25, "input_length": 150, "output_length": 30, "turn": 2}',
    '',
    # no parent_chat_id and no turn: a first turn
    '{"chat_id": 4, "timestamp": 3, "input_length": 10, "output_length": 1}',
    # 170 - (150 + 30) = -10: clamped to 1
    '{"chat_id": 5, "parent_chat_id": 3, "timestamp": 4.0, "input_length": 170, "output_length": 7, "turn": 3}',
    # 70 - (50 + 5) = 15; turn 4 is not its parent's turn + 1: counted, not an error
    '{"chat_id": 6, "parent_chat_id": 2, "timestamp": 4.5, "input_length": 70, "output_length": 3, "turn": 4}',
    # a second child of chat 1: a fork, a conversation of its own with all 140 tokens new
    '{"chat_id": 7, "parent_chat_id": 1, "timestamp": 5.0, "input_length": 140, "output_length": 2, "turn": 2}',
    # null parent: a first turn
    '{"chat_id": 8, "parent_chat_id": null, "timestamp": 5.0, "input_length": 9, "output_length": 0, "turn": 1}',
]


def test_qwen_by_hand(tmp_path):
    w, notes = tf.read(write(tmp_path, QWEN))
    assert arrays(w) == {
        # conversations in order of their first request: chat 1, 2, 4, 7 (fork), 8
        "conv":       [0, 0, 0, 1, 1, 2, 3, 4],
        "turn":       [0, 1, 2, 0, 1, 0, 0, 0],
        "arrival_ns": [S // 2, 2 * S + S // 4, 4 * S, S, 4 * S + S // 2, 3 * S, 5 * S, 5 * S],
        "think_ns":   [0, S + 3 * S // 4, S + 3 * S // 4, 0, 3 * S + S // 2, 0, 0, 0],
        "in_tok":     [100, 30, 1, 50, 15, 10, 140, 9],
        "out_tok":    [20, 30, 7, 5, 3, 1, 2, 0],
    }
    assert w.names == ("1", "2", "4", "7", "8")
    assert notes == tf.TraceNotes("qwen", requests=8, conversations=5, clamped=1, forks=1, turn_mismatch=1,
                                  multi_turn=2)
    assert notes.multi_turn_share == pytest.approx(0.4)
    # load_trace (what workload.trace_file calls) dispatches on the first record's keys
    assert arrays(load_trace(tmp_path / "t.jsonl")) == arrays(w)


def test_qwen_string_ids_and_clamped_first_turn(tmp_path):
    w, notes = tf.read(write(tmp_path, [
        {"chat_id": "a", "parent_chat_id": -1, "timestamp": 0, "input_length": 0, "output_length": 4, "turn": 1},
        {"chat_id": "b", "parent_chat_id": "a", "timestamp": 2, "input_length": 9, "output_length": 1, "turn": 2},
    ]))
    assert arrays(w) == {"conv": [0, 0], "turn": [0, 1], "arrival_ns": [0, 2 * S], "think_ns": [0, 2 * S],
                         "in_tok": [1, 5], "out_tok": [4, 1]}
    assert w.names == ("a",) and notes.clamped == 1


# --- Mooncake --------------------------------------------------------------------------------

def mc(t, n_in, n_out, ids):
    return {"timestamp": t, "input_length": n_in, "output_length": n_out, "hash_ids": ids}


MOONCAKE = [
    mc(0, 1100, 50, [1, 2, 3]),             # 1: new; complete blocks (1, 2)
    mc(1000, 600, 10, [7, 8]),              # 2: new; complete blocks (7,)
    mc(2500, 1300, 200, [1, 2, 4]),         # 3: continues 1 ((1, 2) is a prefix): 1300 - 1150 = 150
    mc(3000, 400, 5, [9]),                  # 4: new; no complete block, so never continued
    mc(4000, 1600, 60, [1, 2, 4, 5]),       # 5: continues 1 after 3 via (1, 2): 1600 - 1500 = 100
    mc(5000, 300, 2, [9]),                  # 6: new (4 has no complete block)
    mc(6000, 1700, 20, [7, 8, 10, 11]),     # 7: continues 2 via (7,): 1700 - 610 = 1090
    mc(7000, 1600, 100, [1, 2, 4, 5]),      # 8: identical to 5, the only candidate: a repeat -> new
    mc(8000, 2100, 7, [1, 2, 4, 6, 12]),    # 9: (1, 2, 4) ends 1 and 8: tie -> 8, the most recent:
                                            #    2100 - 1700 = 400
    mc(9000, 1710, 3, [7, 8, 10, 13]),      # 10: continues 2 via (7, 8, 10): 1710 - 1720 < 1 -> 1
]


def test_mooncake_by_hand(tmp_path):
    w, notes = tf.read(write(tmp_path, MOONCAKE))
    assert arrays(w) == {
        "conv":       [0, 0, 0, 1, 1, 1, 2, 3, 4, 4],
        "turn":       [0, 1, 2, 0, 1, 2, 0, 0, 0, 1],
        "arrival_ns": [0, 2500 * MS, 4000 * MS, 1000 * MS, 6000 * MS, 9000 * MS, 3000 * MS, 5000 * MS,
                       7000 * MS, 8000 * MS],
        "think_ns":   [0, 2500 * MS, 1500 * MS, 0, 5000 * MS, 3000 * MS, 0, 0, 0, 1000 * MS],
        "in_tok":     [1100, 150, 100, 600, 1090, 1, 400, 300, 1600, 400],
        "out_tok":    [50, 200, 60, 10, 20, 3, 5, 2, 100, 7],
    }
    assert w.names == ("line 1", "line 2", "line 4", "line 6", "line 8")
    assert notes == tf.TraceNotes("mooncake", requests=10, conversations=5, clamped=1, ties=1, repeats=1,
                                  multi_turn=3)
    assert arrays(load_trace(tmp_path / "t.jsonl")) == arrays(w)


def test_mooncake_longest_prefix_wins(tmp_path):
    w, notes = tf.read(write(tmp_path, [
        mc(0, 1100, 5, [1, 2, 3]),            # A, key (1, 2)
        mc(10, 1600, 5, [1, 2, 4, 5]),        # continues A: 1600 - 1105 = 495; A's key (1, 2, 4)
        mc(20, 1100, 5, [1, 2, 6]),           # (1, 2) is no open key any more: new B, key (1, 2)
        mc(30, 2100, 5, [1, 2, 4, 7, 8]),     # B matches 2 ids, A 3: A wins, 2100 - 1605 = 495
    ]))
    assert w.conv.tolist() == [0, 0, 0, 1] and w.turn.tolist() == [0, 1, 2, 0]
    assert w.in_tok.tolist() == [1100, 495, 495, 1100] and notes.ties == 0


def test_mooncake_all_blocks_is_the_literal_rule(tmp_path):
    """match="all_blocks" compares every id, the partial last block's too."""
    lines = [mc(0, 1024, 8, [1, 2]),          # exactly two complete blocks
             mc(10, 1100, 4, [1, 2, 3]),      # (1, 2) is all of line 1: continues it, 1100 - 1032 = 68
             mc(20, 1200, 4, [1, 2, 5]),      # (1, 2, 3) is not a prefix: new
             mc(30, 1200, 4, [1, 2, 5])]      # identical to line 3, so not a proper prefix: new
    w, notes = tf.read(write(tmp_path, lines), match="all_blocks")
    assert arrays(w) == {"conv": [0, 0, 1, 2], "turn": [0, 1, 0, 0], "arrival_ns": [0, 10 * MS, 20 * MS, 30 * MS],
                         "think_ns": [0, 10 * MS, 0, 0], "in_tok": [1024, 68, 1200, 1200], "out_tok": [8, 4, 4, 4]}
    assert (notes.repeats, notes.clamped) == (0, 0)  # an identical list never becomes a candidate
    # the default compares complete blocks only: line 3 continues line 2 via (1, 2); line 4
    # is identical to line 3 (a repeat) and its prefix (1, 2) names no open session any more
    w, notes = tf.read(write(tmp_path, lines))
    assert w.conv.tolist() == [0, 0, 0, 1] and w.in_tok.tolist() == [1024, 68, 96, 1200]
    assert notes.repeats == 1


def test_existing_conversation_log_unchanged(tmp_path):
    p = write(tmp_path, ['{"conversation": "x", "turn": 1, "arrival_s": 0, "input_tokens": 60, "output_tokens": 4}',
                         '{"conversation": "x", "turn": 2, "arrival_s": 1.5, "input_tokens": 7, "output_tokens": 2}'])
    assert tf.read(p) is None
    assert arrays(load_trace(p)) == {"conv": [0, 0], "turn": [0, 1], "arrival_ns": [0, 3 * S // 2],
                                     "think_ns": [0, 3 * S // 2], "in_tok": [60, 7], "out_tok": [4, 2]}
    csv = tmp_path / "c.csv"
    csv.write_text("conversation,turn,arrival_s,input_tokens,output_tokens\nx,1,0,60,4\n")
    assert tf.read(csv) is None and load_trace(csv).in_tok.tolist() == [60]


# --- bad lines -------------------------------------------------------------------------------

Q1 = '{"chat_id": 1, "parent_chat_id": -1, "timestamp": 1.0, "input_length": 10, "output_length": 2, "turn": 1}'


def q(**kv):
    rec = {"chat_id": 2, "parent_chat_id": 1, "timestamp": 2.0, "input_length": 20, "output_length": 2, "turn": 2}
    for k, v in kv.items():
        if v is KeyError:
            del rec[k]
        else:
            rec[k] = v
    return json.dumps(rec)


M1 = json.dumps(mc(0, 1100, 50, [1, 2, 3]))

BAD = {  # case: (lines, bad line, words in the message)
    "qwen malformed": ([Q1, '{"chat_id": 2,'], 2, "malformed JSON"),
    "qwen not an object": ([Q1, "[1, 2]"], 2, "JSON object"),
    "qwen missing input": ([Q1, q(input_length=KeyError)], 2, "missing field(s) input_length"),
    "qwen missing chat_id": ([Q1, q(chat_id=KeyError)], 2, "missing field(s) chat_id"),
    "qwen chat_id mistyped": ([Q1, q(chat_id=[2])], 2, "chat_id: expected"),
    "qwen chat_id bool": ([Q1, q(chat_id=True)], 2, "chat_id: expected"),
    "qwen parent mistyped": ([Q1, q(parent_chat_id=1.5)], 2, "parent_chat_id: expected"),
    "qwen timestamp string": ([Q1, q(timestamp="2")], 2, "timestamp: expected a number"),
    "qwen timestamp negative": ([Q1, q(timestamp=-1)], 2, "timestamp: must be >= 0"),
    "qwen input fractional": ([Q1, q(input_length=1.5)], 2, "input_length: expected an integer"),
    "qwen output negative": ([Q1, q(output_length=-3)], 2, "output_length: must be >= 0"),
    "qwen turn zero": ([Q1, q(turn=0)], 2, "turn: must be >= 1"),
    "qwen turn string": ([Q1, q(turn="2")], 2, "turn: expected an integer"),
    "qwen duplicate chat_id": ([Q1, q(chat_id=1, parent_chat_id=-1)], 2, "chat_id 1 already used on line 1"),
    "qwen parent missing": ([Q1, q(parent_chat_id=99)], 2, "parent_chat_id 99 does not exist"),
    "qwen parent later": ([Q1, q(parent_chat_id=3), q(chat_id=3, parent_chat_id=-1, turn=1)], 2,
                          "parent_chat_id 3 comes later in the file (line 3)"),
    "qwen parent itself": ([Q1, q(parent_chat_id=2)], 2, "is the request itself"),
    "qwen time backwards": ([Q1, q(timestamp=0.5)], 2, "before its parent 1 (line 1"),
    "qwen later line": ([Q1, q(), q(chat_id=3, parent_chat_id=2, output_length=-1)], 3, "output_length"),
    "mooncake malformed": ([M1, "{'timestamp': 1}"], 2, "malformed JSON"),
    "mooncake missing hash_ids": ([M1, '{"timestamp": 1, "input_length": 5, "output_length": 1}'], 2,
                                  "missing field(s) hash_ids"),
    "mooncake hash_ids not a list": ([M1, json.dumps(mc(1, 5, 1, 7))], 2, "hash_ids: expected a list"),
    "mooncake hash id string": ([M1, json.dumps(mc(1, 5, 1, ["7"]))], 2, "hash_ids: expected a list of integers"),
    "mooncake negative input": ([M1, json.dumps(mc(1, -5, 1, [7]))], 2, "input_length: must be >= 0"),
    "mooncake negative time": ([M1, json.dumps(mc(-1, 5, 1, [7]))], 2, "timestamp: must be >= 0"),
    "mooncake output string": ([M1, json.dumps(mc(1, 5, "1", [7]))], 2, "output_length: expected an integer"),
    "mooncake time backwards": ([json.dumps(mc(500, 1100, 50, [1, 2, 3])), json.dumps(mc(100, 1300, 5, [1, 2, 4]))],
                                2, "continues the conversation of line 1"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_line_names_the_line(case, tmp_path):
    lines, n, words = BAD[case]
    p = write(tmp_path, lines)
    with pytest.raises(ScenarioError) as e:
        load_trace(p)
    assert (e.value.file, e.value.field) == (str(p), f"line {n}")
    assert words in e.value.message, e.value.message


@pytest.mark.parametrize("case", ["qwen parent missing", "mooncake hash id string"])
def test_bad_line_exit_2(case, tmp_path, capsys):
    lines, n, words = BAD[case]
    p = write(tmp_path, lines)
    scen = tmp_path / "s.toml"
    scen.write_text(f'kind = "attention_store"\n[workload]\ntrace_file = "{p}"\n')
    out = tmp_path / "never.json"
    assert main(["run", str(scen), "--json-out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{p}: line {n}: " in err and words in err, err
    assert not out.exists()


# --- the bundled sample and a generated trace ------------------------------------------------

def test_bundled_mooncake_sample_loads():
    w, notes = tf.read(BUNDLED)
    assert len(w) == notes.requests == 3993
    assert w.n_conv == notes.conversations and notes.format == "mooncake"
    # figures the documentation reports for this file
    assert (notes.conversations, notes.multi_turn, notes.clamped) == (2689, 345, 1068)
    assert np.all(np.diff(w.conv) >= 0) and np.all(w.in_tok >= 1) and np.all(w.think_ns >= 0)
    assert int(w.out_tok.sum()) == sum(json.loads(ln)["output_length"] for ln in BUNDLED.read_text().splitlines())
    lic = BUNDLED.parent / "LICENSE-APACHE-Mooncake"
    assert "Apache License" in lic.read_text()


def generated_lines(n_requests: int, fmt: str, seed: int = 1) -> tuple[list[str], list[int]]:
    """A Mooncake- or Qwen-shaped trace of multi-turn conversations with known sessions, and
    for each line the index of its true conversation (in order of first request). Every
    request starts with one shared 512-token system-prompt block (id 0); first prompts are
    at least two blocks long, follow-ups hold the whole previous context plus 20-600 new tokens,
    so the Mooncake reconstruction can and must recover every session exactly."""
    rng = random.Random(seed)
    events = []  # (time_ms, conversation, turn, input, output, ids)
    next_id = 1
    conv = 0
    t0 = 0.0
    while len(events) < n_requests:
        t0 += rng.expovariate(1 / 200)
        turns = min(1 + int(rng.expovariate(1 / 2.5)), n_requests - len(events))
        n_in = rng.randint(1100, 20000)
        t = t0
        prev_ids: list[int] = []
        prev = None
        for k in range(turns):
            if prev is not None:
                n_in = prev[0] + prev[1] + rng.randint(20, 600)
                t += rng.expovariate(1 / 30000) + 1
            n_out = rng.randint(1, 800)
            keep = [0] if prev is None else prev_ids[:prev[0] // 512]  # previous complete blocks
            ids = keep + list(range(next_id, next_id + (-(-n_in // 512) - len(keep))))
            next_id += len(ids) - len(keep)
            events.append((round(t), conv, k, n_in, n_out, ids))
            prev, prev_ids = (n_in, n_out), ids
        conv += 1
    events.sort(key=lambda e: (e[0], e[1], e[2]))
    lines, truth, first, chat = [], [], {}, {}
    for i, (t, c, k, n_in, n_out, ids) in enumerate(events):
        first.setdefault(c, len(first))
        truth.append(first[c])
        if fmt == "mooncake":
            lines.append(json.dumps(mc(t, n_in, n_out, ids)))
        else:
            lines.append(json.dumps({"chat_id": i, "parent_chat_id": chat.get(c, -1), "timestamp": t / 1000,
                                     "input_length": n_in, "output_length": n_out, "type": "text",
                                     "turn": k + 1, "hash_ids": []}))
            chat[c] = i
    return lines, truth


@pytest.mark.parametrize("fmt", ["mooncake", "qwen"])
def test_generated_sessions_are_recovered(fmt, tmp_path):
    lines, truth = generated_lines(20_000, fmt)
    w, notes = tf.read(write(tmp_path, lines))
    assert notes.clamped == 0 and notes.forks == notes.ties == notes.repeats == 0
    assert notes.conversations == max(truth) + 1 and len(w) == 20_000
    # row r of the file sits in conversation truth[r]: compare conversation sizes and order
    assert np.bincount(w.conv).tolist() == np.bincount(truth).tolist()
    assert np.all(w.in_tok[w.turn > 0] >= 20) and np.all(w.in_tok[w.turn > 0] <= 600)


# --- the requests as recorded, block hashes kept (for a block-level prefix cache) -------------

def test_qwen_requests_keep_hash_ids_and_chat_fields(tmp_path):
    w, _ = tf.read(write(tmp_path, QWEN))
    r = w.requests
    assert r.format == "qwen" and r.block_tokens == 16 and len(r) == 8
    assert r.lines.tolist() == [1, 2, 3, 5, 6, 7, 8, 9]  # line 4 is blank
    assert r.hash_ids(0).tolist() == [1, 2, 3, 4, 5, 6, 7] and r.hash_counts.tolist() == [7, 0, 0, 0, 0, 0, 0, 0]
    assert r.chat_id == (1, 2, 3, 4, 5, 6, 7, 8)
    assert r.parent_chat_id == (-1, -1, 1, -1, 3, 2, 1, -1)
    assert r.turn == (1, 1, 2, None, 3, 4, 2, 1) and r.type == ("text",) + (None,) * 7
    assert r.times_s.tolist() == [0.5, 1.0, 2.25, 3, 4.0, 4.5, 5.0, 5.0]
    # each row (sorted by conversation then turn) points at its request in file order
    assert [r.chat_id[i] for i in w.request] == [1, 3, 5, 2, 6, 4, 7, 8]
    assert r.input_tokens[w.request].tolist() == [100, 150, 170, 50, 70, 10, 140, 9]


def test_mooncake_requests_keep_hash_ids(tmp_path):
    w, _ = tf.read(write(tmp_path, MOONCAKE))
    r = w.requests
    assert r.format == "mooncake" and r.block_tokens == 512 and r.chat_id is None
    assert [r.hash_ids(i).tolist() for i in range(len(r))] == [m["hash_ids"] for m in MOONCAKE]
    assert r.times_s.tolist() == [m["timestamp"] / 1000 for m in MOONCAKE]
    assert r.output_tokens[w.request].tolist() == w.out_tok.tolist()


def test_bundled_mooncake_requests_hold_every_hash_id():
    from kvviz.requests import prompts
    w, _ = tf.read(BUNDLED)
    recs = [json.loads(ln) for ln in BUNDLED.read_text().splitlines()]
    assert w.requests.hashes.tolist() == [h for rec in recs for h in rec["hash_ids"]]
    assert len(w.requests.hashes) == 121_877 and w.requests.hashes.dtype == np.int64
    alone = prompts.read(BUNDLED)  # what `kvviz replay` reads: the same table
    assert np.array_equal(alone.hashes, w.requests.hashes) and np.array_equal(alone.hash_offsets,
                                                                              w.requests.hash_offsets)
    assert np.array_equal(alone.times_s, w.requests.times_s)


def test_hash_ids_beyond_64_bits_named_by_line(tmp_path):
    p = write(tmp_path, [mc(0, 10, 1, [1]), mc(1, 10, 1, [2, 2**64])])
    with pytest.raises(ScenarioError, match="hash_ids: beyond 64-bit integers") as e:
        tf.read(p)
    assert (e.value.file, e.value.field) == (str(p), "line 2")
