"""A run as parts (kvviz.runs; AttentionStore's parts.py): each part's key changes exactly when
an input it reads changes, each declaration that a part does not read a field holds in the
simulation, unchanged parts are reused (counted), and the combined Result is the one the CLI
printed before parts existed (golden JSON of the commit before them)."""
from __future__ import annotations

import json
import typing
from pathlib import Path

import pytest

from kvviz import load_scenario, simulate
from kvviz.cli import main
from kvviz.mechanisms.attention_store.parts import plan, unread
from kvviz.runs import DISPLAY_FIELDS, DiskCache, MemoryCache, complete

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
GOLDEN = Path(__file__).resolve().parent / "golden"
FLAGSHIP = SCENARIOS / "attention_store_sharegpt.toml"

# Small, and under pressure: DRAM and SSD fill, sessions move between them, prefetches and the
# look-ahead horizon matter, so a field a part does read moves its output.
PRESSED = ["workload.conversations=60", "serving.arrivals=conversation_poisson", "store.lookahead=job_list",
           "workload.arrival_rate_per_s=4", "hardware.dram_gb=12", "hardware.ssd_gb=30", "hardware.ssds=1",
           "store.lookahead_horizon_s=120", "serving.max_batch=16", "hardware.host_link_gbps=1"]


def scenario(*overrides: str, base=PRESSED):
    return load_scenario(FLAGSHIP, [*base, *overrides])


# --- keys ------------------------------------------------------------------------------------------

def _leaves(data: dict, prefix: str = "") -> list[str]:
    out = []
    for k, v in data.items():
        path = f"{prefix}{k}"
        out += _leaves(v, path + ".") if isinstance(v, dict) else [path]
    return out


def _other_value(model, field: str, value):
    """A different value of the field's type (not validated: keys are computed on any model)."""
    ann = type(model).model_fields[field].annotation
    if typing.get_origin(ann) is typing.Literal:
        return next(c for c in typing.get_args(ann) if c != value)
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float) or value is None:
        return (value or 0.0) * 1.5 + 1.0
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return value[:-1]
    raise AssertionError(f"{field}: no other value for {value!r}")


def _perturbed(sc, path: str):
    *head, last = path.split(".")
    chain = [sc]
    for k in head:
        chain.append(getattr(chain[-1], k))
    new = chain[-1].model_copy(update={last: _other_value(chain[-1], last, getattr(chain[-1], last))})
    for model, k in zip(reversed(chain[:-1]), reversed(head)):
        new = model.model_copy(update={k: new})
    return new


def _declared(path: str, fields) -> bool:
    return any(path == f or path.startswith(f + ".") for f in fields)


PLAN_CHANGING = ("policies", "trace_policy", "serving.compare_truncation", "serving.truncation")


def test_a_key_changes_exactly_when_a_field_its_part_reads_changes():
    sc = scenario()
    before = {p.name: p.key for p in plan(sc).parts}
    fields = [f for f in _leaves(sc.model_dump(mode="json"))
              if f not in ("kind", "workload.trace_file") and not _declared(f, ("expect", "claim"))
              and f not in PLAN_CHANGING]
    assert len(fields) > 50  # every section's fields, not a handful
    for field in fields:
        after = {p.name: p.key for p in plan(_perturbed(sc, field)).parts}
        for name, key in before.items():
            declared = _declared(field, (*unread(sc, name), *DISPLAY_FIELDS))
            assert (after[name] == key) == declared, (field, name, "declared unread" if declared else "read")


def test_fields_that_choose_the_parts_keep_the_other_parts_keys():
    sc = scenario("serving.compare_truncation=false", "trace_policy=lru", 'policies=["recompute","lru","scheduler_aware"]')
    keys = {p.name: p.key for p in plan(sc).parts}
    more = {p.name: p.key for p in plan(scenario("serving.compare_truncation=false", "trace_policy=lru",
                                                 'policies=["recompute","lru","fifo","scheduler_aware"]')).parts}
    assert {k: v for k, v in more.items() if k != "fifo"} == keys
    traced = {p.name: p for p in plan(scenario("serving.compare_truncation=false", "trace_policy=scheduler_aware",
                                                'policies=["recompute","lru","scheduler_aware"]')).parts}
    assert traced["recompute"].key == keys["recompute"] and traced["workload"].key == keys["workload"]
    # the recorded lru run's metrics answer for the unrecorded one
    assert plan(sc).part("lru").also == traced["lru"].key


def test_a_trace_files_content_is_in_the_key(tmp_path):
    f = tmp_path / "log.csv"
    f.write_text("conversation,turn,arrival_s,input_tokens,output_tokens\n0,0,0,100,50\n0,1,5,80,40\n")
    sc = scenario(f"workload.trace_file={f}", base=[])
    key = plan(sc).part("lru").key
    f.write_text("conversation,turn,arrival_s,input_tokens,output_tokens\n0,0,0,100,50\n0,1,5,81,40\n")
    assert plan(load_scenario(FLAGSHIP, [f"workload.trace_file={f}"])).part("lru").key != key


# --- the declarations hold in the simulation -------------------------------------------------------

# A valid other value for each field some part declares unread.
OTHER = {"store.lookahead": "waiting_queue", "store.lookahead_horizon_s": "20", "store.ssd_read_priority": "true",
         "store.load_if_faster": "false", "store.ssd_inclusive": "false", "hardware.ssds": "3",
         "hardware.ssd_read_gbps": "1.5", "hardware.ssd_write_gbps": "0.7", "hardware.dram_gb": "40",
         "hardware.ssd_gb": "100", "cost.dram_usd_per_gb_hour": "1.0", "cost.ssd_usd_per_gb_hour": "1.0",
         "cost.gpu_usd_per_gpu_hour": "9.0", "serving.max_batch": "4", "store.save": "sync",
         "store.preload": "none", "hardware.write_buffer_gb": "0", "serving.detail_job": "7",
         "policies": '["recompute","lru","fifo","scheduler_aware"]', "serving.compare_truncation": "false"}


def _outputs(sc) -> dict:
    p = plan(sc)
    prepared = p.prepare(sc)
    return {part.name: p.run(sc, prepared, part.name) for part in p.parts}


def _comparable(output):
    if isinstance(output, tuple):  # a run: its metrics, its trace's columns, its details
        metrics, trace, detail, events = output
        cols = None if trace is None else {k: v.tolist() for k, v in vars(trace).items() if hasattr(v, "tolist")}
        return metrics, cols, detail, events
    return {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in output.items()}


def test_a_field_declared_unread_leaves_that_parts_output_unchanged():
    sc = scenario()
    base = {k: _comparable(v) for k, v in _outputs(sc).items()}
    declared = {f for part in plan(sc).parts for f in unread(sc, part.name)} - {"trace_policy", "serving.truncation"}
    if "cost" in declared:  # a section: each of its fields
        declared = declared - {"cost"} | {f"cost.{f}" for f in type(sc.cost).model_fields}
    declared = sorted(declared)
    assert set(declared) <= set(OTHER), set(declared) - set(OTHER)
    for field in declared:
        changed = scenario(f"{field}={OTHER[field]}")
        outs = _outputs(changed)
        moved = False
        for name, out in outs.items():
            if name not in base:
                continue
            if _declared(field, unread(sc, name)):
                assert _comparable(out) == base[name], (field, name)
            else:
                moved = moved or _comparable(out) != base[name]
        # the new value matters to some part that reads it (the check above can fail)
        assert moved or field in ("policies", "serving.compare_truncation"), field


# --- reuse, counted --------------------------------------------------------------------------------

def test_unchanged_parts_are_reused_and_the_result_is_the_same():
    small = [*PRESSED, "serving.compare_truncation=false", "trace_policy=lru", 'policies=["recompute","lru","scheduler_aware"]']
    cache, ran = MemoryCache(1e9), []
    first = simulate(load_scenario(FLAGSHIP, small), cache=cache, ran=ran)
    assert sorted(ran) == ["lru", "recompute", "scheduler_aware", "workload"]

    def again(*overrides):
        ran.clear()
        r = simulate(load_scenario(FLAGSHIP, [*small, *overrides]), cache=cache, ran=ran)
        return sorted(ran), r

    ran_, r = again()
    assert ran_ == [] and r.to_json() == first.to_json()
    assert again('name="another title"')[0] == []                 # display only
    assert again("serving.detail_job=3")[0] == ["lru"]            # only the recorded run draws it
    assert again("store.lookahead_horizon_s=600")[0] == ["scheduler_aware"]  # one policy reads it
    assert again('policies=["recompute","lru","fifo","scheduler_aware"]')[0] == ["fifo"]
    ran_, r = again("trace_policy=scheduler_aware")  # lru's recorded run answers for it unrecorded
    assert ran_ == ["scheduler_aware"]
    assert r.to_json() == simulate(load_scenario(FLAGSHIP, [*small, "trace_policy=scheduler_aware"])).to_json()


def test_a_partial_result_has_the_recorded_run_and_what_else_has_ended():
    sc = scenario("serving.compare_truncation=true")
    p = plan(sc)
    outs = _outputs(sc)
    assert p.combine(sc, {k: v for k, v in outs.items() if k != sc.trace_policy}) is None
    some = {k: outs[k] for k in ("workload", sc.trace_policy, "lru")}
    part = p.combine(sc, some)
    assert list(part.metrics["policies"]) == ["lru", "scheduler_aware"] and len(part.trace.spans)
    assert list(part.metrics["truncation"]) == ["decoupled"]
    assert p.order()[0].needed and p.order()[1].needed  # the parts a partial needs run first
    whole = p.combine(sc, outs)
    assert json.dumps(whole.metrics_dict()) == json.dumps(complete(p, sc).metrics_dict())


# --- the CLI's output is what it was ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["attention_store_sharegpt",  # the mooncake trace sets its own size: 5 s
                                  pytest.param("attention_store_mooncake", marks=pytest.mark.slow)])
def test_cli_json_is_byte_identical_to_before_parts_with_and_without_a_disk_cache(name, tmp_path, capsys):
    golden = (GOLDEN / f"{name}_300.json").read_text()
    args = ["run", str(SCENARIOS / f"{name}.toml"), "--set", "workload.conversations=300", "--json"]
    for extra in ([], ["--cache", str(tmp_path / "c")], ["--cache", str(tmp_path / "c")]):  # cold, then warm
        assert main(args + extra) == 0
        assert capsys.readouterr().out == golden
    assert len(list((tmp_path / "c").glob("*.pkl"))) >= 6 and not list((tmp_path / "c").glob("*.tmp"))


def test_disk_cache_writes_by_rename_and_reads_back(tmp_path):
    c = DiskCache(tmp_path)
    c.put("k", {"a": 1})
    c.put("k", {"a": 2})  # a second writer of the same key replaces it whole
    assert c.get("k") == {"a": 2} and c.get("missing") is None
    (tmp_path / "bad.pkl").write_bytes(b"not a pickle")
    assert c.get("bad") is None and sorted(p.name for p in tmp_path.iterdir()) == ["bad.pkl", "k.pkl"]


def test_a_bad_cache_folder_is_refused_and_a_failed_write_loses_no_run(tmp_path, capsys, monkeypatch):
    from kvviz.errors import ScenarioError
    from kvviz.runs import disk_cache
    (tmp_path / "f").write_text("x")
    for folder, why in ((tmp_path / "f", "not a folder"), (tmp_path / "f" / "sub", "")):
        with pytest.raises(ScenarioError, match=f"--cache {folder}: {why}"):
            disk_cache(str(folder))
    c = disk_cache(str(tmp_path / "c"))

    def full(*_a, **_k):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr("kvviz.runs.pickle.dump", full)
    c.put("k", {"a": 1})  # no exception: the run goes on, uncached, and says why
    assert c.write_error == "No space left on device" and not list((tmp_path / "c").iterdir())
    args = ["run", str(SCENARIOS / "attention_store_sharegpt.toml"), "--set", "workload.conversations=300",
            "--json", "--cache", str(tmp_path / "c")]
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert out == (GOLDEN / "attention_store_sharegpt_300.json").read_text()
    assert "No space left on device; this run was not cached\n" in err


def test_memory_cache_drops_the_least_recently_used_beyond_its_bound():
    import numpy as np
    c = MemoryCache(3.5 * 8 * 100_000)  # three arrays and their bookkeeping fit, four do not
    for k in "abc":
        c.put(k, np.zeros(100_000))
    c.get("a")
    c.put("d", np.zeros(100_000))
    assert "a" in c and "b" not in c and "d" in c and c.bytes <= c.max_bytes


def test_a_sweep_with_a_disk_cache_runs_each_part_once(tmp_path, capsys):
    """Three look-ahead horizons: lru's recorded run and the workload are the same at each point."""
    args = ["sweep", str(FLAGSHIP), "--param", "store.lookahead_horizon_s", "--values", "60,600,6000",
            "--metric", "policies.scheduler_aware.hit_rate", "--json", "--workers", "1",
            *(a for s in [*PRESSED, "serving.compare_truncation=false", "trace_policy=lru",
                          'policies=["lru","scheduler_aware"]'] if not s.startswith("store.lookahead_h")
              for a in ("--set", s))]
    assert main(args) == 0
    plain = capsys.readouterr().out
    assert main([*args, "--cache", str(tmp_path)]) == 0 and capsys.readouterr().out == plain
    # the workload, lru recorded (and its metrics as the unrecorded run), scheduler_aware × 3
    assert len(list(tmp_path.glob("*.pkl"))) == 1 + 2 + 3


@pytest.mark.parametrize("spoil", ["truncated", "empty", "int", "dict", "other_key", "garbage", "fifo", "folder",
                                   "unreadable", "loop"])
def test_a_spoiled_cache_file_is_a_miss_and_the_run_is_the_same(spoil, tmp_path, capsys):
    """Issue 23, --cache: whatever sits under a key's name (a truncated or foreign pickle, a FIFO
    that would block a read forever, a folder) the part runs again and the output is unchanged."""
    import os
    import pickle
    folder = tmp_path / "c"
    args = ["run", str(SCENARIOS / "attention_store_sharegpt.toml"), "--set", "workload.conversations=30",
            "--json", "--cache", str(folder)]
    assert main(args) == 0
    want = capsys.readouterr().out
    files = sorted(folder.glob("*.pkl"))
    assert files
    for f in files:
        data = f.read_bytes()
        if spoil in ("fifo", "folder", "loop"):
            f.unlink()
            {"fifo": os.mkfifo, "folder": os.mkdir, "loop": lambda p: os.symlink(p.name, p)}[spoil](f)
            continue
        f.write_bytes({"truncated": data[:len(data) // 2], "empty": b"", "int": pickle.dumps(5),
                       "dict": pickle.dumps({"a": 1}), "garbage": b"\x80\x05garbage",
                       "other_key": pickle.dumps((DiskCache.MARK, "not-this-key", {"a": 1})),
                       "unreadable": data}[spoil])
        if spoil == "unreadable":
            f.chmod(0)
    assert main(args) == 0
    assert capsys.readouterr().out == want


def test_a_cache_folder_made_read_only_mid_run_loses_no_run(tmp_path, capsys, monkeypatch):
    """The folder turns read-only after the first part is kept: the run ends with its result and
    one warning; nothing half-written is left."""
    folder = tmp_path / "c"
    args = ["run", str(SCENARIOS / "attention_store_sharegpt.toml"), "--set", "workload.conversations=30",
            "--json"]
    assert main(args) == 0
    want = capsys.readouterr().out
    put = DiskCache.put

    def once_then_read_only(self, key, output):
        put(self, key, output)

        def refused(*_a, **_k):  # as a folder made read-only does (root would still write into one)
            raise PermissionError(13, "Permission denied")
        monkeypatch.setattr("kvviz.runs.tempfile.mkstemp", refused)
    monkeypatch.setattr(DiskCache, "put", once_then_read_only)
    assert main(args + ["--cache", str(folder)]) == 0
    captured = capsys.readouterr()
    assert captured.out == want
    said = [ln for ln in captured.err.splitlines() if "--cache" in ln]
    assert len(said) == 1 and said[0].endswith("Permission denied; this run was not cached"), captured.err
    assert len(list(folder.glob("*.pkl"))) == 1 and not list(folder.glob(".*"))


# --- the needed parts alone first (the app, on cores other programs use) ---------------------------

def _logged_plan(log: list[tuple[str, str]]):
    """Parts that log their start and end: two needed ("w", "rec"), three others."""
    import threading
    import time

    from kvviz.runs import Part, Plan
    lock = threading.Lock()

    def run(sc, prep, name):
        with lock:
            log.append(("start", name))
        if name == "rec":
            time.sleep(0.05)  # the long recorded run: without needed_first the others start meanwhile
        with lock:
            log.append(("end", name))
        return name
    parts = (Part("w", "kw", cost=0.1, needed=True), Part("rec", "kr", cost=4.0, needed=True),
             Part("a", "ka", cost=2.0), Part("b", "kb", cost=1.5), Part("c", "kc", cost=1.0))
    return Plan(parts, prepare=lambda sc: None, run=run, combine=None, scale=lambda prep: 1.0)


@pytest.mark.parametrize("needed_first", [True, False])
def test_needed_parts_alone_first_start_the_others_only_once_they_have_ended(needed_first):
    from concurrent.futures import ThreadPoolExecutor

    from kvviz.runs import run_parts
    log: list[tuple[str, str]] = []
    got: list[str] = []
    p = _logged_plan(log)
    with ThreadPoolExecutor(2) as pool:
        run_parts(p, None, ["w", "rec", "a", "b", "c"], lambda name, out: got.append(out), pool=pool, pool_workers=2,
                  needed_first=needed_first)
    assert sorted(got) == ["a", "b", "c", "rec", "w"]  # every part, once
    last_needed_end = max(log.index(("end", n)) for n in ("w", "rec"))
    first_other_start = min(log.index(("start", n)) for n in ("a", "b", "c"))
    if needed_first:
        assert first_other_start > last_needed_end and got[:2] in (["w", "rec"], ["rec", "w"])
    else:  # every part at once: the two workers take the others while the recorded run goes on
        assert first_other_start < last_needed_end


def test_needed_first_with_only_needed_or_only_other_parts_runs_them_all():
    from kvviz.runs import run_parts
    log: list[tuple[str, str]] = []
    p = _logged_plan(log)
    for names in (["w", "rec"], ["a", "c"]):
        got: list[str] = []
        run_parts(p, None, names, lambda name, out, g=got: g.append(out), needed_first=True)
        assert sorted(got) == sorted(names)
