"""Issue 29 ("Nothing lost, ever"): trace files a hostile tester wrote, each refused in one line
naming the file and the line or field (exit 2), never a traceback and never read as if sound."""
import json
import math
from pathlib import Path

import pytest

from kvviz.cli import main
from kvviz.errors import ScenarioError
from kvviz.mechanisms.attention_store.workload import load_trace

SHARED = Path("/work/shared/traces")
TRACES = Path(__file__).resolve().parents[1] / "resources" / "traces"
DEEP = "[" * 1000 + "]" * 1000

MOONCAKE = '{"timestamp":0,"input_length":600,"output_length":1,"hash_ids":[1,2]}'
QWEN = '{"chat_id":1,"timestamp":0,"input_length":1,"output_length":1,"hash_ids":[1]}'
PLAIN = '{"time":0,"input_tokens":1,"output_tokens":1,"block_tokens":16,"hash_ids":[1]}'
CONV = '{"conversation":"a","turn":1,"arrival_s":0,"input_tokens":1,"output_tokens":1}'


def refused(tmp_path, capsys, text: str, name: str = "t.jsonl", *args) -> str:
    """kvviz replay's one line on the file, which must exit 2."""
    p = tmp_path / name
    (p.write_bytes if isinstance(text, bytes) else p.write_text)(text)
    assert main(["replay", str(p), "--capacity", "1KB", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith(f"error: {p}"), err
    return err


def deep(rec: str) -> str:
    return rec[:-1] + f',"x":{DEEP}}}'


@pytest.mark.parametrize("first", [MOONCAKE, QWEN, PLAIN])
@pytest.mark.parametrize("at", [1, 2])
def test_json_nested_1000_deep_is_refused_at_its_line(tmp_path, capsys, first, at):
    lines = [deep(first)] if at == 1 else [first, deep(first)]
    err = refused(tmp_path, capsys, "\n".join(lines) + "\n")
    assert f"line {at}: nested deeper than 32 levels" in err


def test_conversation_log_nested_1000_deep_is_refused(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text(CONV + "\n" + deep(CONV) + "\n")
    with pytest.raises(ScenarioError, match="line 2: nested deeper"):
        load_trace(p)


@pytest.mark.parametrize("first", [MOONCAKE, QWEN, PLAIN])
def test_a_key_given_twice_is_refused(tmp_path, capsys, first):
    twice = first.replace('{', '{"hash_ids":[7],', 1)
    assert "hash_ids: given twice in one record" in refused(tmp_path, capsys, first + "\n" + twice + "\n")


def test_conversation_log_key_twice_and_string_numbers(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text(CONV.replace('"turn":1', '"turn":1,"turn":2') + "\n")
    with pytest.raises(ScenarioError, match="line 1: turn: given twice"):
        load_trace(p)
    for field, value, what in (("input_tokens", '"600"', "an integer"), ("arrival_s", '"0"', "a number"),
                               ("turn", "1.5", "an integer"), ("output_tokens", "true", "an integer")):
        p.write_text(CONV.replace(f'"{field}":', f'"{field}":{value},"_":') + "\n")
        with pytest.raises(ScenarioError, match=f"line 1: {field}: expected {what}"):
            load_trace(p)
    p.write_text(CONV.replace('"a"', '["a"]') + "\n")
    with pytest.raises(ScenarioError, match="line 1: conversation: expected"):
        load_trace(p)


@pytest.mark.parametrize("field, value", [("input_length", '"600"'), ("timestamp", '"0"'),
                                          ("output_length", "1.5"), ("hash_ids", '"1 2"')])
def test_string_numbers_are_refused_naming_the_field(tmp_path, capsys, field, value):
    rec = json.loads(MOONCAKE)
    rec[field] = json.loads(value)
    assert f"line 1: {field}: expected" in refused(tmp_path, capsys, json.dumps(rec) + "\n")


@pytest.mark.parametrize("n_in, n_ids", [(1, 79), (40_160, 0), (1025, 1), (512, 3)])
def test_mooncake_hash_ids_must_match_input_length(tmp_path, capsys, n_in, n_ids):
    rec = {"timestamp": 0, "input_length": n_in, "output_length": 1, "hash_ids": list(range(n_ids))}
    err = refused(tmp_path, capsys, MOONCAKE + "\n" + json.dumps(rec) + "\n")
    assert f"line 2: hash_ids: {n_ids} ids for input_length {n_in:,}" in err


@pytest.mark.parametrize("n_in, n_ids", [(1, 1), (512, 1), (513, 2), (513, 1), (513, 3), (0, 0), (0, 1)])
def test_mooncake_hash_ids_within_one_block_are_read(tmp_path, n_in, n_ids):
    from kvviz.requests import prompts
    p = tmp_path / "t.jsonl"
    p.write_text(MOONCAKE + "\n" + json.dumps({"timestamp": 1, "input_length": n_in, "output_length": 1,
                                                "hash_ids": list(range(n_ids))}) + "\n")
    assert prompts.read(p).hash_counts.tolist() == [2, n_ids]


@pytest.mark.parametrize("path", [SHARED / "mooncake_conversation_trace.jsonl", SHARED / "mooncake_synthetic_trace.jsonl",
                                  TRACES / "mooncake_synthetic_trace.jsonl", TRACES / "mooncake_conversation_trace.jsonl"])
def test_bundled_mooncake_traces_still_read(path):
    from kvviz.requests import prompts
    if not path.exists():
        pytest.skip(f"{path} not on this machine")
    assert len(prompts.read(path)) > 3000


def test_a_trace_of_no_block_is_refused(tmp_path, capsys):
    rec = '{"timestamp":0,"input_length":0,"output_length":1,"hash_ids":[]}\n'
    assert "no block to replay" in refused(tmp_path, capsys, rec)


def test_ragpulse_is_named_not_misread_as_mooncake(tmp_path, capsys):
    rec = {"timestamp": "82", "input_length": 3112, "output_length": 192,
           "hash_ids": {"sys_prompt": [8302], "passages_ids": [7398], "history": [], "web_search": [],
                        "user_input": [26923]}, "session_id": "1757476916095-afhwfadnh5ew"}
    assert "line 1: a RAGPulse trace" in refused(tmp_path, capsys, json.dumps(rec) + "\n")


@pytest.mark.parametrize("text, msg", [
    ("time,id,size\n" + "".join(f"{i},{i},10\n" for i in range(100)) + "1e300,a,10\n",
     "line 102: time: beyond the simulator's time range (at most 4.61e+09 s; got 1e+300)"),
    ("time,id,size\n0,a,10\n5e9,b,10\n", "line 3: time: beyond the simulator's time range"),
    ("time,id,size\n0,a,10\n1,b\0c,10\n", "line 3: a NUL byte"),
    ("time,id,size\n0,a,10\n1,,10\n", "line 3: id: empty"),
    ('time,id,size\n0,a,10\n1,"",10\n', "line 3: id: empty"),
    ("time,id,id,size\n0,a,b,10\n", "line 1: column(s) id named twice in the header"),
])
@pytest.mark.parametrize("fast", [True, False])
def test_csv_rows_out_of_range_nul_empty_id_and_a_header_twice(tmp_path, capsys, monkeypatch, text, msg, fast):
    if not fast:  # kvviz's own reader, as where pyarrow is missing
        from kvviz.requests import csv_format
        monkeypatch.setattr(csv_format, "_arrow_columns", lambda *a: None)
    assert msg in refused(tmp_path, capsys, text, "t.csv")


def test_plain_csv_and_conversation_log_headers_twice(tmp_path, capsys):
    err = refused(tmp_path, capsys, "time,input_tokens,output_tokens,block_tokens,hash_ids,time\n0,1,1,16,1,0\n", "p.csv")
    assert "line 1: column(s) time named twice" in err
    p = tmp_path / "c.csv"
    p.write_text("conversation,turn,arrival_s,input_tokens,output_tokens,turn\na,1,0,1,1,2\n")
    with pytest.raises(ScenarioError, match="line 1: column.s. turn named twice"):
        load_trace(p)


@pytest.mark.parametrize("tool, kind", [("gzip", "gzip"), ("bz2", "bzip2"), ("lzma", "xz")])
def test_a_compressed_trace_is_named_for_its_compression(tmp_path, capsys, tool, kind):
    import importlib
    data = importlib.import_module(tool).compress(b"time,id,size\n0,a,1\n1,b,1\n" * 50)
    for fmt in ("auto", "csv"):
        err = refused(tmp_path, capsys, data, "t.csv", "--format", fmt)
        assert f"compressed with {kind}: kvviz decompresses zstd traces only" in err


def test_an_oracle_general_trace_starting_with_gzip_bytes_is_read(tmp_path):
    import numpy as np

    from kvviz.requests.oracle_general import ORACLE_RECORD
    from kvviz.requests.reader import read_trace
    rec = np.zeros(3, dtype=ORACLE_RECORD)
    rec["time"], rec["id"], rec["size"], rec["next"] = [0x88B1F, 0x88B20, 0x88B21], [1, 2, 1], 5, [2, -1, -1]
    p = tmp_path / "t.bin"
    p.write_bytes(rec.tobytes())
    assert p.read_bytes()[:3] == b"\x1f\x8b\x08"
    assert read_trace(p).ids.tolist() == [0, 1, 0]


def replay_err(capsys, *argv) -> str:
    assert main(["replay", *map(str, argv)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    return err


def test_an_empty_shards_sample_is_refused_with_a_rate_that_samples(tmp_path, capsys):
    p = tmp_path / "t.csv"
    p.write_text("time,id,size\n" + "".join(f"{i},{i % 7},100\n" for i in range(50)))
    err = replay_err(capsys, p, "--capacity", "1KB", "--sample-rate", "1e-300")
    assert err.startswith("error: --sample-rate: the SHARDS sample at R=1e-300 holds no request"), err
    enough = err.split("a rate of ")[1].split()[0]
    assert main(["replay", str(p), "--capacity", "1KB", "--sample-rate", enough, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["request_miss_ratio"] > 0
    # just below it, still empty: the rate named is the one that samples, not any larger one
    below = str(float(enough) - 10 ** (math.floor(math.log10(float(enough))) - 1))
    assert "holds no request" in replay_err(capsys, p, "--capacity", "1KB", "--sample-rate", below)


@pytest.mark.parametrize("capacity", ["0.5", "1.5", "0", "-5", "0.0001KB"])
def test_a_fractional_or_zero_capacity_says_whole_bytes(tmp_path, capsys, capacity):
    p = tmp_path / "t.csv"
    p.write_text("time,id,size\n0,a,1\n1,b,1\n")
    err = replay_err(capsys, p, "--capacity", capacity)
    assert err == f"error: --capacity: capacity must be a whole number of bytes, at least 1 (got '{capacity}')"
