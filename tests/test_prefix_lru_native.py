"""The compiled prefix LRU (kvviz/replay/native/_prefix_lru.pyx) against the registry's LRU
(kvviz/serving/eviction/lru.py, run by the prefix_cache engine's single tier: the replay's
Python path) on random streams, pinned and not; its loader's fallback with a note; and the lean
`kvviz replay --prefix` path (kvviz.replay.prefix_lean): the full path's output, no numpy."""
import json
import subprocess
import sys
from array import array
from pathlib import Path

import numpy as np
import pytest

from kvviz.cli import main
from kvviz.replay import native, prefix
from kvviz.replay.prefix import block_ids, engine_counts, prefix_replay, prepared
from kvviz.replay.prefix_result import BLOCK_CACHE, COMPILED, ENGINE, STACK
from kvviz.requests import native as requests_native
from kvviz.requests import prompts

ROOT = Path(__file__).resolve().parents[1]
MOONCAKE = ROOT / "resources" / "traces" / "mooncake_synthetic_trace.jsonl"
compiled = pytest.mark.skipif(native.prefix_lru() is None, reason="the compiled prefix LRU is not built")


def random_requests(seed: int) -> prompts.PromptRequests:
    """Requests of 0-12 blocks from a few ids (repeats within a request too), or hash-chained
    ones (a shared head, then blocks of their own), the two shapes the semantics treat apart."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 120))
    if seed % 2:
        lens = rng.integers(0, 13, n)
        ids = rng.integers(0, int(rng.integers(2, 60)), int(lens.sum()))
    else:
        heads = [list(range(h * 8, h * 8 + int(rng.integers(1, 8)))) for h in range(4)]
        reqs, fresh = [], 1000
        for _ in range(n):
            head = heads[int(rng.integers(0, 4))][:int(rng.integers(0, 8))]
            tail = list(range(fresh, fresh + int(rng.integers(0, 5))))
            fresh += len(tail)
            reqs.append(head + tail)
        lens = np.array([len(r) for r in reqs])
        ids = np.array([b for r in reqs for b in r], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
    z = np.zeros(n, np.int64)
    return prompts.PromptRequests("plain", 16, np.arange(1, n + 1), np.arange(n, dtype=float), z, z, offsets,
                                  ids.astype(np.int64))


@compiled
@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("pin", [True, False])
def test_compiled_lru_equals_the_registry_policy(seed, pin):
    reqs = random_requests(seed)
    x = block_ids(reqs)
    k = int(x.max()) + 1 if len(x) else 0
    caps = [1, 2, 3, 5, 8, 13, 40, None]
    got = native.prefix_lru().lru_counts(x, reqs.hash_counts, caps, pin, k)
    prep = prepared(reqs, ["lru"])
    want = [engine_counts(prep, "lru", c, pin)[0] for c in caps]
    assert [tuple(g) for g in got] == [tuple(w) for w in want]
    assert want[-1][0] > 0 and want[0] != want[-1]  # the stream hits, and capacity matters


@compiled
def test_compiled_lru_on_the_bundled_trace_equals_the_registry_policy():
    reqs = prompts.read(MOONCAKE)
    x = block_ids(reqs)
    prep = prepared(reqs, ["lru"])
    for cap, pin in ((50, True), (50, False), (2000, True)):  # 50: below the longest request, pins bind
        got = native.prefix_lru().lru_counts(x, reqs.hash_counts, [cap], pin, int(x.max()) + 1)[0]
        assert tuple(got) == tuple(engine_counts(prep, "lru", cap, pin)[0])


@compiled
def test_compiled_lru_refuses_inconsistent_input():
    m = native.prefix_lru()
    ids = np.array([0, 1, 2], np.int64)
    with pytest.raises(ValueError, match="outside"):
        m.lru_counts(ids, np.array([3], np.int64), [2], True, 2)
    with pytest.raises(ValueError, match="add to"):
        m.lru_counts(ids, np.array([2], np.int64), [2], True, 3)
    with pytest.raises(ValueError, match="capacity"):
        m.lru_counts(ids, np.array([3], np.int64), [0], True, 3)
    assert m.id_range(array("q")) == (0, -1) and m.distinct(array("q", [3, 1, 3]), 4) == 2


def fall_back(monkeypatch, why="the compiled prefix LRU is not built (test)"):
    monkeypatch.setattr(native, "_load", lambda: (None, why))


def test_a_missing_build_falls_back_to_the_same_counts_and_says_why(monkeypatch, capsys):
    reqs = prompts.read(MOONCAKE)
    caps = [50, 500, None]
    before = prefix_replay(reqs, ["lru"], caps)
    fall_back(monkeypatch)
    after = prefix_replay(reqs, ["lru"], caps)
    assert [(r.hit_blocks, r.hit_requests) for r in after] == [(r.hit_blocks, r.hit_requests) for r in before]
    assert {r.engine for r in after} <= {STACK, ENGINE, BLOCK_CACHE}
    assert main(["replay", str(MOONCAKE), "--prefix", "--capacities", "500", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)[0]["engine"] in (STACK, ENGINE, BLOCK_CACHE)
    assert "note: the compiled prefix LRU is not built (test)" in err


@compiled
def test_a_stale_build_is_not_run(monkeypatch):
    native._load.cache_clear()
    monkeypatch.setattr(native, "source_hash", lambda folder: "0" * 16)
    try:
        assert native.prefix_lru() is None
        assert "built from other sources" in native.why_not() and "`make native`" in native.why_not()
        assert prefix.lru_note(["lru"]) == native.why_not() and prefix.lru_note(["fifo"]) == ""
    finally:
        native._load.cache_clear()
    monkeypatch.undo()
    assert native.prefix_lru() is not None and native.why_not() == ""


def test_a_module_that_cannot_be_imported_is_not_run(monkeypatch):
    native._load.cache_clear()
    monkeypatch.setitem(sys.modules, "kvviz.replay.native._prefix_lru", None)  # the import fails, as unbuilt
    monkeypatch.delattr(native, "_prefix_lru", raising=False)
    try:
        assert native.prefix_lru() is None and "not built" in native.why_not() and "`make setup`" in native.why_not()
    finally:
        native._load.cache_clear()


def test_the_prefix_lrus_source_hash_is_the_one_setup_py_compiles_in():
    from kvviz.mechanisms.attention_store.native import sources
    folder = Path(native.__file__).parent
    assert native.source_hash(folder) == sources.source_hash(folder)


def cli(capsys, *argv):
    code = main(["replay", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


@compiled
@pytest.mark.parametrize("argv", [
    ("--capacities", "100,5%,inf", "--json"),
    ("--capacity", "40", "--no-pin-running", "--json"),
    ("--capacities", "30,3000"),
    ("--format", "mooncake", "--capacity", "1000", "--policy", "LRU", "--json"),
])
def test_the_lean_path_prints_what_the_full_path_prints(monkeypatch, capsys, argv):
    if requests_native.scanner() is None:
        pytest.skip("the compiled scanner is not built")
    from kvviz import replay_prefix_cli
    taken = []
    lean = replay_prefix_cli._lean
    monkeypatch.setattr(replay_prefix_cli, "_lean", lambda *a: taken.append(lean(*a)) or taken[-1])
    fast = cli(capsys, MOONCAKE, "--prefix", *argv)
    assert taken and taken[-1] is not None  # the lean path ran
    monkeypatch.setattr(replay_prefix_cli, "_lean", lambda *a: None)
    full = cli(capsys, MOONCAKE, "--prefix", *argv)
    assert fast == full and fast[0] == 0
    if "--json" in argv:
        rows = json.loads(fast[1])
        assert all(isinstance(r["capacity"], (int, type(None))) and r["engine"] == COMPILED for r in rows)
        assert list(rows[0]) == ["policy", "capacity", "block_hit_ratio", "request_hit_ratio", "requests", "blocks",
                                 "hit_blocks", "hit_requests", "engine", "pin_running"]


LINE = '{"timestamp":%d,"input_length":%d,"output_length":1,"hash_ids":[%s]}\n'


@pytest.mark.parametrize("case, line", [
    ("back in time", 3),
    ("ids against input_length", 4),
])
def test_the_lean_path_leaves_a_bad_trace_to_the_strict_reader(tmp_path, capsys, case, line):
    rows = [(t, 600, "%d,%d" % (2 * t, 2 * t + 1)) for t in range(6)]
    if case == "back in time":
        rows[2] = (0, 600, "4,5")
    else:
        rows[3] = (3, 5000, "6,7")
    p = tmp_path / "t.jsonl"
    p.write_text("".join(LINE % r for r in rows))
    from kvviz.replay import prefix_lean
    assert prefix_lean.read(p) is None
    code, out, err = cli(capsys, p, "--prefix", "--capacity", "4")
    assert code == 2 and out == "" and f"line {line}" in err


def test_the_scanner_grows_its_arrays():
    if requests_native.scanner() is None:
        pytest.skip("the compiled scanner is not built")
    data = MOONCAKE.read_bytes()
    roomy = requests_native.scanner()(data, *requests_native.room(data))
    tight = requests_native.scanner()(data, 1, 1)
    assert roomy is not None and [list(a) for a in tight] == [list(a) for a in roomy]


def modules_loaded(*argv) -> set[str]:
    """The top-level packages a `kvviz` command imported, in a fresh interpreter."""
    code = ("import sys, io, contextlib\nfrom kvviz.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(sys.argv[1:])\n    except SystemExit:\n        pass\n"
            "print(' '.join(sorted({m.split('.')[0] for m in sys.modules} | "
            "{m for m in sys.modules if m.startswith('kvviz.')})))")
    out = subprocess.run([sys.executable, "-c", code, *map(str, argv)], capture_output=True, text=True, cwd=ROOT,
                         check=True)
    return set(out.stdout.split())


def test_replay_help_imports_no_numpy():
    loaded = modules_loaded("replay", "--help")
    assert not loaded & {"numpy", "pydantic", "kvviz.mechanisms", "kvviz.simulation"}


@compiled
def test_the_lean_path_imports_no_numpy():
    if requests_native.scanner() is None:
        pytest.skip("the compiled scanner is not built")
    loaded = modules_loaded("replay", MOONCAKE, "--prefix", "--format", "mooncake", "--unit", "blocks",
                            "--capacities", "1000", "--policy", "lru", "--json")
    assert "kvviz.replay.prefix_lean" in loaded
    assert not loaded & {"numpy", "pydantic", "kvviz.mechanisms", "kvviz.replay.prefix"}
