"""The fast paths for Mooncake traces (kvviz.requests.fast_jsonl: the compiled scanner, then
orjson) give exactly what the strict line-by-line reader gives, or step aside (None) so the
strict reader reads the file and refuses it with its own message and line."""
from pathlib import Path

import numpy as np
import pytest

from kvviz.errors import ScenarioError
from kvviz.requests import fast_jsonl, native, prompts

pytest.importorskip("orjson")

TRACES = Path(__file__).resolve().parents[1] / "resources" / "traces"
LINE = '{"timestamp":%s,"input_length":600,"output_length":1,"hash_ids":[%s]}'
GOOD = "\n".join(LINE % (t, f"{2 * t},{2 * t + 1}") for t in range(5)) + "\n"
FIELDS = ("format", "block_tokens", "lines", "times_s", "input_tokens", "output_tokens", "hash_offsets",
          "hashes", "chat_id", "parent_chat_id", "turn", "type", "source")


def strict(path: Path):
    keep = fast_jsonl.orjson, fast_jsonl.scanner
    fast_jsonl.orjson, fast_jsonl.scanner = None, lambda: None
    try:
        return prompts.read(path)
    finally:
        fast_jsonl.orjson, fast_jsonl.scanner = keep


@pytest.fixture(params=["scanner", "orjson"])
def path(request, monkeypatch):
    """Each fast path on its own: the compiled scanner (skipped where it is not built), orjson."""
    if request.param == "scanner":
        if native.scanner() is None:
            pytest.skip("the compiled scanner is not built")
        monkeypatch.setattr(fast_jsonl, "orjson", None)
    else:
        monkeypatch.setattr(fast_jsonl, "scanner", lambda: None)
    return request.param


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
    GOOD.replace("\n", "  \t\n").replace('":', '" :\t').replace(",", " , "),  # spaces and tabs
    GOOD.replace('"timestamp":0,"input_length":600,', '"input_length":600, "timestamp":0,'),  # any order
    GOOD.replace("[2,3]", "[-2,-0]").replace("[4,5]", "[999999999999999999,4]"),  # signs, 18 digits
    GOOD + '{"timestamp":5,"input_length":0,"output_length":1,"hash_ids":[]}',  # a prompt of no block
])
def test_fast_path_reads_what_the_strict_reader_reads(tmp_path, path, text):
    p = write(tmp_path, text)
    fast = prompts.fast_mooncake(p.read_bytes(), str(p))
    assert fast is not None
    same(fast, strict(p))


def test_fast_path_reads_the_bundled_trace_as_the_strict_reader_does(path):
    p = TRACES / "mooncake_synthetic_trace.jsonl"
    same(prompts.fast_mooncake(p.read_bytes(), str(p)), strict(p))


ASIDE = {
    "a key twice": GOOD.replace('"output_length":1,', '"output_length":1,"output_length":2,', 1),
    "a leading zero": GOOD.replace("[2,3]", "[02,3]"),
    "a leading zero in a length": GOOD.replace('"output_length":1,', '"output_length":01,', 1),
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
def test_fast_path_steps_aside_for_the_strict_reader(tmp_path, path, case):
    """None, so prompts.read gives the strict reader's answer: the same result or the same error."""
    p = write(tmp_path, ASIDE[case])
    assert prompts.fast_mooncake(p.read_bytes(), str(p)) is None
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


def test_time_order_is_refused_with_the_strict_readers_message(tmp_path, path):
    p = write(tmp_path, GOOD.replace('"timestamp":3,', '"timestamp":1,'))
    with pytest.raises(ScenarioError) as strict_error:
        strict(p)
    with pytest.raises(ScenarioError) as fast_error:
        prompts.fast_mooncake(p.read_bytes(), str(p))
    assert str(fast_error.value) == str(strict_error.value)
    assert "line 4" in str(fast_error.value)


FRACTIONAL = GOOD.replace(':0,', ':0.5,').replace(':1,"input', ':1.25,"input')
ORJSON_ONLY = {  # outside the scanner's grammar, read by orjson: the strict reader's result all the same
    "fractional ms": FRACTIONAL,
    "a numeric field more": GOOD.replace('"output_length":1,', '"output_length":1,"extra":7,'),
    "an escaped key": GOOD.replace('"timestamp":0', '"time\\u0073tamp":0'),
    "19-digit ids": GOOD.replace("[4,5]", "[1000000000000000000,4]"),
}


@pytest.mark.parametrize("case", ORJSON_ONLY)
def test_the_scanner_hands_over_to_orjson(tmp_path, case):
    p = write(tmp_path, ORJSON_ONLY[case])
    if native.scanner() is not None:
        data = p.read_bytes()
        assert native.scanner()(data, data.count(b"\n") + 1, data.count(b",") + data.count(b"\n") + 1) is None
    fast = prompts.fast_mooncake(p.read_bytes(), str(p))
    assert fast is not None
    same(fast, strict(p))


def test_the_scanners_source_hash_is_the_one_setup_py_compiles_in():
    """The scanner's loader hashes its folder as setup.py does (kvviz/serving/native/sources.py);
    its folder includes nothing from elsewhere, so the two agree there (AttentionStore's engine,
    which includes the serving core's .pxi files, is hashed with them by sources.py alone)."""
    from kvviz.serving.native import sources
    folder = Path(native.__file__).parent
    assert not sources.included_elsewhere(folder)
    assert native.source_hash(folder) == sources.source_hash(folder)


def test_mutated_traces_read_as_the_strict_reader_reads(tmp_path, path):
    """Random edits of a sound trace (a byte replaced, inserted or dropped): each fast path gives
    the strict reader's result or error, or steps aside; it never reads a file otherwise."""
    rng = np.random.default_rng(30)
    alphabet = b' \t\r\n{}[]:,"-.0123456789eE+aftnul\\\x0b\xc3\xa9'
    base = GOOD.encode()
    p = tmp_path / "t.jsonl"
    for _ in range(400):
        data = bytearray(base)
        for _ in range(int(rng.integers(1, 3))):
            at, c = int(rng.integers(0, len(data))), alphabet[int(rng.integers(0, len(alphabet)))]
            kind = rng.integers(0, 3)
            if kind == 0:
                data[at] = c
            elif kind == 1:
                data.insert(at, c)
            else:
                del data[at]
        p.write_bytes(bytes(data))
        try:
            want = strict(p)
        except ScenarioError as e:
            try:
                got = prompts.fast_mooncake(bytes(data), str(p))
            except ScenarioError as fast_error:
                assert str(fast_error) == str(e), bytes(data)
            else:
                assert got is None, bytes(data)
            continue
        got = prompts.fast_mooncake(bytes(data), str(p))
        if got is not None:
            assert want is not None, bytes(data)
            same(got, want)


def test_a_scanner_built_from_other_sources_is_not_run(monkeypatch):
    """As the engine's loader: a build whose compiled-in hash is not the sources' is never used
    (orjson or the strict reader reads instead)."""
    monkeypatch.setattr(native, "source_hash", lambda folder: "0" * 16)
    native.scanner.cache_clear()
    try:
        assert native.scanner() is None
    finally:
        monkeypatch.undo()
        native.scanner.cache_clear()
