"""A seeded fuzzer of the newest input surfaces, for tests/test_fuzz_newest_surfaces.py (a fixed,
fast sample) and for exploring (`python -m tests.newest_surfaces_fuzz SURFACE N SEED`: N fresh
cases, each failure printed):

- prefix: `kvviz replay TRACE --prefix` on a valid trace of each format with block hashes
  (Mooncake, Qwen/Bailian and plain JSONL, plain CSV, RAGPulse with its five side files), one to
  three mutations applied (a field's value made hostile, a key dropped or given twice, a line
  cut, a byte spliced in, lines swapped, a side file broken or gone, a BOM, CRLF), through the
  lean LRU path, the compiled caches and the Python one, at valid and hostile capacities;
- cluster: a cluster scenario cut to a few requests, with one to three `--set` overrides drawn
  from hostile values of its fields (the generator's, the pools', the links', the router's, a
  trace file of the wrong kind);
- output: `kvviz run` with output flags aimed at the scenario, its trace, a folder, a missing or
  read-only folder, a read-only file, a link to an input, another output's file.

Every case runs `kvviz.cli.main(argv)` in this process and must end in exit 0 or 2 with no
traceback; on 2, one `error:` line (or a few) naming a file or flag of the case; every file in
the case's folder unchanged but the outputs it asked for (none at all on exit 2); on exit 0,
every output it asked for written, and sound numbers (hit ratios within [0, 1], every TTFT and end-to-end time positive)."""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import os
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

from kvviz.cli import main

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"

# values a field of a JSON trace line may be made into (as JSON text)
HOSTILE_JSON = ['"7"', "7.5", "7.0", "true", "null", "NaN", "Infinity", "-Infinity", str(2 ** 70), str(2 ** 63),
                "-1", "[]", "{}", "[1, [2]]", '"x"', "1e400", "-0", "0", str(2 ** 31 + 3), str(2 ** 63 - 1),
                str(-2 ** 63), "1E2", "0.0"]
SPLICE = [b"\x00", b"\xff", b"\r", b"\n", b",", b"{", b"}", b'"', b"\xef\xbb\xbf", b" ", b"[", b"\\"]
CAPACITIES = ["1", "2", "3", "50%", "100%", "inf", "0.5%", "1000%", "auto", str(2 ** 31 + 1), str(2 ** 62)]
HOSTILE_CAPACITIES = ["0", "-1", "1.5", "x", "", "nan", str(2 ** 63), "9" * 25, "1" + "0" * 25 + "%", "inf%",
                      " 2 ", "0x10", "2,,3", "auto,1", str(2 ** 62 + 1)]
POLICIES = ["lru", "lru", "fifo", "belady", "leaf_lru", "lru,fifo"]
FORMATS = ["mooncake", "qwen", "plain", "plain_csv", "ragpulse"]


@dataclass
class Case:
    """One command on files in `folder`: what it may name in a refusal and what it may write."""
    argv: list[str]
    folder: Path
    names: set[str] = field(default_factory=set)   # paths and flags a refusal may name
    outputs: set[str] = field(default_factory=set)  # files it was asked to write
    kind: str = ""                                   # what the result's numbers are checked as


# --- traces -------------------------------------------------------------------------------------

def _records(fmt: str, n: int, rng: random.Random) -> list[dict[str, object]]:
    recs: list[dict[str, object]] = []
    for i in range(n):
        ids = [rng.randrange(6) for _ in range(rng.randint(1, 4))]
        if fmt == "mooncake":
            recs.append({"timestamp": i * 100, "input_length": 512 * len(ids) - rng.randrange(500),
                         "output_length": 1 + rng.randrange(9), "hash_ids": ids})
        elif fmt == "qwen":
            recs.append({"chat_id": i, "parent_chat_id": -1, "timestamp": i * 0.5, "input_length": 16 * len(ids),
                         "output_length": 3, "type": "text", "turn": 1, "hash_ids": ids})
        else:
            recs.append({"time": i * 0.5, "input_tokens": 16 * len(ids), "output_tokens": 2, "block_tokens": 16,
                         "hash_ids": ids})
    return recs


SIDES = (("1_sys_prompt.jsonl", "sys_prompt_id", [1, 2]), ("2_passages.jsonl", "passage_id", [0, 1, 2, 3]),
         ("3_history.jsonl", "history_id", [5]), ("4_user_input.jsonl", "user_input_id", list(range(10, 30))),
         ("5_web_search.jsonl", "web_search_id", []))


def _ragpulse(folder: Path, n: int, rng: random.Random) -> tuple[list[dict[str, object]], list[Path]]:
    sides = []
    for name, key, ids in SIDES:
        p = folder / name
        p.write_text("".join(json.dumps({key: i, "token_length": 50 + i}) + "\n" for i in ids))
        sides.append(p)
    recs: list[dict[str, object]] = [
        {"timestamp": str(i), "input_length": 2000, "output_length": 4, "session_id": f"s{i % 3}",
         "hash_ids": {"sys_prompt": [rng.choice([1, 2])], "passages_ids": rng.sample([0, 1, 2, 3], rng.randint(0, 2)),
                      "history": [5] * rng.randint(0, 1), "web_search": [], "user_input": [10 + i % 20]}}
        for i in range(n)]
    return recs, sides


def _lines(fmt: str, recs: list[dict[str, object]]) -> list[str]:
    if fmt != "plain_csv":
        return [json.dumps(r) for r in recs]
    cols = ["time", "input_tokens", "output_tokens", "block_tokens", "hash_ids"]
    return [",".join(cols)] + [",".join(" ".join(map(str, r[c])) if isinstance(r[c], list) else str(r[c])
                                        for c in cols) for r in recs]


def _mutate_line(line: str, rng: random.Random, csv: bool) -> str:
    if csv:
        cells = line.split(",")
        cells[rng.randrange(len(cells))] = rng.choice(["-1", "1.5", "x", "", "nan", str(2 ** 70), "1 x", "0x10"])
        return ",".join(cells)
    try:
        rec = json.loads(line)
    except ValueError:  # mutated already into no JSON: cut it somewhere
        return line[:rng.randrange(len(line) + 1)]
    if not isinstance(rec, dict) or not rec:
        return rng.choice(["{", "[]"])
    key = rng.choice(list(rec))
    how = rng.randrange(4)
    if how == 0:  # a value made hostile (inside hash_ids too)
        if isinstance(rec[key], list) and rec[key] and rng.random() < 0.5:
            body = json.dumps(rec[key])[1:-1].split(", ")
            body[rng.randrange(len(body))] = rng.choice(HOSTILE_JSON)
            value = "[" + ", ".join(body) + "]"
        else:
            value = rng.choice(HOSTILE_JSON)
        return line.replace(f'"{key}": {json.dumps(rec[key])}', f'"{key}": {value}', 1)
    if how == 1:  # a key dropped
        del rec[key]
        return json.dumps(rec)
    if how == 2:  # a key given twice
        return line[:-1] + f', "{key}": {json.dumps(rec[key])}}}'
    return rng.choice(["[1, 2]", "{", "not json", '"a string"', "{}", "null"])


def prefix_case(rng: random.Random, folder: Path) -> Case:
    fmt = rng.choice(FORMATS)
    n = rng.choice([1, 3, 12])
    sides: list[Path] = []
    if fmt == "ragpulse":
        recs, sides = _ragpulse(folder, n, rng)
    else:
        recs = _records(fmt, n, rng)
    lines = _lines(fmt, recs)
    csv = fmt == "plain_csv"
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        what = rng.randrange(9)
        body = range(1, len(lines)) if csv else range(len(lines))
        if what <= 3 and body:
            i = rng.choice(body)
            lines[i] = _mutate_line(lines[i], rng, csv)
        elif what == 4 and len(lines) > 2:  # two lines swapped: time goes back
            i = rng.choice(range(1 if csv else 0, len(lines) - 1))
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
        elif what == 5 and any(p.is_file() for p in sides):  # a side file broken or gone
            p = rng.choice([p for p in sides if p.is_file()])
            choice = rng.randrange(4)
            if choice == 0:
                p.unlink()
            elif choice == 1:
                p.write_bytes(rng.choice([b"", b"nope\n", b"\xff\n", b'{"token_length": 3}\n']))
            elif choice == 2:
                p.write_text(p.read_text() + p.read_text().splitlines()[0] + "\n" if p.read_text() else "[]\n")
            else:
                p.unlink()
                p.mkdir()
        elif what == 6 and lines:
            lines.append(rng.choice(["", "   ", lines[-1][:rng.randrange(len(lines[-1]) + 1)]]))
        elif what == 7:
            lines = lines[:rng.randrange(len(lines) + 1)]
        # 8: none (the file as written, under other mutations of bytes below)
    nl = "\r\n" if rng.random() < 0.15 else "\n"
    data = (nl.join(lines) + (nl if lines and rng.random() < 0.9 else "")).encode()
    if rng.random() < 0.1:
        data = b"\xef\xbb\xbf" + data
    if data and rng.random() < 0.15:
        at = rng.randrange(len(data) + 1)
        data = data[:at] + rng.choice(SPLICE) + data[at:]
    trace = folder / ("0_trace.jsonl" if fmt == "ragpulse" else "t.csv" if csv else "t.jsonl")
    trace.write_bytes(data)
    if rng.random() < 0.1:  # zstd-compressed, whole or cut short
        import zstandard
        packed = zstandard.ZstdCompressor().compress(data)
        trace = trace.with_name(trace.name + ".zst")
        trace.write_bytes(packed[:rng.randrange(len(packed) + 1)] if rng.random() < 0.3 else packed)
    elif rng.random() < 0.05:  # no regular file: a folder, a FIFO, a device
        special = rng.randrange(4)
        if special == 0:
            trace = folder / "a_folder.jsonl"
            trace.mkdir()
        elif special == 1:
            trace = folder / "fifo.jsonl"
            os.mkfifo(trace)
        else:
            trace = Path(rng.choice(["/dev/zero", "/dev/null"]))
    argv = ["replay", str(trace), "--prefix"]
    flag = rng.choice(["--capacity", "--capacities"])
    caps = HOSTILE_CAPACITIES if rng.random() < 0.15 else CAPACITIES
    argv += [flag, ",".join(rng.choice(caps) for _ in range(1 if flag == "--capacity" else rng.randint(1, 3)))]
    argv += ["--policy", rng.choice(POLICIES)]
    if rng.random() < 0.5:
        right = "plain" if csv else fmt
        argv += ["--format", right if rng.random() < 0.7 else rng.choice(["auto", "mooncake", "qwen", "plain",
                                                                          "ragpulse"])]
    if rng.random() < 0.2:
        argv.append("--no-pin-running")
    argv.append("--json")
    return Case(argv, folder, {str(trace), *map(str, sides), "--capacity", "--capacities", "--format", "--policy"},
                kind="prefix")


# --- cluster scenarios --------------------------------------------------------------------------

SMALL = ["--set", "workload.stages=[[2, 3]]", "--set", "workload.groups=3", "--set", "workload.prompts_per_group=2"]
CLUSTER_SETS = {
    "routing.policy": ['"nope"', "3", "true", '""', '["random"]', '"random"', '"round_robin"', '"least_loaded"',
                       '"approximate_prefix"', '"global_cache_aware"', '"precise_prefix"', '"prefix_affinity"'],
    "cluster.instances": ["0", "-1", "1000000000", "1.5", '"x"', "1", "2", "3", "1025", "64"],
    "cluster.prefill_instances": ["0", "1", "2", "7", "8", "9", "-1", "2.5"],
    "pool.shared": ["true", "false", '"yes"', "1"],
    "instance.dram_cache_tokens": ["0", "1", "100000", "-1", str(2 ** 41)],
    "instance.hbm_cache_tokens": ["0", "1", "64", "8200", "8201", "20000", "-5", "1e3"],
    "instance.hbm_pool": ['"split"', '"shared"', '"x"'],
    "instance.running_kv_gb": ["0", "0.001", "2.1", "2.2", "nan", "inf", "-1"],
    "cluster.peer_gbps": ["0", "-1", "inf", "nan", "1e-12", "1e-9", "0.001", "1e7"],
    "pool.read_gbps": ["0", "inf", "1e-12", "0.5"],
    "pool.latency_us": ["nan", "-1", "0", "1e10"],
    "routing.ttft_slo_s": ["-1", "nan", "inf", "1e-12", "1e-6", "0.5", "0"],
    "routing.approx_index_blocks": ["0", "1", "2"],
    "routing.balancing_threshold": ["0", "1", "1e9"],
    "workload.groups": ["0", "-1", "1", "2"],
    "workload.prompts_per_group": ["0", "1", "3"],
    "workload.stages": ["[]", "[[-1, 10]]", "[[1]]", "[[inf, 1]]", "[[1e9, 1e9]]", "[[nan, 1]]", "[[1e-300, 1]]",
                        "[[1, 1e-300]]", '[["a", 1]]', "5", "[[1, 2, 3]]", "[[1e308, 1e308]]", "[[1e6, 1e-6]]",
                        "[[3, 2], [1, 1]]"],
    "workload.block_tokens": ["0", "1", "7", "1000000"],
    "workload.system_prompt_tokens": ["0", "1", "-1", "20000"],
    "workload.question_tokens": ["0", "1"],
    "workload.generated_output_tokens": ["0", "1", "100000"],
    "workload.multi_turn": ["true", "1"],
    "workload.max_requests": ["-1", "0", "1", "3"],
    "workload.output_tokens": ["-1", "0", "1", "999999"],
    "workload.seed": ["-1", "99999999999999999999"],
    "instance.max_batch": ["0", "1", "4097"],
    "instance.eviction": ['"belady"', '"fifo"', '"leaf_lru"'],
}


def cluster_case(rng: random.Random, folder: Path) -> Case:
    scenario = SCENARIOS / (rng.choice(["cluster_llmd_precise", "cluster_llmd_tiered", "cluster_mooncake_routing",
                                        "cluster_mooncake_global_cache"]) + ".toml")
    argv = ["run", str(scenario), "--json"]
    names = {str(scenario)}
    trace: Path | None = None
    if "mooncake" in scenario.name or rng.random() < 0.2:  # a small trace in place of 12,031 requests
        fmt = rng.choice(["mooncake", "mooncake", "qwen", "plain", "ragpulse"])
        trace = folder / ("0_trace.jsonl" if fmt == "ragpulse" else "t.jsonl")
        n = rng.choice([0, 1, 6, 6])
        if fmt == "ragpulse":
            recs, sides = _ragpulse(folder, n, rng)
            names |= set(map(str, sides))
        else:
            recs = _records(fmt, n, rng)
        lines = [json.dumps(r) for r in recs]
        if lines and rng.random() < 0.3:
            i = rng.randrange(len(lines))
            lines[i] = _mutate_line(lines[i], rng, False)
        trace.write_text("\n".join(lines) + "\n")
        if rng.random() < 0.15:  # a trace file of another kind: a CSV of objects, a folder, gzip bytes
            other = rng.randrange(3)
            if other == 0:
                trace = folder / "objects.csv"
                trace.write_text("time,id,size\n0,1,2\n")
            elif other == 1:
                trace = folder
            else:
                import gzip
                trace = folder / "t.jsonl.gz"
                trace.write_bytes(gzip.compress(b'{"timestamp": 0, "input_length": 5, "output_length": 1, '
                                                b'"hash_ids": [1]}\n'))
        argv += ["--set", f'workload.trace_file="{trace}"']
        names.add(str(trace))
    else:
        argv += SMALL
    for key in rng.sample(sorted(CLUSTER_SETS), rng.randint(1, 3)):
        argv += ["--set", f"{key}={rng.choice(CLUSTER_SETS[key])}"]
    names |= {"--set"}
    return Case(argv, folder, names, kind="cluster")


# --- output flags -------------------------------------------------------------------------------

def output_case(rng: random.Random, folder: Path) -> Case:
    scenario = folder / "s.toml"
    scenario.write_text((SCENARIOS / "rope_prefetch_16.toml").read_text())
    (folder / "adir").mkdir()
    ro = folder / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    (folder / "ro.json").write_text("{}")
    (folder / "ro.json").chmod(0o444)
    (folder / "link.json").symlink_to(scenario)
    targets = [str(scenario), str(folder / "adir"), str(folder / "nope" / "x.json"), str(ro / "x.json"),
               str(folder / "ro.json"), str(folder / "link.json"), str(folder / "out.json"), str(folder / "out.svg"),
               str(folder / "fig"), str(folder / "p"), str(folder / "p_lanes.csv"), str(folder / "adir") + "/", ""]
    flags = ["--json-out", "--perfetto", "--svg", "--png", "--csv"]
    argv = ["run", str(scenario), "--set", "sequence.length=64"]
    outputs: set[str] = set()
    for flag in rng.sample(flags, rng.randint(1, 3)):
        target = rng.choice(targets)
        argv += [flag, target]
        if flag == "--csv":
            outputs |= {f"{target}_{t}.csv" for t in ("lanes", "spans", "instants", "counters", "residency")}
        else:
            outputs.add(target)
    return Case(argv, folder, {str(scenario), *targets, *flags}, outputs, kind="output")


SURFACES = {"prefix": prefix_case, "cluster": cluster_case, "output": output_case}


# --- running a case ------------------------------------------------------------------------------

def _snapshot(folder: Path) -> dict[str, str]:
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in files + [d for d in dirs]:
            p = Path(root) / name
            try:
                out[str(p)] = hashlib.sha1(p.read_bytes()).hexdigest() if p.is_file() and not p.is_symlink() else \
                    f"dir {p.is_dir()} link {p.is_symlink()}"
            except OSError as e:
                out[str(p)] = f"unreadable {e.errno}"
    return out


def _unsound(case: Case, out: str) -> str | None:
    """Why the numbers of a run that ended 0 cannot be, or None."""
    if case.kind == "prefix":
        for r in json.loads(out):
            for key in ("block_hit_ratio", "request_hit_ratio"):
                if not 0 <= r[key] <= 1:
                    return f"{key} = {r[key]}"
    elif case.kind == "cluster":
        m = json.loads(out)["metrics"]
        for key, v in m.items():
            if isinstance(v, float) and not math.isfinite(v):
                return f"{key} = {v}"
        for key in ("mean_ttft_ms", "ttft_p50_ms", "ttft_p99_ms", "e2e_mean_ms", "tpot_ms", "makespan_s"):
            if m.get(key) is not None and not m[key] >= 0:
                return f"{key} = {m[key]}"
        for key in ("token_hit_rate", "block_hit_ratio"):
            if not 0 <= m[key] <= 1:
                return f"{key} = {m[key]}"
        if m["served"] + m["rejected"] != m["requests"]:
            return f"served {m['served']} + rejected {m['rejected']} of {m['requests']} requests"
    return None


def run_case(case: Case) -> tuple[object, str | None]:
    """(the exit code, None) if the case ended as it must (see the module's docstring), else
    (the exit code or "exception", why not)."""
    before = _snapshot(case.folder)
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(case.argv)
            except SystemExit as e:  # argparse's refusals: one line, exit 2
                code = e.code
    except Exception as e:  # noqa: BLE001 - what the fuzz looks for
        return "exception", f"{type(e).__name__} escaped: {str(e)[:200]}"
    after = _snapshot(case.folder)
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    text = err.getvalue()
    return code, _why(case, code, text, out.getvalue(), changed)


def _why(case: Case, code: object, err: str, out: str, changed: set[str]) -> str | None:
    if "Traceback" in err:
        return f"a traceback: {err[-300:]}"
    if code not in (0, 2):
        return f"exit {code}: {err[-300:]}"
    if code == 2:
        errors = [ln for ln in err.splitlines() if ln.startswith("error: ")]
        if not errors:
            return f"exit 2 without an error line: {err[-300:]}"
        if not any(name in errors[0] for name in case.names):
            return f"the refusal names no file or flag of the case: {errors[0][:300]}"
        if changed:
            return f"refused, yet changed {sorted(changed)}"
        return None
    if changed - case.outputs:
        return f"changed files it was not asked to write: {sorted(changed - case.outputs)}"
    if case.outputs - changed:  # an output asked for and not written ("--json-out ''" was taken as none)
        return f"ran without writing {sorted(case.outputs - changed)}"
    return _unsound(case, out)


def draw(surface: str, seed: int, folder: Path) -> Case:
    """Case number `seed` of a surface (its own random stream: a case is replayed alone)."""
    return SURFACES[surface](random.Random(f"{surface}-{seed}"), folder)


if __name__ == "__main__":  # python -m tests.newest_surfaces_fuzz SURFACE N [FIRST]
    import shutil
    import tempfile
    surface, n = sys.argv[1], int(sys.argv[2])
    first = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    bad = 0
    codes: dict[object, int] = {}
    for seed in range(first, first + n):
        folder = Path(tempfile.mkdtemp(prefix="kvviz-fuzz-"))
        try:
            case = draw(surface, seed, folder)
            code, why = run_case(case)
            codes[code] = codes.get(code, 0) + 1
            if why:
                bad += 1
                print(f"{surface} case {seed}: {why}\n   argv: {case.argv}", file=sys.__stderr__)
        finally:
            for p in folder.rglob("*"):
                with contextlib.suppress(OSError):
                    p.chmod(0o755) if p.is_dir() and not p.is_symlink() else None
            folder.chmod(0o755)
            shutil.rmtree(folder, ignore_errors=True)
    print(f"{surface}: {n} cases, {bad} failed; exit codes {dict(sorted(codes.items(), key=str))}",
          file=sys.__stderr__)
