"""Run one benchmark and keep what it printed, as a record the documentation's figures come from.

    python benchmarks/record.py NAME [ARGS...]     e.g. record.py bench_cluster --no-scale

runs benchmarks/NAME.py ARGS in a child process (its output shown as it comes) and, if it ends
with exit code 0, writes benchmarks/results/NAME.txt: a header (the benchmark, the exact command,
the machine line of machine.py, the load average before and after, the git commit, the UTC date)
then the benchmark's standard output verbatim. The newest run replaces the older (the file is
committed: git history is the history). Written to a temporary file and renamed, so a failed or
interrupted run leaves the previous record as it was. docs/_gen/generate.py renders every record
into the Performance page's figures (read_record below is the one reader of the format).
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
SEPARATOR = "----- output -----"
# The header's fields, in order; a record without any of them is refused by read_record.
FIELDS = ("benchmark", "command", "machine", "load before", "load after", "commit", "date")
# Environment variables that change what a benchmark measures: named in the recorded command.
ENV_KEPT = ("QT_QPA_PLATFORM", "KVVIZ_ENGINE", "KVVIZ_WORKERS", "PYTHONDONTWRITEBYTECODE")


class RecordError(ValueError):
    """A record that cannot be read (names the file and what is missing)."""


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1, 5, 15 min)"


def _commit(root: Path) -> str:
    def git(*args: str) -> str:
        # only line ends stripped: a status line starts with a space (" M path"), and stripping it
        # off the first line cut the path's first letter, so a changed record made a record "dirty"
        r = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        return r.stdout.rstrip("\n") if r.returncode == 0 else ""
    head = git("rev-parse", "--short=12", "HEAD") or "unknown (not a git checkout)"
    # uncommitted changes to what runs would make the commit a lie: say so (prose, tests and
    # the records themselves do not change what a benchmark measures)
    dirty = [ln[3:] for ln in git("status", "--porcelain", "--untracked-files=no").splitlines()]
    dirty = [p for p in dirty if not (p.startswith(("docs/", "tests/", "benchmarks/results/")) or p.endswith(".md"))]
    return head + (" with uncommitted changes to its code" if dirty else "")


def command_line(name: str, args: list[str]) -> str:
    env = [f"{k}={shlex.quote(os.environ[k])}" for k in ENV_KEPT if k in os.environ]
    return shlex.join(["python", f"benchmarks/{name}.py", *args]) if not env else \
        " ".join(env) + " " + shlex.join(["python", f"benchmarks/{name}.py", *args])


def render(header: dict[str, str], output: str) -> str:
    return "".join(f"{k}: {header[k]}\n" for k in FIELDS) + SEPARATOR + "\n" + output


def read_record(path: Path) -> tuple[dict[str, str], str]:
    """(header fields, the benchmark's output) of a record; RecordError naming the file otherwise."""
    text = path.read_text(encoding="utf-8")
    head, sep, output = text.partition(SEPARATOR + "\n")
    if not sep:
        raise RecordError(f"{path.name}: no '{SEPARATOR}' line: not a benchmark record")
    header = {}
    for line in head.splitlines():
        key, colon, value = line.partition(": ")
        if colon:
            header[key] = value
    missing = [k for k in FIELDS if not header.get(k, "").strip()]
    if missing:
        raise RecordError(f"{path.name}: no {', '.join(missing)} line in its header "
                          "(record it with benchmarks/record.py)")
    return header, output


def record(name: str, args: list[str], bench_dir: Path = HERE, results: Path = RESULTS) -> int:
    """Run bench_dir/NAME.py ARGS; on exit code 0 write results/NAME.txt. Returns the exit code."""
    script = bench_dir / f"{name}.py"
    if not name.startswith("bench_") or not script.is_file():
        known = ", ".join(sorted(p.stem for p in bench_dir.glob("bench_*.py")))
        print(f"record.py: no benchmark {name!r} in {bench_dir} (one of: {known})", file=sys.stderr)
        return 2
    sys.path.insert(0, str(HERE))
    from machine import describe
    header = {"benchmark": name, "command": command_line(name, args),
              "machine": describe().removeprefix("machine: "), "load before": _load(),
              "commit": _commit(bench_dir.parent)}
    started = time.gmtime()
    # the benchmark's stdout is both shown (a run takes minutes) and kept; its stderr goes through
    proc = subprocess.Popen([sys.executable, str(script), *args], cwd=bench_dir.parent,
                            stdout=subprocess.PIPE, text=True, encoding="utf-8", errors="replace")
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        lines.append(line)
    code = proc.wait()
    header["load after"] = _load()
    header["date"] = time.strftime("%Y-%m-%d %H:%M UTC", started)
    if code != 0:
        print(f"record.py: {name} exited with {code}: no record written", file=sys.stderr)
        return code
    results.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=results, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(render(header, "".join(lines)))
        os.replace(tmp, results / f"{name}.txt")
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    print(f"record.py: wrote {(results / f'{name}.txt').relative_to(results.parent.parent)}", file=sys.stderr)
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    return record(Path(argv[0]).stem, argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
