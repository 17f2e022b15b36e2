"""Every read is bounded (issue 23): inputs that must be files are regular files read under a
cap (kvviz.limits), a FIFO or a device is refused by name at once, and a zstd trace stops
decompressing at its cap before writing past it."""
import os
import threading

import pytest

from kvviz.cli import main
from kvviz.errors import ScenarioError
from kvviz.io import read_capped
from kvviz.requests.reader import read_trace

from .conftest import SCENARIOS


def _err_lines(capsys):
    return capsys.readouterr().err.strip().splitlines()


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe.csv"
    os.mkfifo(path)
    yield path
    # nothing ever opens it for writing: a reader that blocked on it would hang the test


def _bounded(fn, seconds=20):
    """fn() in a thread; the test fails (instead of hanging) if it blocks."""
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("r", fn()), daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "blocked"
    return box.get("r")


def test_dev_zero_as_the_token_file_is_refused_at_once(tmp_path, capsys):
    text = (SCENARIOS / "engram_qwen3_32b_cxl.toml").read_text()
    text = text.replace('source = "zipf"', 'source = "file"\nfile = "/dev/zero"', 1)
    f = tmp_path / "s.toml"
    f.write_text(text)
    assert _bounded(lambda: main(["validate", str(f)])) == 2
    err = _err_lines(capsys)
    assert len(err) == 1 and "tokens.file" in err[0] and "/dev/zero" in err[0] and "character device" in err[0], err


def test_a_fifo_as_a_replay_trace_is_refused_at_once(fifo, capsys):
    assert _bounded(lambda: main(["replay", str(fifo), "--capacity", "10"])) == 2
    err = _err_lines(capsys)
    assert len(err) == 1 and str(fifo) in err[0] and "FIFO" in err[0], err


def test_a_fifo_as_a_scenario_or_its_trace_file_is_refused_at_once(fifo, tmp_path, capsys):
    assert _bounded(lambda: main(["validate", str(fifo)])) == 2
    assert "FIFO" in _err_lines(capsys)[0]
    text = (SCENARIOS / "attention_store_mooncake.toml").read_text()
    f = tmp_path / "s.toml"
    f.write_text(text.replace('"../resources/traces/mooncake_synthetic_trace.jsonl"', f'"{fifo}"'))
    assert _bounded(lambda: main(["validate", str(f)])) == 2
    err = _err_lines(capsys)
    assert len(err) == 1 and "trace_file" in err[0], err


def test_a_folder_is_no_trace(tmp_path):
    with pytest.raises(ScenarioError, match="is a folder"):
        read_trace(tmp_path)


def test_reads_stop_at_the_cap(tmp_path):
    f = tmp_path / "big.toml"
    f.write_bytes(b"# " + b"x" * 100 + b"\n")
    assert read_capped(f, "file", 200).startswith(b"# x")
    with pytest.raises(ScenarioError, match="kvviz reads at most 50"):
        read_capped(f, "file", 50)


zstandard = pytest.importorskip("zstandard")


def test_a_zstd_bomb_is_refused_before_it_writes_past_the_cap(tmp_path, monkeypatch, capsys):
    bomb = tmp_path / "bomb.csv.zst"
    cctx = zstandard.ZstdCompressor(level=19)
    bomb.write_bytes(cctx.compress(b"time,id,size\n" + b"1,1,1\n" * (2 << 20)))  # 12 MiB of text
    written = []
    import kvviz.requests.zstd as z
    real = z._unzstd

    def spy(zstd, src, dst, cap, path, caps):
        class Dst:
            def write(self, b):
                written.append(len(b))
                return dst.write(b)
        return real(zstd, src, Dst(), cap, path, caps)

    monkeypatch.setattr(z, "_unzstd", spy)
    assert main(["replay", str(bomb), "--capacity", "10"]) == 2
    err = _err_lines(capsys)
    size = bomb.stat().st_size
    assert len(err) == 1 and "decompresses to more than" in err[0] and "--max-decompressed-ratio" in err[0], err
    assert sum(written) <= 200 * size  # the default ratio's cap was never passed
    # raised by the flag, the same file is read (a small absolute cap still refuses it)
    assert main(["replay", str(bomb), "--capacity", "10", "--max-decompressed-ratio", "100000"]) == 0
    capsys.readouterr()
    assert main(["replay", str(bomb), "--capacity", "10", "--max-decompressed-ratio", "100000",
                 "--max-decompressed-gb", "0.01"]) == 2
    assert "10,000,000 bytes" in _err_lines(capsys)[0]


def test_a_jsonl_trace_with_a_byte_order_mark_reads_like_one_without(tmp_path):
    lines = ('{"timestamp": 0, "input_length": 1024, "output_length": 4, "hash_ids": [1, 2]}\n'
             '{"timestamp": 1, "input_length": 1024, "output_length": 4, "hash_ids": [1, 3]}\n').encode()
    plain, bom = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    plain.write_bytes(lines)
    bom.write_bytes(b"\xef\xbb\xbf" + lines)
    a, b = read_trace(plain), read_trace(bom)
    assert a.ids.tolist() == b.ids.tolist() and a.sizes.tolist() == b.sizes.tolist() and len(a) == 4
