"""The orjson fast path for Mooncake traces (kvviz.requests.fast_jsonl) gives exactly what the
strict line-by-line reader gives, or steps aside (None) so the strict reader reads the file and
refuses it with its own message and line."""
from pathlib import Path

import numpy as np
import pytest

from kvviz.errors import ScenarioError
from kvviz.requests import fast_jsonl, prompts

pytest.importorskip("orjson")

TRACES = Path(__file__).resolve().parents[1] / "resources" / "traces"
LINE = '{"timestamp":%s,"input_length":600,"output_length":1,"hash_ids":[%s]}'
GOOD = "\n".join(LINE % (t, f"{2 * t},{2 * t + 1}") for t in range(5)) + "\n"
FIELDS = ("format", "block_tokens", "lines", "times_s", "input_tokens", "output_tokens", "hash_offsets",
          "hashes", "chat_id", "parent_chat_id", "turn", "type", "source")


def strict(path: Path):
    keep, fast_jsonl.orjson = fast_jsonl.orjson, None
    try:
        return prompts.read(path)
    finally:
        fast_jsonl.orjson = keep


def same(a, b) -> None:
    for f in FIELDS:
        x, y = getattr(a, f), getattr(b, f)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), f
        else:
            assert x == y, f


def write(tmp_path, text) -> Path:
    p = tmp_path / "t.jsonl"
    (p.write_bytes if isinstance(text, bytes) else p.write_text)(text)
    return p


@pytest.mark.parametrize("text", [
    GOOD,
    GOOD.rstrip("\n"),                                   # no newline at the end
    "\n\n" + GOOD.replace("\n", "\n \n\t\n", 2),          # blank lines: records keep their line numbers
    GOOD.replace("\n", "\r\n").encode(),                 # Windows line ends
    GOOD.replace(':0,', ':0.5,').replace(':1,"input', ':1.25,"input'),  # fractional ms
    GOOD + '{"timestamp":5,"input_length":0,"output_length":1,"hash_ids":[]}',  # a prompt of no block
    GOOD.replace('"output_length":1,', '"output_length":1,"extra":7,'),  # another field, a number
])
def test_fast_path_reads_what_the_strict_reader_reads(tmp_path, text):
    p = write(tmp_path, text)
    fast = fast_jsonl.mooncake(p.read_bytes(), str(p))
    assert fast is not None
    same(fast, strict(p))


def test_fast_path_reads_the_bundled_trace_as_the_strict_reader_does():
    p = TRACES / "mooncake_synthetic_trace.jsonl"
    same(fast_jsonl.mooncake(p.read_bytes(), str(p)), strict(p))


ASIDE = {
    "a key twice": GOOD.replace('"output_length":1,', '"output_length":1,"output_length":2,', 1),
    "a string value": GOOD.replace('"output_length":1,', '"output_length":1,"type":"chat",', 1),
    "a nested object": GOOD.replace('"output_length":1,', '"output_length":1,"x":{"y":1},', 1),
    "a nested list": GOOD.replace('"output_length":1,', '"output_length":1,"x":[[1]],', 1),
    "a float id": GOOD.replace("[2,3]", "[2,3.0]"),
    "a boolean id": GOOD.replace("[2,3]", "[2,true]"),
    "an id beyond 64 bits": GOOD.replace("[2,3]", "[2,18446744073709551616]"),
    "an id beyond int64": GOOD.replace("[2,3]", "[2,9223372036854775808]"),
    "input_length as a float": GOOD.replace('"input_length":600', '"input_length":600.0', 1),
    "a boolean length": GOOD.replace('"output_length":1', '"output_length":true', 1),
    "a missing key": GOOD.replace('"output_length":1,', "", 1),
    "too many ids": GOOD.replace("[2,3]", "[2,3,4,5]"),
    "a negative timestamp": GOOD.replace('"timestamp":1,', '"timestamp":-1,'),
    "a timestamp beyond the range": GOOD.replace('"timestamp":4,', '"timestamp":4e15,'),
    "NaN": GOOD.replace('"timestamp":1,', '"timestamp":NaN,'),
    "not an object": GOOD + "[1]\n",
    "two records on a line": GOOD.rstrip("\n") + " " + LINE % (9, "") + "\n",
    "a record over two lines": GOOD.replace('"hash_ids":[2,3]', '"hash_ids":\n[2,3]'),
    "malformed": GOOD + "{\n",
    "a lone carriage return": GOOD.replace("\n", "\r", 1),
    "a form feed between records": GOOD.replace("\n", "\x0c", 1),
    "a byte-order mark": "\ufeff" + GOOD,
    "non-ASCII": GOOD.replace('"output_length":1,', '"output_length":1,"\u00e9":1,', 1),
    "no record": "\n \n",
}


@pytest.mark.parametrize("case", ASIDE)
def test_fast_path_steps_aside_for_the_strict_reader(tmp_path, case):
    """None, so prompts.read gives the strict reader's answer: the same result or the same error."""
    p = write(tmp_path, ASIDE[case])
    assert fast_jsonl.mooncake(p.read_bytes(), str(p)) is None
    try:
        want = strict(p)
    except ScenarioError as e:
        with pytest.raises(ScenarioError) as got:
            prompts.read(p)
        assert str(got.value) == str(e)
    else:
        if want is None:  # not read as a request trace at all (its first line is no record)
            assert prompts.read(p) is None
        else:
            same(prompts.read(p), want)


def test_time_order_is_refused_with_the_strict_readers_message(tmp_path):
    p = write(tmp_path, GOOD.replace('"timestamp":3,', '"timestamp":0.5,'))
    with pytest.raises(ScenarioError) as strict_error:
        strict(p)
    with pytest.raises(ScenarioError) as fast_error:
        fast_jsonl.mooncake(p.read_bytes(), str(p))
    assert str(fast_error.value) == str(strict_error.value)
    assert "line 4" in str(fast_error.value)
