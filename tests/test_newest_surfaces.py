"""Defects a hostile tester found on the newest input surfaces (`kvviz replay --prefix` in every
format, cluster scenarios under --set, the run's output flags), one regression test each: every
one is refused in one line naming the file and the field or line (exit 2), or runs with sound
numbers, never a traceback. tests/test_fuzz_newest_surfaces.py draws many more of each kind."""
import gzip
import json
from pathlib import Path

import pytest

from kvviz.cli import main

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "scenarios" / "cluster_llmd_precise.toml"
# the llm-d scenario cut to 8 requests (3 groups x 2 users, 2/s for 3 s): a run of a fraction of a second
SMALL = ["--set", "workload.stages=[[2, 3]]", "--set", "workload.groups=3", "--set", "workload.prompts_per_group=2"]
MOONCAKE = "".join(json.dumps({"timestamp": i * 10, "input_length": 1024, "output_length": 4,
                               "hash_ids": [i % 3, i % 5 + 3]}) + "\n" for i in range(20))


def refusal(capsys, argv: list[str]) -> str:
    """The one error line of a command that must exit 2."""
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.count("\n") == 0 and err.startswith("error: ") and "Traceback" not in err, err
    return err


# --- kvviz replay --prefix ------------------------------------------------------------------------

@pytest.mark.parametrize("policy", ["lru", "fifo", "belady"])
@pytest.mark.parametrize("capacity", [str(2 ** 63), "9" * 30, "1" + "0" * 30 + "%", "9" * 400 + "%"])
def test_a_block_capacity_past_64_bits_is_refused_not_a_traceback(tmp_path, capsys, policy, capacity):
    """The compiled caches (the lean LRU's and the block cache's) hold a capacity in an int64: 2**63
    blocks raised OverflowError from inside them, and "9"*400 + "%" (a float's infinity) from
    round(); now --capacity names its limit. 2**62 still runs."""
    p = tmp_path / "t.jsonl"
    p.write_text(MOONCAKE)
    err = refusal(capsys, ["replay", str(p), "--prefix", "--policy", policy, "--capacity", capacity])
    assert "--capacity: a capacity must be at most 4,611,686,018,427,387,904 blocks" in err
    assert main(["replay", str(p), "--prefix", "--policy", policy, "--capacity", str(2 ** 62)]) == 0


@pytest.mark.parametrize("fmt", ["auto", "mooncake"])
def test_a_byte_that_is_not_utf8_past_line_1_is_named_by_its_offset(tmp_path, capsys, fmt):
    """The format was told from the first record, decoded with the first 8 KB: a bad byte on
    line 21 made line 1 "not a mooncake request trace". Now the whole-file reader names the byte."""
    p = tmp_path / "t.jsonl"
    p.write_bytes(MOONCAKE.encode() + b'{"timestamp": 999, "hash_ids": [1]}\xff\n')
    err = refusal(capsys, ["replay", str(p), "--prefix", "--format", fmt, "--capacity", "2"])
    assert err == f"error: {p}: cannot read trace file: not UTF-8 text (byte {len(MOONCAKE) + 35})"


def test_a_carriage_return_alone_still_ends_a_line(tmp_path, capsys):
    p = tmp_path / "t.jsonl"
    p.write_text(MOONCAKE.replace("\n", "\r"), newline="")
    assert main(["replay", str(p), "--prefix", "--capacity", "2"]) == 0
    assert "20 requests" in capsys.readouterr().out


@pytest.mark.parametrize("text", ["", "\n  \n\t\n", "\ufeff\n"])
def test_an_empty_trace_says_so(tmp_path, capsys, text):
    """An empty or blank file was "line 1: not a Mooncake, Qwen/Bailian or plain request trace"."""
    p = tmp_path / "t.jsonl"
    p.write_text(text)
    err = refusal(capsys, ["replay", str(p), "--prefix", "--capacity", "2"])
    assert err == f"error: {p}: the trace has no requests (the file is empty or blank)"


# --- cluster scenarios ----------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["gzip", "zstd"])
@pytest.mark.parametrize("scenario", ["cluster_llmd_precise", "prefix_cache_mooncake"])
def test_a_compressed_workload_trace_is_named_compressed(tmp_path, capsys, how, scenario):
    """A gzip (or, for the cluster, zstd) trace was "line 1: not a Mooncake, Qwen/Bailian, plain
    or RAGPulse request trace": a scenario reads its trace uncompressed, and now says so."""
    if how == "zstd" and scenario == "prefix_cache_mooncake":
        pytest.skip("its trace_file's own check names a .zst before the read (tests/test_prefix_cache.py)")
    zstandard = pytest.importorskip("zstandard") if how == "zstd" else None
    data = gzip.compress(MOONCAKE.encode()) if zstandard is None else zstandard.ZstdCompressor().compress(
        MOONCAKE.encode())
    p = tmp_path / ("t.jsonl" if how == "gzip" else "t.jsonl.zst")
    p.write_bytes(data)
    err = refusal(capsys, ["run", scenario, "--set", f'workload.trace_file="{p}"'])
    assert err.startswith(f"error: {p}: compressed with {how}: a scenario reads its trace uncompressed")


@pytest.mark.parametrize("pool", [
    ["--set", "instance.hbm_cache_tokens=8200"],                                       # shared HBM pool
    ["--set", "cluster.prefill_instances=4", "--set", "instance.hbm_cache_tokens=8200"],  # its decode side
    ["--set", 'instance.hbm_pool="split"', "--set", "instance.running_kv_gb=0.001"],     # split pools
])
def test_a_cluster_request_no_pool_can_hold_is_refused(capsys, pool):
    """A request whose prompt and reply outgrew the running pool waited forever; the run ended
    without it and said exit 0 with a mean TTFT of -1,248 ms (0 minus its arrival). Now the
    pool's field is named (7,200-token prompts and 1,000-token replies: 8,201 tokens with the
    headroom); one token more runs, every TTFT and end-to-end time positive."""
    err = refusal(capsys, ["run", str(CLUSTER), *SMALL, *pool])
    field = "instance.running_kv_gb" if "split" in pool[1] else "instance.hbm_cache_tokens"
    assert f"{CLUSTER}: {field}: request 1 of shared-prefix generator" in err
    assert "needs 8,201 tokens of KV (prompt 7,200, reply 1,000, 1 of headroom)" in err and "wait forever" in err
    if field == "instance.hbm_cache_tokens":
        assert main(["run", str(CLUSTER), "--json", *SMALL, *pool[:-1], "instance.hbm_cache_tokens=8201"]) == 0
        m = json.loads(capsys.readouterr().out)["metrics"]
        assert m["served"] == 8 and m["ttft_p50_ms"] > 0 and m["mean_ttft_ms"] > 0 and m["e2e_mean_ms"] > 0


def test_a_shared_pool_large_enough_for_the_bundled_runs_is_not_refused(capsys):
    """The check is the batcher's own rule: the bundled llm-d scenario (its pool 307,328 tokens)
    runs as before."""
    assert main(["run", str(CLUSTER), *SMALL, "--metric", "served"]) == 0
    assert capsys.readouterr().out.strip() == "8"


def test_the_check_runs_on_a_trace_workload_too(tmp_path, capsys):
    p = tmp_path / "t.jsonl"
    p.write_text(MOONCAKE)
    err = refusal(capsys, ["run", str(CLUSTER), "--set", f'workload.trace_file="{p}"',
                           "--set", "instance.hbm_cache_tokens=1000"])
    assert "instance.hbm_cache_tokens: request 1 of t.jsonl (mooncake: 20 requests) needs 1,029 tokens" in err


def test_the_fixture_trace_is_sound(tmp_path):
    """The traces above are refused for the one thing each test changes."""
    p = tmp_path / "t.jsonl"
    p.write_text(MOONCAKE)
    assert main(["replay", str(p), "--prefix", "--capacity", "2"]) == 0


# --- RAGPulse (its trace and five side files) -------------------------------------------------

SIDES = (("1_sys_prompt.jsonl", "sys_prompt_id", [1]), ("2_passages.jsonl", "passage_id", [0, 1, 2]),
         ("3_history.jsonl", "history_id", []), ("4_user_input.jsonl", "user_input_id", range(10, 20)),
         ("5_web_search.jsonl", "web_search_id", []))


def ragpulse(folder: Path, **line3) -> Path:
    """A RAGPulse trace of 8 requests with its side files; `line3` replaces fields of its third line."""
    for name, key, ids in SIDES:
        (folder / name).write_text("".join(json.dumps({key: i, "token_length": 100}) + "\n" for i in ids))
    recs = [{"timestamp": str(i), "input_length": 1000, "output_length": 5, "session_id": f"s{i}",
             "hash_ids": {"sys_prompt": [1], "passages_ids": [i % 3], "history": [], "web_search": [],
                          "user_input": [10 + i]}} for i in range(8)]
    recs[2].update(line3)
    p = folder / "0_trace.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return p


def test_the_ragpulse_fixture_is_sound(tmp_path, capsys):
    assert main(["replay", str(ragpulse(tmp_path)), "--prefix", "--capacity", "2"]) == 0
    assert "8 requests, 24 blocks of at most 512 tokens (12 distinct), ragpulse" in capsys.readouterr().out


@pytest.mark.parametrize("stamp", ["1_0", "\u0663", "0x3", " 1e400 "])
def test_a_ragpulse_timestamp_is_a_decimal_number(tmp_path, capsys, stamp):
    """float() read "1_0" as 10 and "\u0663" (an Arabic-Indic 3) as 3: a timestamp JSON never writes."""
    p = ragpulse(tmp_path, timestamp=stamp)
    err = refusal(capsys, ["replay", str(p), "--prefix", "--format", "ragpulse", "--capacity", "2"])
    assert err.startswith(f"error: {p}: line 3: timestamp: ")


def test_a_ragpulse_session_id_of_true_is_refused(tmp_path, capsys):
    """true passed as an integer session id (bool is int to isinstance)."""
    p = ragpulse(tmp_path, session_id=True)
    err = refusal(capsys, ["replay", str(p), "--prefix", "--capacity", "2"])
    assert err == f"error: {p}: line 3: session_id: expected a string, got True"


def test_a_folder_in_place_of_a_side_file_is_named_a_folder(tmp_path, capsys):
    """It was "the RAGPulse side file is missing" while the folder was right there."""
    p = ragpulse(tmp_path)
    (tmp_path / "2_passages.jsonl").unlink()
    (tmp_path / "2_passages.jsonl").mkdir()
    err = refusal(capsys, ["replay", str(p), "--prefix", "--capacity", "2"])
    assert err == f"error: {tmp_path / '2_passages.jsonl'}: is a folder: kvviz reads a RAGPulse side file only " \
                  f"from a regular file"


@pytest.mark.parametrize("prefix", [True, False])
def test_a_trace_of_another_format_named_ragpulse_is_refused_at_its_line(tmp_path, capsys, prefix):
    """--format ragpulse on a Mooncake trace with no side files beside it asked for the side
    files first; the trace's own line 1 is what is wrong, and the side files are read only for
    a line that is RAGPulse's."""
    p = tmp_path / "t.jsonl"
    p.write_text(MOONCAKE)
    argv = ["replay", str(p), "--format", "ragpulse"] + (["--prefix", "--capacity", "2"] if prefix
                                                         else ["--capacity", "1MB"])
    err = refusal(capsys, argv)
    assert err.startswith(f"error: {p}: line 1: hash_ids: expected an object of sys_prompt, passages_ids")


# --- output flags ---------------------------------------------------------------------------------

QUICK = ["run", str(ROOT / "scenarios" / "rope_prefetch_16.toml"), "--set", "sequence.length=64"]


@pytest.mark.parametrize("argv", [QUICK + ["--json-out", ""], QUICK + ["--csv", ""], QUICK + ["--svg", ""],
                                  ["plan", "plan_prefix_tiers", "--svg", ""],
                                  ["operating-point", "attention_store_sharegpt", "--svg-dir", ""],
                                  ["claims", "rope_prefetch_16", "--readme", ""]])
def test_an_empty_output_name_is_refused(tmp_path, capsys, monkeypatch, argv):
    """`--json-out ""` (an unset shell variable) was no output at all: exit 0, nothing written,
    not a word. Now the flag is named, before anything runs."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err.strip()
    assert e.value.code == 2 and err.count("\n") == 0 and f"{argv[-2]}: an empty file name" in err, err
    assert list(tmp_path.iterdir()) == []


def test_a_folder_whose_mode_says_read_only_is_refused_even_to_root(tmp_path, capsys):
    """A read-only file was refused whoever runs kvviz (its mode says no: kvviz.io.write_target),
    but a folder of mode 0555 was written into by root (os.access says yes to root)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        err = refusal(capsys, QUICK + ["--json-out", str(folder / "m.json")])
        assert err == f"error: {folder / 'm.json'}: cannot write the file: {folder} is not writable"
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o755)


def test_a_sweep_point_its_run_refuses_names_the_file_and_the_point(capsys):
    """A refusal from a point's run (not its validation) came out as "error: instance.hbm_cache_tokens:
    …": no file, no point. Now it reads as a validation refusal does."""
    err = refusal(capsys, ["sweep", str(CLUSTER), *SMALL, "--param", "instance.hbm_cache_tokens",
                           "--values", "9000,8000", "--metric", "mean_ttft_ms", "--executor", "local"])
    assert err.startswith(f"error: {CLUSTER}: instance.hbm_cache_tokens: request 1 of shared-prefix generator")
    assert err.endswith("it would wait forever (at sweep point instance.hbm_cache_tokens=8000)")


def test_a_multi_turn_generator_is_sized_by_its_growing_contexts(capsys):
    """With multi_turn every request carries all its user's earlier rounds: one user over 10,000
    requests is 110 billion prompt tokens, which the size guard estimated at 1.8 GB (the first
    round's tokens times the requests) and let through to allocate until the machine gave out.
    Now it is refused before anything is generated; the same ladder without multi_turn runs."""
    ladder = ["--set", "workload.stages=[[50, 200]]", "--set", "workload.groups=1",
              "--set", "workload.prompts_per_group=1", "--set", "instance.hbm_cache_tokens=1099511627776"]
    err = refusal(capsys, ["run", str(CLUSTER), *ladder, "--set", "workload.multi_turn=true"])
    assert err.startswith(f"error: {CLUSTER}: workload.stages: too large to simulate: about 687.9 GB of memory")
    from kvviz import load_scenario
    from kvviz.mechanisms.cluster import estimate
    sc = load_scenario(CLUSTER)  # as shipped (no multi_turn): the estimate as it was, first rounds only
    requests = sum(r * d for r, d in sc.workload.stages)
    assert estimate(sc).bytes == pytest.approx(requests * 7200 / 64 * 400 + requests * 8 * 60)


def test_a_trace_of_long_prompts_is_sized_by_its_hash_ids(tmp_path):
    """A cluster's trace was sized at 25 lookups a line: 10 lines of 250,000 hash ids each (21 MB)
    were estimated at 171 MB and peaked at 541 MB (measured: /usr/bin/time, kvviz run
    cluster_mooncake_routing on it). The commas of its first MiB now count its ids (an upper
    bound, as kvviz.requests.extent says): 200,000 ids here are sized as at least that many."""
    from kvviz import load_scenario
    from kvviz.mechanisms.cluster import BYTES_PER_LOOKUP, estimate
    p = tmp_path / "long.jsonl"
    p.write_text("".join(json.dumps({"timestamp": i, "input_length": 20_000 * 512, "output_length": 1,
                                     "hash_ids": list(range(i * 20_000, (i + 1) * 20_000))}) + "\n" for i in range(10)))
    sc = load_scenario(ROOT / "scenarios" / "cluster_mooncake_routing.toml")
    sc = sc.model_copy(update={"workload": sc.workload.model_copy(update={"trace_file": str(p)})})
    assert estimate(sc).bytes >= 200_000 * BYTES_PER_LOOKUP
    half = sc.model_copy(update={"workload": sc.workload.model_copy(update={"max_requests": 5})})
    assert 100_000 * BYTES_PER_LOOKUP <= estimate(half).bytes < estimate(sc).bytes


@pytest.mark.parametrize("fmt", ["auto", "mooncake", "qwen", "plain", "ragpulse"])
@pytest.mark.parametrize("special", ["/dev/zero", "/dev/null", "fifo", "folder"])
def test_no_regular_file_as_a_prefix_trace_is_refused_at_once(tmp_path, capsys, fmt, special):
    """/dev/zero is never read (an endless read until memory ran out), a FIFO never waited on:
    every format and the lean LRU path refuse them on the open descriptor, in one line."""
    if special == "fifo":
        path = tmp_path / "t.jsonl"
        import os
        os.mkfifo(path)
    elif special == "folder":
        path = tmp_path / "t.jsonl"
        path.mkdir()
    else:
        path = Path(special)
    err = refusal(capsys, ["replay", str(path), "--prefix", "--format", fmt, "--capacity", "2"])
    assert err.startswith(f"error: {path}: is a ") and "kvviz reads a trace file only from a regular file" in err


def test_dev_zero_behind_a_ragpulse_side_file_is_refused(tmp_path, capsys):
    p = ragpulse(tmp_path)
    (tmp_path / "3_history.jsonl").unlink()
    (tmp_path / "3_history.jsonl").symlink_to("/dev/zero")
    err = refusal(capsys, ["replay", str(p), "--prefix", "--capacity", "2"])
    assert err == f"error: {tmp_path / '3_history.jsonl'}: is a character device: kvviz reads a RAGPulse side " \
                  f"file only from a regular file"
