"""One rule per trace value, wherever a trace is read (issue 23 point 9): a NUL byte does not make
a text trace binary (its reader names the line); Qwen/Bailian and Mooncake requests in time order
for replay and AttentionStore alike; a token count or a time beyond what the simulation can
represent refused at its line."""
import json

import numpy as np
import pytest

from kvviz.errors import ScenarioError
from kvviz.requests import conversation_log, conversations
from kvviz.requests.oracle_general import ORACLE_RECORD
from kvviz.requests.reader import detect_format, read_trace


def _qwen(*recs) -> str:
    keys = ("chat_id", "parent_chat_id", "timestamp", "input_length", "output_length")
    return "".join(json.dumps(dict(zip(keys, r), hash_ids=[1, 2])) + "\n" for r in recs)


def _line(excinfo) -> str:
    return excinfo.value.field


def _record_sized(text: bytes, filler) -> bytes:
    """`text` and a filler of k bytes making it whole 24-byte records, as oracleGeneral's are."""
    k = (-len(text) - len(filler(1)) + 1) % ORACLE_RECORD.itemsize or ORACLE_RECORD.itemsize
    return text + filler(k)


@pytest.mark.parametrize("text", [
    _record_sized(b"time,id,size\n0,a,1\n1,b,2\n2,c,x\0\n", lambda k: b"0," + b"d" * k + b",1\n"),
    _record_sized(b'{"timestamp": 0, "input_length": 9, "output_length": 1, "hash_ids": [1\0]}\n',
                  lambda k: b" " * k + b"\n"),
])
def test_a_nul_in_a_text_trace_is_named_by_its_line(tmp_path, text):
    assert len(text) % ORACLE_RECORD.itemsize == 0 and b"\0" in text
    f = tmp_path / "t.trace"
    f.write_bytes(text)
    assert detect_format(f) != "oracleGeneral"
    with pytest.raises(ScenarioError) as e:
        read_trace(f)
    assert _line(e).startswith("line "), str(e.value)


def test_an_unnamed_oracle_general_file_is_still_told_by_its_shape(tmp_path):
    a = np.zeros(4, dtype=ORACLE_RECORD)
    a["time"], a["id"], a["size"], a["next"] = [0, 1, 2, 3], [7, 8, 7, 9], 10, [2, -1, -1, -1]
    f = tmp_path / "t.bin"
    a.tofile(f)
    assert detect_format(f) == "oracleGeneral" and len(read_trace(f)) == 4


def test_qwen_going_back_in_time_is_refused_by_replay_and_attention_store_alike(tmp_path):
    f = tmp_path / "q.jsonl"
    f.write_text(_qwen((1, -1, 5.0, 10, 2), (2, -1, 3.0, 10, 2), (3, 1, 9.0, 20, 2)))
    with pytest.raises(ScenarioError) as replay:
        read_trace(f)
    with pytest.raises(ScenarioError) as store:
        conversations.read(f)
    assert _line(replay) == _line(store) == "line 2"
    assert str(replay.value) == str(store.value) and "goes backwards" in str(store.value)


@pytest.mark.parametrize("rec, key", [((1, -1, 0, 2 ** 40, 2), "input_length"), ((1, -1, 0, 10, 10 ** 30), "output_length"),
                                      ((1, -1, 1e300, 10, 2), "timestamp")])
def test_values_beyond_the_simulation_are_refused_at_their_line(tmp_path, rec, key):
    f = tmp_path / "q.jsonl"
    f.write_text(_qwen((0, -1, 0, 10, 2), rec))
    for read in (read_trace, conversations.read):
        with pytest.raises(ScenarioError) as e:
            read(f)
        assert _line(e) == "line 2" and e.value.message.startswith(key), str(e.value)


def test_a_conversation_log_token_count_beyond_the_simulation_names_its_line(tmp_path):
    f = tmp_path / "log.csv"
    f.write_text("conversation,turn,arrival_s,input_tokens,output_tokens\na,1,0,10,2\nb,1,1,99999999999999999999,2\n")
    with pytest.raises(ScenarioError) as e:
        conversation_log.read(f)
    assert _line(e) == "line 3" and "input_tokens" in e.value.message
