"""The replay's compiled pass (the compiled block cache's prefix_counts: its lru and fifo are
serving/native/policies.pxi's) against the registry's LRU and FIFO (kvviz/serving/eviction/, run
by the prefix_cache engine's single tier on the Python block cache: the replay's Python path) on
random streams, pinned and not; its loader's fallback with a note; and the lean
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
from kvviz.replay.prefix_result import BLOCK_CACHE, ENGINE, STACK
from kvviz.requests import native as requests_native
from kvviz.requests import prompts

ROOT = Path(__file__).resolve().parents[1]
MOONCAKE = ROOT / "resources" / "traces" / "mooncake_synthetic_trace.jsonl"
compiled = pytest.mark.skipif(native.prefix_pass() is None, reason="the compiled block cache is not built")


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
@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_the_compiled_pass_equals_the_registry_policy(seed, pin, policy):
    reqs = random_requests(seed)
    x = block_ids(reqs)
    k = int(x.max()) + 1 if len(x) else 0
    caps = [1, 2, 3, 5, 8, 13, 40, None]
    got = native.prefix_pass().prefix_counts(x, reqs.hash_counts, caps, pin, k, policy)
    prep = prepared(reqs, [policy])
    want = [engine_counts(prep, policy, c, pin)[0] for c in caps]
    # and the compiled block cache itself (BlockCache, one tier): the pass writes its one-tier rules again
    assert [engine_counts(prep, policy, c, pin, compiled=True) for c in caps] == [(w, BLOCK_CACHE) for w in want]
    assert [tuple(g) for g in got] == [tuple(w) for w in want]
    assert want[-1][0] > 0 and want[0] != want[-1]  # the stream hits, and capacity matters


@compiled
def test_the_compiled_pass_on_the_bundled_trace_equals_the_registry_policy():
    reqs = prompts.read(MOONCAKE)
    x = block_ids(reqs)
    prep = prepared(reqs, ["lru", "fifo"])
    for policy in ("lru", "fifo"):
        for cap, pin in ((50, True), (50, False), (2000, True)):  # 50: below the longest request, pins bind
            got = native.prefix_pass().prefix_counts(x, reqs.hash_counts, [cap], pin, int(x.max()) + 1, policy)[0]
            assert tuple(got) == tuple(engine_counts(prep, policy, cap, pin)[0])


@compiled
def test_the_compiled_pass_refuses_inconsistent_input():
    m = native.prefix_pass()
    ids = np.array([0, 1, 2], np.int64)
    with pytest.raises(ValueError, match="outside"):
        m.prefix_counts(ids, np.array([3], np.int64), [2], True, 2)
    with pytest.raises(ValueError, match="add to"):
        m.prefix_counts(ids, np.array([2], np.int64), [2], True, 3)
    with pytest.raises(ValueError, match="capacity"):
        m.prefix_counts(ids, np.array([3], np.int64), [0], True, 3)
    with pytest.raises(ValueError, match="belady"):
        m.prefix_counts(ids, np.array([3], np.int64), [2], True, 3, "belady")
    assert m.id_range(array("q")) == (0, -1) and m.distinct(array("q", [3, 1, 3]), 4) == 2


def fall_back(monkeypatch, why="the compiled block cache is not built (test)"):
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
    assert "note: the compiled block cache is not built (test)" in err


def test_the_replay_says_why_its_pass_does_not_run(monkeypatch):
    """The serving core's loader decides (its stale and missing builds: tests/test_native_loader.py);
    the replay's note is its reason with what runs instead."""
    from kvviz.serving import native as serving_native
    monkeypatch.setattr(native, "block_cache", lambda: (None, "the compiled block cache was built from other sources"))
    assert native.prefix_pass() is None
    assert native.why_not() == f"the compiled block cache was built from other sources: {native.FALLBACK}"
    assert prefix.lru_note(["lru"]) == native.why_not() and prefix.lru_note(["fifo"]) == ""
    monkeypatch.undo()
    monkeypatch.setenv(serving_native.ENV, "python")
    assert native.prefix_pass() is None and native.why_not().startswith("KVVIZ_ENGINE=python")


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
        assert all(isinstance(r["capacity"], (int, type(None))) and r["engine"] == BLOCK_CACHE for r in rows)
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
