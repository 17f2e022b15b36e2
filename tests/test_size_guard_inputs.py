"""The size guard covers what a run reads, not only what it generates (issue 23 point 10): a
trace-driven AttentionStore run (from the trace file's size and lines), `kvviz replay` (from the
trace and the number of runs) and validating huge arrays. Each is refused in one line, exit 2,
under a small --max-memory-gb, and allowed under the default."""
import json

import pytest

from kvviz.cli import main
from kvviz.loading import load_scenario
from kvviz.mechanisms.attention_store import estimate as attention_store_estimate
from kvviz.replay.size import replay_estimate
from kvviz.requests.extent import extent
from kvviz.size_guard import DEFAULT_MAX_MEMORY_GB, validation_estimate

from .conftest import ROOT, SCENARIOS

MOONCAKE = str(SCENARIOS / "attention_store_mooncake.toml")
ZIPF = str(ROOT / "resources" / "traces" / "zipf_20k.csv")


def _refused(capsys, rc: int, what: str) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert f"too large to {what}" in err[0] and "--max-memory-gb" in err[0], err
    return err[0]


def test_extent_counts_records_by_format(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("time,id,size\n0,a,1\n1,b,2\n")
    assert (extent(csv).lines, extent(csv).kind) == (3, "text")
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_text('{"timestamp": 0, "input_length": 9, "output_length": 1, "hash_ids": [1, 2, 3]}\n')
    e = extent(jsonl)
    assert (e.lines, e.blocks, e.kind) == (1, 5, "jsonl")  # 5 commas: an upper bound on 3 ids
    og = tmp_path / "t.oracleGeneral"
    og.write_bytes(b"\0" * 48)
    assert (extent(og).lines, extent(og).kind) == (2, "binary")


def test_extent_scales_the_sample_by_the_file_size(tmp_path):
    big = tmp_path / "big.csv"
    big.write_text("time,id,size\n" + "0,a,1\n" * 400_000)  # 2.4 MB: past the 1 MiB sample
    assert extent(big).lines == pytest.approx(400_001, rel=0.01)


def test_trace_driven_attention_store_is_sized_by_its_trace(tmp_path):
    sc = load_scenario(MOONCAKE)
    small = attention_store_estimate(sc)
    assert small is not None and small.field == "workload.trace_file"
    assert small.bytes < DEFAULT_MAX_MEMORY_GB * 1e9  # the bundled run is allowed by default
    lines = (ROOT / "resources" / "traces" / "mooncake_synthetic_trace.jsonl").read_text().splitlines()
    recs = [json.loads(x) for x in lines]
    end = recs[-1]["timestamp"] + 1
    doubled = tmp_path / "doubled.jsonl"
    doubled.write_text("".join(json.dumps(dict(r, timestamp=r["timestamp"] + k * end)) + "\n"
                               for k in range(2) for r in recs))
    big = attention_store_estimate(load_scenario(MOONCAKE, [f'workload.trace_file="{doubled}"']))
    assert big.bytes == pytest.approx(2 * small.bytes, rel=0.05)  # twice the lines, twice the size


def test_trace_driven_attention_store_refused_under_a_small_limit(capsys):
    rc = main(["run", MOONCAKE, "--max-memory-gb", "0.001"])
    assert "workload.trace_file" in _refused(capsys, rc, "simulate")


def test_replay_refused_under_a_small_limit_and_allowed_by_default(capsys):
    line = _refused(capsys, main(["replay", ZIPF, "--capacity", "10%", "--max-memory-gb", "0.001"]), "replay")
    assert line.startswith(f"error: {ZIPF}: ")
    assert main(["replay", ZIPF, "--capacity", "10%", "--engine", "python"]) == 0


def test_replay_estimate_grows_with_runs_and_workers(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("time,id,size\n" + "0,a,1\n" * 999)
    e = extent(csv)
    one, many = replay_estimate(e, 1, 1), replay_estimate(e, 8, 4)
    assert one.bytes == pytest.approx(1000 * 180)  # in this process: the trace held, one run
    assert many.bytes == pytest.approx(1000 * (180 + 4 * 185))  # four workers, each with the trace
    assert replay_estimate(None, 1, 1) is None  # a zstd file without a stated size


def test_validation_estimate_counts_values_in_arrays():
    est = validation_estimate({"kind": "x", "a": [1, 2, [3, 4]], "b": {"c": [{"x": 1}]}, "n": 5})
    assert est.bytes == 7 * 200 and est.field == "a"  # 1, 2, [3, 4], 3, 4 and {x = 1}, 1
    assert validation_estimate({"kind": "x", "n": 5}) is None


def test_huge_array_refused_before_validation(tmp_path, capsys):
    text = (SCENARIOS / "rope_prefetch_16.toml").read_text()
    f = tmp_path / "many_reads.toml"
    f.write_text(text + "".join(f"[[reads]]\nt_us = {i}\npositions = [1]\n" for i in range(30, 5030)))
    line = _refused(capsys, main(["validate", str(f), "--max-memory-gb", "0.001"]), "validate")
    assert line.startswith(f"error: {f}: reads: "), line
    assert main(["validate", str(f)]) == 0
