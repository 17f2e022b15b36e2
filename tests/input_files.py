"""The "files" surface (issue 29, "Nothing lost, ever"), for tests/test_no_data_lost.py and
benchmarks/bench_fuzz_input.py: each case builds a small sandbox of a user's files (a scenario,
a prefix-cache scenario with its own trace beside it, notes, hidden files named like old
temporaries, a previous CSV export, a read-only file, symlinks, a FIFO, a socket, a device
when root, a folder), runs one drawn `kvviz` (or `kvviz-gui`) command in it, and judges the
sandbox by the files-lost ORACLE: a pre-existing entry changes only if it is a legitimate output
of a command that exited 0 (a regular file; through a symlink the link stays and its target
changes), and nothing new remains but those outputs. Kill and full-disk cases run the command
in a child and judge each target: its old bytes or a complete new file, a set all old or all new."""
from __future__ import annotations

import contextlib
import hashlib
import io
import os
import random
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from kvviz.cli import main
from kvviz.errors import MAX_MESSAGES

ROOT = Path(__file__).resolve().parents[1]
TABLES = ("lanes", "spans", "instants", "counters", "residency")
MARKERS = "<!-- claims:begin -->\nold table\n<!-- claims:end -->\n"  # no names: every row, so any target is filled
HIDDEN = [".report.json.20261202", ".report.json.my_notes", ".fig.png.20261201", ".scen.toml.original",
          ".out.json.kvviz-tmp"]
EXT = {"--json-out": ".json", "--perfetto": ".json", "--svg": ".svg", "--png": ".png", "--pdf": ".pdf"}
FIGURES = {".svg", ".png", ".pdf"}
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
CASE_SECONDS = 30  # per-case budget: past it the case is a hang (the runs here take ~0.3 s)


class Hang(BaseException):
    """Raised by the alarm: a BaseException, so kvviz's own `except Exception` cannot eat it."""


# --- the sandbox ---------------------------------------------------------------------------------

def build(d: Path) -> None:
    """A user's folder. scen.toml is the worked example (with a claims block in a comment, so
    `claims --readme scen.toml` would overwrite it); pc.toml reads trace.jsonl beside it."""
    seed = (ROOT / "scenarios" / "rope_prefetch_16.toml").read_text()
    (d / "scen.toml").write_text(seed + "\n" + "".join(f"# {ln}\n" for ln in MARKERS.splitlines()))
    pc = (ROOT / "scenarios" / "prefix_cache_mooncake.toml").read_text().split("# Checks on the results")[0]
    (d / "pc.toml").write_text(pc.replace("../resources/traces/mooncake_synthetic_trace.jsonl", "trace.jsonl"))
    with open(ROOT / "resources" / "traces" / "mooncake_synthetic_trace.jsonl", "rb") as f:
        (d / "trace.jsonl").write_bytes(b"".join(next(f) for _ in range(30)))
    (d / "notes.txt").write_text("notes\n")
    (d / "README.md").write_text("# my readme\n" + MARKERS)
    (d / "out.json").write_text('{"old": true}\n')
    (d / "fig.png").write_bytes(b"old png")
    for name in HIDDEN:  # a day old: past any "a live writer may still hold it" grace
        (d / name).write_text(f"user's {name}\n")
        os.utime(d / name, (time.time() - 86400,) * 2)
    for t in TABLES:
        (d / f"prev_{t}.csv").write_text(f"old {t}\n")
    (d / "ro.md").write_text("# read-only\n" + MARKERS)
    os.chmod(d / "ro.md", 0o444)
    for ext in (".json", ".svg", ".png", ".pdf"):
        (d / f"real{ext}").write_text("the link's target\n")
        os.symlink(f"real{ext}", d / f"link{ext}")
        os.symlink(f"gone{ext}", d / f"dangling{ext}")
    os.mkfifo(d / "pipe")
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(d / "sock"))
    if IS_ROOT:  # /dev/null's numbers: a device a write to which would be lost
        os.mknod(d / "dev", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    (d / "adir").mkdir()
    (d / "adir" / "keep.txt").write_text("inside\n")


def snapshot(d: Path) -> dict[str, tuple]:
    """(type, mode, sha256 or link target) of every entry under `d`, links not followed."""
    out = {}
    for top, dirs, files in os.walk(d):
        for name in dirs + files:
            p = os.path.join(top, name)
            st = os.lstat(p)
            kind = stat.S_IFMT(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                what = os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                what = hashlib.sha256(Path(p).read_bytes()).hexdigest()
            else:
                what = None
            out[os.path.relpath(p, d)] = (kind, stat.S_IMODE(st.st_mode), what)
    return out


TYPE = {stat.S_IFREG: "file", stat.S_IFDIR: "folder", stat.S_IFLNK: "symlink", stat.S_IFIFO: "FIFO",
        stat.S_IFSOCK: "socket", stat.S_IFCHR: "device"}


def _change(old, new) -> str:
    if new is None:
        return "deleted"
    if old is None:
        return f"new {TYPE.get(new[0], '?')} left"
    if old[0] != new[0]:
        return f"{TYPE.get(old[0])} replaced by a {TYPE.get(new[0])}"
    if old[1] != new[1]:
        return f"mode {old[1]:o} -> {new[1]:o}"
    return "link retargeted" if old[0] == stat.S_IFLNK else "bytes changed"


# --- the cases -----------------------------------------------------------------------------------

@dataclass
class Case:
    argv: list[str]             # kvviz's argv (or kvviz-gui's when gui)
    kind: str                   # the command's shape, for the tallies
    expect: str                 # "ran", "refused" or "either" (the guard's rules, issue 29)
    outputs: list[str] = field(default_factory=list)   # sandbox-relative entries it may write
    trees: list[str] = field(default_factory=list)     # folders whose new contents are outputs (--cache)
    gui: bool = False
    must_refuse: list[str] = field(default_factory=list)  # why the guard must refuse it, if it must


def _resolve(d: Path, spelled: str) -> str:
    """The sandbox-relative entry a spelled path names (./a/../b, absolute, a trailing '/')."""
    return os.path.relpath(os.path.normpath(os.path.join(d, spelled)), d)


def _spell(rng: random.Random, d: Path, name: str) -> str:
    r = rng.random()
    if r < 0.12:
        return f"./adir/../{name}"
    if r < 0.22:
        return str(d / name)
    return name


# (name or a function of the flag's extension, what the guard must do, sub-kind)
def _targets(flag: str, scen: str) -> list[tuple[str, str, str]]:
    ext = EXT.get(flag, "")
    wrong = [e for e in sorted(FIGURES) if e != ext][0]
    inputs = {"scen.toml", "pc.toml", "trace.jsonl"} if scen == "pc.toml" else {"scen.toml"}
    pool = [(f"new{ext}", "ran", "new"), ("out.json" if ext == ".json" else f"fig{ext}", "ran", "old output"),
            (f"report{ext}", "ran", "beside hidden files"), (f"link{ext}", "ran", "symlink to a file"),
            (f"dangling{ext}", "either", "dangling symlink"), ("notes.txt", "either", "user file"),
            (".report.json.my_notes", "either", "hidden user file named"), ("ro.md", "refused", "read-only"),
            ("pipe", "refused", "FIFO"), ("sock", "refused", "socket"), ("adir", "refused", "folder"),
            ("newname/", "refused", "name ending in /"), ("missing/x" + ext, "refused", "missing folder"),
            ("scen.toml", "refused" if "scen.toml" in inputs else "either", "the scenario"),
            ("trace.jsonl", "refused" if "trace.jsonl" in inputs else "either", "the scenario's trace")]
    if IS_ROOT:
        pool.append(("dev", "refused", "device"))
    if ext in FIGURES:
        pool.append((f"wrong{wrong}", "refused", "extension of another format"))
    if flag == "--csv":  # a prefix: PREFIX_lanes.csv ...
        pool = [("prev", "ran", "previous set"), ("newp", "ran", "new"), ("adir/p", "ran", "in a folder"),
                ("adir/", "refused", "name ending in /"), ("missing/p", "refused", "missing folder"),
                ("pipe", "either", "FIFO as prefix")]
    return pool


def _csv_set(prefix: str) -> list[str]:
    return [f"{prefix}_{t}.csv" for t in TABLES]


KEEP = {"extension of another format"}  # a new file: written, it is a silent acceptance, not a loss


def run_case(rng: random.Random, d: Path) -> Case:
    scen = "pc.toml" if rng.random() < 0.2 else "scen.toml"
    argv, expect, parts = ["run", _spell(rng, d, scen) if rng.random() < 0.2 else scen], "ran", []
    outputs: set[str] = set()
    seen: set[str] = set()
    must_refuse: list[str] = []
    named: list[tuple[str, str, str]] = []
    protected: set[str] = set()
    for flag in rng.sample(list(EXT) + ["--csv"], rng.randint(1, 3)):
        name, want, sub = rng.choice(_targets(flag, scen))
        if named and rng.random() < 0.15:  # a target named again: --png X --pdf X
            name, want, sub = rng.choice(named)
        spelled = _spell(rng, d, name) if not name.endswith("/") else name
        argv += [flag, spelled]
        named.append((spelled, want, sub))
        entries = _csv_set(spelled if spelled.endswith("/") else _resolve(d, spelled)) if flag == "--csv" \
            else [_resolve(d, spelled)]
        # a protected entry (an input, a FIFO, a read-only file...) is never an output
        (outputs if want != "refused" or sub in KEEP else protected).update(entries)
        parts.append(f"{flag} {sub}")
        if len(set(entries) & seen) or len(set(entries)) < len(entries):  # one entry, two outputs
            want, parts[-1] = "refused", parts[-1] + " (named twice)"
        must_refuse += [parts[-1]] if want == "refused" else []
        expect = _combine(expect, want)
        seen.update(entries)
    outputs = [o for o in outputs if o not in protected]
    trees = []
    if rng.random() < 0.1:
        name, want = rng.choice([("adir", "ran"), ("cachedir", "either"), ("missing/dir", "refused"),
                                 ("notes.txt", "refused"), ("pipe", "refused")])
        argv += ["--cache", name]
        trees += [name] if want != "refused" else []
        parts.append(f"--cache {name}")
        must_refuse += [parts[-1]] if want == "refused" else []
        expect = _combine(expect, want)
    return Case(argv, f"run {scen} " + ", ".join(parts), expect, _links(d, outputs), trees, False, must_refuse)


def _combine(a: str, b: str) -> str:
    return "refused" if "refused" in (a, b) else "either" if "either" in (a, b) else "ran"


def _links(d: Path, outputs: list[str]) -> list[str]:
    """Outputs plus what their symlinks point at (written through, never replaced)."""
    out = list(outputs)
    for o in outputs:
        if os.path.islink(d / o):
            out.append(_resolve(d, os.path.join(os.path.dirname(o), os.readlink(d / o))))
    return out


def claims_case(rng: random.Random, d: Path) -> Case:
    name, want = rng.choice([("README.md", "ran"), ("scen.toml", "refused"), ("ro.md", "refused"),
                             ("notes.txt", "refused"), ("pipe", "refused"), ("adir", "refused"),
                             ("missing/README.md", "refused"), ("link.json", "refused")])
    spelled = _spell(rng, d, name)
    kind = f"claims --readme {name}"
    return Case(["claims", "scen.toml", "--readme", spelled, "--quiet"], kind, want,
                _links(d, [_resolve(d, spelled)]) if want == "ran" else [], must_refuse=[kind] * (want == "refused"))


def read_case(rng: random.Random, d: Path) -> Case:
    """Commands that only read: nothing may change, whatever they are given."""
    what = rng.choice(["scen.toml", "pc.toml", "pipe", "adir", "sock", "dangling.json", "link.json", "trace.jsonl"]
                      + (["dev"] if IS_ROOT else []))
    if rng.random() < 0.5:
        return Case(["validate", what], f"validate {what}", "either")
    return Case(["replay", what, "--capacity", rng.choice(["10%", "1", "1GB"]), "--engine", "python"],
                f"replay {what}", "either")


def gui_case(rng: random.Random, d: Path) -> Case:
    name, want, sub = rng.choice(_targets("--png", "scen.toml"))
    view_only = rng.random() < 0.5
    if view_only and name == "wrong.svg":
        want = "ran"  # --view-only writes SVG to a .svg name
    argv = ["scen.toml", "--screenshot", name] + (["--view-only"] if view_only else [])
    outputs = _links(d, [_resolve(d, name)]) if want != "refused" or sub in KEEP else []
    kind = f"kvviz-gui --screenshot {sub}" + (" --view-only" if view_only else "")
    return Case(argv, kind, want, outputs, gui=True, must_refuse=[kind] * (want == "refused"))


def file_case(rng: random.Random, d: Path, gui: float = 0.0) -> Case:
    r = rng.random()
    if r < gui:
        return gui_case(rng, d)
    return run_case(rng, d) if r < 0.7 else claims_case(rng, d) if r < 0.82 else read_case(rng, d)


# --- running and judging -------------------------------------------------------------------------

def run_in_process(argv: list[str], cwd: Path, seconds: int = CASE_SECONDS, entry=main) -> tuple[int | str, str]:
    """(exit code, or "hang" / "other: why"; stderr) of `kvviz ARGV` (or `entry(ARGV)`) run here, in `cwd`."""
    err = io.StringIO()

    def alarm(signum, frame):
        raise Hang

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(ROOT)  # the raster renderer's child runs this checkout's code too
    try:
        with contextlib.chdir(cwd), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = entry(argv)
    except SystemExit as e:
        code = e.code
    except Hang:
        code = "hang"
    except Exception as e:  # noqa: BLE001 - the bug the campaign reports
        code = f"other: {type(e).__name__}: {str(e)[:100]}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        if path is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = path
    return code, err.getvalue()


def child_env(**extra) -> dict:
    """A child that runs this checkout's code, headless."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), QT_QPA_PLATFORM="offscreen", **extra)
    env.pop("KVVIZ_WORKERS", None)
    return env


def run_child(argv: list[str], cwd: Path, gui: bool = False, seconds: int = 90, **popen) -> tuple[int | str, str]:
    cmd = [sys.executable, "-m", "app.main" if gui else "kvviz", *argv]
    try:
        p = subprocess.run(cmd, cwd=cwd, env=child_env(), capture_output=True, text=True, timeout=seconds, **popen)
    except subprocess.TimeoutExpired:  # run() has killed it
        return "hang", ""
    return p.returncode, p.stderr


def verdict(code, stderr: str) -> str:
    """As input_surfaces.run_case: 'ran', 'refused' (exit 2, a few error lines), 'hang' or 'other'."""
    if code == 0:
        return "ran"
    if code == "hang":
        return "hang"
    lines = stderr.strip().splitlines()
    errors = [ln for ln in lines if ln.startswith(("error: ", "kvviz: ", "kvviz-gui: "))]
    if code == 2 and errors and len(errors) <= MAX_MESSAGES + 1 and "Traceback" not in stderr:
        return "refused"
    return "other"


def judge(case: Case, before: dict, after: dict, code) -> list[str]:
    """What the command lost or left behind: [] for a sandbox as it should be."""
    problems = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        declared = name in case.outputs or any(name == t or name.startswith(t + "/") for t in case.trees)
        # a legitimate output: of a run that succeeded, a regular file (a folder for --cache) where
        # there was none or a regular file (a symlink is written through, so it never changes)
        if code == 0 and declared and new is not None and (old is None or old[0] == new[0]) and \
                new[0] in (stat.S_IFREG, stat.S_IFDIR if case.trees else stat.S_IFREG):
            continue
        problems.append(f"{_category(name)}: {_change(old, new)}")
    return problems


def _category(name: str) -> str:
    """Names with random parts (temporaries) made comparable, for deduplication."""
    name = re.sub(r"_(lanes|spans|instants|counters|residency)\.csv$", "_*.csv", name)  # a set: one line
    return re.sub(r"(kvviz-?[a-z]*[-.])[A-Za-z0-9_]{6,}", r"\1*", re.sub(r"\.[a-z0-9_]{8}$", ".????????", name))


@dataclass
class Outcome:
    case: Case
    verdict: str              # ran / refused / hang / other
    lost: list[str]           # the oracle's findings
    stderr: str

    @property
    def silent(self) -> bool:  # accepted what the guard must refuse
        return self.verdict == "ran" and self.case.expect == "refused"

    @property
    def overeager(self) -> bool:  # refused a fine command
        return self.verdict == "refused" and self.case.expect == "ran"


def play(case: Case, d: Path, child: bool = False) -> Outcome:
    """Run `case` in its sandbox `d` (built already) and judge it: here, or in a child (a hang is
    killed there; in this process the alarm can only interrupt Python code and system calls)."""
    before = snapshot(d)
    if child:
        code, err = run_child(case.argv, d, gui=case.gui)
    elif case.gui:
        from app.main import main as gui_main
        code, err = run_in_process(case.argv, d, entry=gui_main)
    else:
        code, err = run_in_process(case.argv, d)
    after = snapshot(d)
    v = verdict(code, err) if not str(code).startswith("other") else "other"
    lost = judge(case, before, after, code)
    return Outcome(case, v, lost, err if isinstance(code, int) else f"{code}\n{err}")


# --- kill and full disk --------------------------------------------------------------------------

PNG_END = b"IEND\xaeB`\x82"


def complete(name: str, data: bytes, reference: bytes | None) -> bool:
    """A whole new file: the reference run's bytes, or (figures differ run to run) a whole PNG."""
    return data == reference or (name.endswith(".png") and data.startswith(b"\x89PNG") and data.endswith(PNG_END))


def kill_command(which: str) -> tuple[list[str], list[str], bool]:
    """(argv, the targets, gui) of a kill / full-disk case; each target exists beforehand."""
    if which == "csv":
        return ["run", "scen.toml", "--csv", "prev"], _csv_set("prev"), False
    if which == "json":
        return ["run", "scen.toml", "--json-out", "out.json", "--png", "fig.png"], ["out.json", "fig.png"], False
    return ["scen.toml", "--screenshot", "fig.png"], ["fig.png"], True


def judge_set(d: Path, targets: list[str], old: dict[str, bytes], new: dict[str, bytes | None]) -> list[str]:
    """Each target old or complete new, and the set all one or all the other."""
    states = []
    for t in targets:
        data = (d / t).read_bytes() if (d / t).is_file() else None
        if data == old[t]:
            states.append("old")
        elif data is not None and complete(t, data, new.get(t)):
            states.append("new")
        else:
            return [f"{t}: {'gone' if data is None else 'neither its old bytes nor a whole new file'}"]
    return [] if len(set(states)) <= 1 else ["set mixed: " + ", ".join(f"{t}={s}" for t, s in zip(targets, states))]


def partials(d: Path) -> list[str]:
    return sorted(n for n in os.listdir(d) if ".kvviz" in n and n != ".out.json.kvviz-tmp")


def kill_case(rng: random.Random, d: Path, which: str, duration: float, reference: dict[str, bytes]) -> list[str]:
    """SIGKILL the command at a random moment of its measured `duration`; the set's oracle."""
    argv, targets, gui = kill_command(which)
    old = {t: (d / t).read_bytes() for t in targets}
    cmd = [sys.executable, "-m", "app.main" if gui else "kvviz", *argv]
    p = subprocess.Popen(cmd, cwd=d, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(rng.uniform(0.3, 1.05) * duration)  # the first part is imports: aim most kills at the writes
    p.kill()
    p.wait()
    return judge_set(d, targets, old, reference)


@contextlib.contextmanager
def small_disk(d: Path, size_kb: int = 2048):
    """`d` as a tmpfs of `size_kb` (a real full disk: ENOSPC), if this process may mount one
    (root); yields whether it is. Unmounted after, and `d` left empty."""
    mounted = IS_ROOT and subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(d)],
                                         capture_output=True).returncode == 0
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(d)], capture_output=True)


def fill(d: Path, room: int) -> None:
    """Fill the disk of `d` but for about `room` bytes, with a file of the user's (`filler`)."""
    st = os.statvfs(d)
    with open(d / "filler", "wb") as f:
        f.write(b"\0" * max(0, st.f_bavail * st.f_frsize - room))


def full_disk_case(d: Path, which: str, room: int, tmpfs: bool, reference: dict[str, bytes]) -> tuple[list[str], str]:
    """The command with about `room` bytes left to write: on a full tmpfs (ENOSPC), or with its
    files capped at `room` bytes (RLIMIT_FSIZE, SIGXFSZ ignored, so a write fails with EFBIG as on
    a full disk). The oracle: exit 0 with the whole set, or exit 2 with one line, the old files
    whole; nothing else changed and no partial left. Returns (problems, verdict)."""
    import resource
    argv, targets, gui = kill_command(which)
    old = {t: (d / t).read_bytes() for t in targets}
    if tmpfs:
        fill(d, room)
    before = snapshot(d)

    def cap():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (room, room))

    code, err = run_child(argv, d, gui=gui, **({} if tmpfs else {"preexec_fn": cap}))
    v = verdict(code, err)
    after = snapshot(d)
    problems = judge_set(d, targets, old, reference)
    case = Case(argv, which, "either", targets if code == 0 else [])
    problems += judge(case, before, after, code)
    errors = [ln for ln in err.splitlines() if ln.startswith("error")]
    if code != 0 and (v != "refused" or len(errors) != 1):
        problems.append(f"exit {code} with {len(errors)} error lines: {err.strip().splitlines()[-1:]}")
    return problems, v
