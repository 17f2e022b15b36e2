"""Hostile inputs beyond the scenario's fields (issue 23), for the fuzz test and
benchmarks/bench_fuzz_input.py: trace files in every format (spliced fragments, zstd, BOMs,
NULs), command-line flags (absurd numbers, hex, overflow, unknown values), output paths (a
folder, a file as the parent, a missing folder, a FIFO) and the size guard on what is read (a
trace-driven run, a replay, a huge array, under a drawn --max-memory-gb). Each case is a `kvviz` argv run in this
process; it must end in exit 0 ("ran") or a refusal: exit 2 with a few `error:` lines (argparse's
refusals too: one line each). Anything else is "other", the bug the fuzz looks for."""
from __future__ import annotations

import contextlib
import io
import os
import random
from pathlib import Path

from kvviz.cli import main
from kvviz.errors import MAX_MESSAGES

ROOT = Path(__file__).resolve().parents[1]
SEED = str(ROOT / "scenarios" / "rope_prefetch_16.toml")
BOM = b"\xef\xbb\xbf"
PIECES = [b"time,id,size\n", b"0,a,4\n", b"1,b,3\n", b"2,7,1\n", b",", b"\n", b"\r\n", b'"', b"nan", b"-1", b"1e400",
          b"99999999999999999999999", BOM, b"\x00", b"{", b'{"timestamp": 1, "input_length": 600, "hash_ids": [1,2]}\n',
          b'{"timestamp": 0, "input_length": 1e30, "hash_ids": [3]}\n', b'{"chat_id": 1, "timestamp": 2.5}\n',
          b"\t", b";", b"|", b" ", b"x", b"0", b"07", b"\xff\xfe", b"1.5", b"inf", b"0x10", b"id\n", b"5\n"]
VALID = [("v.csv", b"time,id,size\n" + b"".join(b"%d,%d,%d\n" % (i, i % 7, 1 + i % 5) for i in range(40))),
         ("v.txt", b"".join(b"%d\n" % (i % 9) for i in range(40))),
         ("v.jsonl", b"".join(b'{"timestamp": %d, "input_length": 1024, "output_length": 4, "hash_ids": [%d, %d]}\n'
                             % (i * 10, i % 3, i % 5) for i in range(20))),
         ("v.oracleGeneral", b"".join(int(i).to_bytes(4, "little") + int(i % 6).to_bytes(8, "little")
                                     + int(8).to_bytes(4, "little") + (-1).to_bytes(8, "little", signed=True)
                                     for i in range(30)))]
NAMES = ["t.csv", "t.txt", "t.tsv", "t.jsonl", "t.oracleGeneral", "t.bin", "t"]
FORMATS = ["auto", "auto", "auto", "csv", "txt", "oracleGeneral", "mooncake", "qwen"]
NUMBERS = ["0", "1", "-1", "2", "64", "65", "0x10", "1e3", "1.5", "nan", "inf", "-inf", "", " ", "99999999999999999999",
           "1" * 400, "abc", "٣"]
LENGTHS = ["6.5in", "165mm", "16.5cm", "468pt", "1e308in", "-1cm", "0in", "1_000", "0x3C0", "6.5IN", "50%", "in",
           "1.5 in", "2000in", "nanpx"]
SIZES = ["1", "0", "-5", "1%", "100%", "1e400%", "0x10", "1KB", "1.5GiB", "nan", "inf", "1" * 30, "x", "99999999YB"]


def trace_case(rng: random.Random, tmp: Path) -> list[str]:
    data = b"".join(rng.choice(PIECES) for _ in range(rng.randint(0, 30)))
    name = rng.choice(NAMES)
    valid = rng.random() < 0.4
    if valid:  # a valid trace with one hostile piece spliced in: reaches the readers' insides
        name, data = rng.choice(VALID)
        at = rng.randrange(len(data) + 1)
        data = data[:at] + rng.choice(PIECES) + data[at:] if rng.random() < 0.7 else data
    if rng.random() < 0.15:
        import zstandard
        data = zstandard.ZstdCompressor().compress(data)
        if rng.random() < 0.3:
            data = data[:rng.randint(0, len(data))]  # cut short
        name += ".zst"
    path = tmp / name
    path.write_bytes(data)
    argv = ["replay", str(path), "--format", "auto" if valid and rng.random() < 0.8 else rng.choice(FORMATS)]
    argv += ["--capacity", rng.choice(["1", "10", "50%", "1KB"])] if rng.random() < 0.8 else \
        ["--capacities", ",".join(rng.choice(SIZES[:5]) for _ in range(rng.randint(1, 4)))]
    if rng.random() < 0.25:
        argv += ["--columns", rng.choice(["id=1", "id=2,size=3", "time=1,id=2,size=3", "id=9", "x=1"])]
    if rng.random() < 0.1:
        argv += ["--policy", rng.choice(["lru", "fifo,belady", "nope", ",", "lru,lru"])]
    return argv


def flag_case(rng: random.Random, tmp: Path) -> list[str]:
    which = rng.randrange(3)
    if which == 0:
        argv = ["run", SEED, "--set", "sequence.length=64"]
        for flag in rng.sample(["--width", "--height", "--dpi", "--from-us", "--to-us", "--max-memory-gb"],
                               rng.randint(1, 3)):
            lengths = LENGTHS if flag in ("--width", "--height") and rng.random() < 0.5 else NUMBERS
            argv += [flag, rng.choice(lengths)]
        return argv
    if which == 1:
        argv = ["sweep", SEED, "--set", "sequence.length=64", "--param", rng.choice(["cache.slots", "nope", ""]),
                "--values", rng.choice(["4,8", "1:3", "0x10", "1e3", "nan", "8:4", "1:99999999", ",", "a"]),
                "--metric", rng.choice(["speedup", "nope", "*"]), "--executor", "local"]
        if rng.random() < 0.5:
            argv += ["--workers", rng.choice(NUMBERS)]
        return argv
    trace = ROOT / "resources" / "traces" / "zipf_20k.csv"
    argv = ["replay", str(trace)]
    for flag, pool in rng.sample([("--capacity", SIZES), ("--capacities", SIZES + ["auto", ",".join(["1KB"] * 2000)]),
                                  ("--workers", NUMBERS), ("--kv-bytes-per-token", NUMBERS),
                                  ("--sample-rate", NUMBERS + ["0.5"]), ("--max-decompressed-ratio", NUMBERS),
                                  ("--executor", ["local", "ftp://x:1", "tcp://::::", "inproc://x", "x"])],
                                 rng.randint(1, 3)):
        argv += [flag, rng.choice(pool)]
    if not any(a in argv for a in ("--capacity", "--capacities")):
        argv += ["--capacity", "1%"]
    return argv


def output_case(rng: random.Random, tmp: Path) -> list[str]:
    kind = rng.choice(["folder", "file-parent", "missing", "fine", "fifo", "deep"])
    if kind == "folder":
        target = tmp / "adir"
        target.mkdir(exist_ok=True)
    elif kind == "file-parent":
        (tmp / "afile").write_text("x")
        target = tmp / "afile" / "out"
    elif kind == "missing":
        target = tmp / f"new{rng.randrange(10**6)}" / "out"
    elif kind == "fifo":
        target = tmp / "pipe"
        if not target.exists():
            os.mkfifo(target)
    elif kind == "deep":
        target = tmp / ("x" * 300) / "out"  # a name past the file system's limit
    else:
        target = tmp / "out"
    flag = rng.choice(["--json-out", "--svg", "--perfetto", "--csv"])
    return ["run", SEED, "--set", "sequence.length=64", flag, str(target) + (".json" if flag != "--csv" else "")]


LIMITS = ["0.0001", "0.001", "0.01", "0.1", "1", "4", "1e3", "0x10", "0", "-1", "nan", "1_0"]


def size_case(rng: random.Random, tmp: Path) -> list[str]:
    """The size guard on what is read: a trace-driven AttentionStore run, a replay, a scenario's
    huge array, under a drawn --max-memory-gb (small ones refuse, large ones run)."""
    limit = rng.choice(LIMITS)
    which = rng.randrange(3)
    if which == 0:
        trace = tmp / rng.choice(["t.csv", "t.jsonl"])
        n = rng.choice([1, 20, 2000])
        if trace.suffix == ".csv":
            trace.write_text("conversation,turn,arrival_s,input_tokens,output_tokens\n" +
                             "".join(f"c{i % 5},{i // 5 + 1},{i},100,20\n" for i in range(n)))
        else:
            trace.write_text("".join(f'{{"timestamp": {i}, "input_length": 600, "output_length": 4, '
                                     f'"hash_ids": [{i % 3}, {i}]}}\n' for i in range(n)))
        return ["run", "attention_store_sharegpt", "--set", f'workload.trace_file="{trace}"',
                "--set", "serving.detail_job=0", "--set", 'policies=["lru"]', "--max-memory-gb", limit]
    if which == 1:
        trace = ROOT / "resources" / "traces" / rng.choice(["zipf_20k.csv", "mooncake_synthetic_trace.jsonl"])
        argv = ["replay", str(trace), "--max-memory-gb", limit, "--engine", "python", "--workers", "1"]
        return argv + (["--capacity", "10%"] if rng.random() < 0.7 else ["--capacities", "1%,10%", "--policy", "lru,fifo"])
    f = tmp / "many.toml"
    f.write_text(Path(SEED).read_text() + "".join(f"[[reads]]\nt_us = {30 + i}\npositions = [1]\n"
                                                  for i in range(rng.choice([1, 100, 3000]))))
    return ["validate", str(f), "--max-memory-gb", limit]


HASH_IDS = ["1", "2", "-1", "0", "9223372036854775807", "-9223372036854775808", "9223372036854775808", "1.5", "NaN",
            "Infinity", '"a"', "[1]", "[]", "{}", "null", "true", "1e3", "-0", "1e400", "99999999999999999999"]
CSV_IDS = ["-3", "9223372036854775807", "9223372036854775808", "x", "nan", "[1]", "1.5", "", "0x10", "٣", "1_0", "+5",
           '"1,2"', '"[1, 2]"', '"']
FIELDS = ["0", "16", "-1", "1.5", "nan", "1e400", "", '"x"', "null", "99999999999999999999", "1e308", "true", "[1]"]
BLOCK_CAPACITIES = ["1", "2", "3", "inf", "auto", "50%", "0.001%", "100%", "1000%", "0", "-1", "1e3", "nan",
                    "99999999999999999999", "1.5", "1KB", " 3 ", "inf%", "%", "auto,1", "0x10"]


def _prefix_line(rng: random.Random, kind: str, t: int, hostile: float) -> str:
    ids = "[" + ",".join(rng.choice(HASH_IDS) if rng.random() < hostile else str(rng.randrange(12))
                         for _ in range(rng.randint(0, 6))) + "]"
    if rng.random() < hostile / 2:
        ids = rng.choice(HASH_IDS)

    def f(value):
        return rng.choice(FIELDS) if rng.random() < hostile / 2 else value
    if kind == "plain":
        rec = {"time": f(str(t)), "input_tokens": f("40"), "output_tokens": f("8"), "block_tokens": f("16"),
               "hash_ids": ids}
    elif kind == "mooncake":
        rec = {"timestamp": f(str(t * 1000)), "input_length": f("1024"), "output_length": f("4"), "hash_ids": ids}
    else:
        rec = {"chat_id": f(str(rng.randrange(5))), "parent_chat_id": f("-1"), "timestamp": f(str(t)),
               "input_length": f("40"), "output_length": f("4"), "type": '"text"', "turn": f("1"), "hash_ids": ids}
    keys = list(rec)
    if rng.random() < hostile / 2:
        keys.remove(rng.choice(keys))
    return "{" + ", ".join(f'"{k}": {rec[k]}' for k in keys) + "}"


def prefix_case(rng: random.Random, tmp: Path) -> list[str]:
    """`kvviz replay TRACE --prefix`: Mooncake, Qwen/Bailian and plain (JSONL, CSV) traces with
    odd hash_ids and fields (CRLF, BOM, a spliced byte, zstd, cut short), absurd capacities,
    policies and formats."""
    kind = rng.choice(["plain", "plain", "mooncake", "qwen", "csv", "csv"])
    n = rng.choice([0, 1, 2, 5, 30])
    hostile = rng.choice([0.0, 0.0, 0.02, 0.1])
    nl = "\r\n" if rng.random() < 0.2 else "\n"
    if kind == "csv":
        cols = ["time", "input_tokens", "output_tokens", "block_tokens", "hash_ids"]
        if rng.random() < 0.3:
            rng.shuffle(cols)
        if rng.random() < 0.05:
            cols.pop()
        rows = [",".join(cols)]
        for i in range(n):
            v = {"time": str(i), "input_tokens": "40", "output_tokens": "8", "block_tokens": "16",
                 "hash_ids": " ".join(str(rng.randrange(12)) for _ in range(rng.randint(0, 5)))}
            for c in cols:
                if rng.random() < hostile:
                    v[c] = rng.choice(CSV_IDS)
            rows.append(",".join(v[c] for c in cols))
        text, name = nl.join(rows) + nl, "t.csv"
    else:
        text, name = nl.join(_prefix_line(rng, kind, i, hostile) for i in range(n)) + (nl if n else ""), "t.jsonl"
    data = text.encode()
    if rng.random() < 0.1:
        data = BOM + data
    if rng.random() < 0.1 and data:
        at = rng.randrange(len(data))
        data = data[:at] + rng.choice([b"\x00", b"\xff", b"\n", b",", b"{", b'"']) + data[at:]
    if rng.random() < 0.15:
        import zstandard
        data, name = zstandard.ZstdCompressor().compress(data), name + ".zst"
        if rng.random() < 0.2:
            data = data[:rng.randint(0, len(data))]
    path = tmp / name
    path.write_bytes(data)
    argv = ["replay", str(path), "--prefix"]
    caps = BLOCK_CAPACITIES[:8] if rng.random() < 0.7 else BLOCK_CAPACITIES  # mostly valid: reach the kernels
    if rng.random() < 0.9:
        argv += ["--capacity", rng.choice(caps)] if rng.random() < 0.6 else \
            ["--capacities", ",".join(rng.choice(caps) for _ in range(rng.randint(1, 4)))]
    if rng.random() < 0.5:
        pols = ["lru", "fifo", "belady"] if rng.random() < 0.7 else ["lru", "fifo", "belady", "opt", "LRU", "x", " "]
        argv += ["--policy", ",".join(rng.sample(pols, rng.randint(1, 3)))]
    if rng.random() < 0.15:
        argv += ["--format", rng.choice(["auto", "mooncake", "qwen", "plain", "csv", "oracleGeneral", "nope"])]
    if rng.random() < 0.08:
        argv += ["--unit", rng.choice(["blocks", "bytes", "x"])]
    if rng.random() < 0.15:
        argv += ["--json"]
    if rng.random() < 0.05:
        argv += ["--max-memory-gb", rng.choice(["0.00001", "1", "0", "nan"])]
    return argv


SURFACES = {"trace": trace_case, "flags": flag_case, "output": output_case, "sizes": size_case,
            "prefix": prefix_case}


def run_case(argv: list[str]) -> str:
    """'ran', 'refused', or 'other: why' for one kvviz command run in this process."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except SystemExit as e:  # argparse's usage errors
        code = e.code
    except Exception as e:  # noqa: BLE001 - the bug the fuzz reports
        return f"other: {type(e).__name__}: {str(e)[:120]}"
    lines = err.getvalue().strip().splitlines()
    if code == 0:
        return "ran"
    errors = [ln for ln in lines if ln.startswith("error: ")]
    if code == 2 and errors and len(errors) <= MAX_MESSAGES + 1 and "Traceback" not in err.getvalue():
        return "refused"
    return f"other: exit {code}, {len(lines)} stderr lines: {(lines or [''])[-1][:120]}"
