"""Issue 29, "Nothing lost, ever": the hostile tester's reproducers, each in a sandbox of a
user's files judged by the files-lost oracle (tests/input_files.py), and a small seeded draw
of the files surface; benchmarks/bench_fuzz_input.py draws thousands, with kill and full-disk
cases. Each reproducer names what it lost before the output guard (kvviz/outputs.py)."""
import os
import random
from pathlib import Path

import pytest

from .input_files import IS_ROOT, Case, build, file_case, full_disk_case, kill_command, play

OVERWRITES_INPUT = "an output that is an input of the run is written over it"
HIDDEN = "atomic_write deletes hidden user files named like its temporaries (.NAME + 8 characters, .kvviz-tmp)"
SPECIAL = "a non-regular target (device, FIFO, socket) is replaced by a regular file"
LINK = "a symlink output is replaced by a regular file, not written through"

# (argv, exit code expected, entries the run may write, what it lost before the guard or None)
REPRODUCERS = {
    "json-out over the scenario": (["run", "scen.toml", "--json-out", "scen.toml"], 2, [], OVERWRITES_INPUT),
    "svg over the scenario": (["run", "scen.toml", "--svg", "scen.toml"], 2, [], OVERWRITES_INPUT),
    "png over the scenario": (["run", "scen.toml", "--png", "scen.toml"], 2, [], OVERWRITES_INPUT),
    "perfetto over the scenario": (["run", "scen.toml", "--perfetto", "scen.toml"], 2, [], OVERWRITES_INPUT),
    "the scenario spelled ./adir/../": (["run", "./adir/../scen.toml", "--json-out", "./adir/../scen.toml"], 2, [],
                                       OVERWRITES_INPUT),
    "json-out over the workload's trace": (["run", "pc.toml", "--json-out", "trace.jsonl"], 2, [], OVERWRITES_INPUT),
    "perfetto over the workload's trace": (["run", "pc.toml", "--perfetto", "trace.jsonl"], 2, [], OVERWRITES_INPUT),
    "claims --readme the scenario": (["claims", "scen.toml", "--readme", "scen.toml", "--quiet"], 2, [],
                                     OVERWRITES_INPUT),
    "json-out keeps .report.json.20261202 and .my_notes": (["run", "scen.toml", "--json-out", "report.json"], 0,
                                                           ["report.json"], HIDDEN),
    "png keeps .fig.png.20261201": (["run", "scen.toml", "--png", "fig.png"], 0, ["fig.png"], HIDDEN),
    "json-out keeps .out.json.kvviz-tmp": (["run", "scen.toml", "--json-out", "out.json"], 0, ["out.json"], HIDDEN),
    "json-out at a FIFO": (["run", "scen.toml", "--json-out", "pipe"], 2, [], SPECIAL),
    "svg at a socket": (["run", "scen.toml", "--svg", "sock"], 2, [], SPECIAL),
    "json-out through a symlink": (["run", "scen.toml", "--json-out", "link.json"], 0, ["real.json"], LINK),
    "png through a symlink": (["run", "scen.toml", "--png", "link.png"], 0, ["real.png"], LINK),
    "json-out over a chmod 444 file": (["run", "scen.toml", "--json-out", "ro.md"], 2, [],
                                       "a read-only target is replaced (root's rename ignores its mode)"),
    "png and pdf at one name": (["run", "scen.toml", "--png", "x.png", "--pdf", "x.png"], 2, [],
                                "two outputs at one path: the second silently replaces the first"),
    "json-out and perfetto at one name": (["run", "scen.toml", "--json-out", "x.json", "--perfetto", "./x.json"], 2,
                                          [], "two outputs at one path: the second silently replaces the first"),
    "json-out newname/": (["run", "scen.toml", "--json-out", "newname/"], 2, [],
                          "a name ending in / writes a file of that name"),
    "csv DIR/": (["run", "scen.toml", "--csv", "adir/"], 2, [], "--csv DIR/ writes DIR/_lanes.csv ..."),
    "png named .svg": (["run", "scen.toml", "--png", "wrong.svg"], 2, [],
                       "PNG bytes written to a name whose extension says SVG"),
    "cache in a missing folder": (["run", "scen.toml", "--cache", "missing/dir"], 2, [],
                                  "--cache makes missing parent folders"),
    "validate a FIFO": (["validate", "pipe"], 2, [], None),
    "a fine run": (["run", "scen.toml", "--json-out", "new.json", "--svg", "new.svg", "--csv", "newp"], 0,
                   ["new.json", "new.svg"] + [f"newp_{t}.csv" for t in ("lanes", "spans", "instants", "counters",
                                                                        "residency")], None),
}
if IS_ROOT:
    REPRODUCERS["svg at a character device"] = (["run", "scen.toml", "--svg", "dev"], 2, [], SPECIAL)


def _check(case: Case, d: Path, code: int, outputs: list[str]):
    out = play(case, d)
    assert out.lost == [], (case.argv, out.lost)
    assert out.verdict == ("ran" if code == 0 else "refused"), (case.argv, out.stderr)
    if code == 2:  # one line, naming the path
        errors = [ln for ln in out.stderr.splitlines() if ln.startswith("error")]
        target = [a for a in case.argv if not a.startswith("--")][-1]  # the last path: the one refused
        assert len(errors) == 1 and os.path.basename(target.rstrip("/")) in errors[0], out.stderr
    for o in outputs:
        assert (d / o).is_file() and not (d / o).is_symlink(), o


@pytest.mark.parametrize("name", list(REPRODUCERS))
def test_a_reproducer_loses_nothing(name, tmp_path):
    argv, code, outputs, _ = REPRODUCERS[name]
    build(tmp_path)
    _check(Case(argv, name, "ran" if code == 0 else "refused", outputs), tmp_path, code, outputs)


@pytest.mark.gui
@pytest.mark.parametrize("argv", [
    ["scen.toml", "--screenshot", "scen.toml", "--view-only"],  # wrote a PNG over the scenario
    ["scen.toml", "--screenshot", "notes.txt"],  # a screenshot Qt cannot save (.txt) emptied notes.txt
], ids=["over the scenario", "over notes.txt"])
def test_a_gui_screenshot_reproducer_loses_nothing(argv, tmp_path):
    build(tmp_path)
    _check(Case(argv, "gui", "refused", [], gui=True), tmp_path, 2, [])


@pytest.mark.parametrize("which, room", [
    ("json", 3000),  # a failed PNG render left ..fig.png.kvviz-tmp.tmp and deleted .fig.png.20261201
    ("csv", 300),  # --csv PREFIX on a full disk left prev_lanes.csv new, the others old
])
def test_a_full_disk_leaves_the_old_files_whole(which, room, tmp_path):
    """Writes capped at `room` bytes (RLIMIT_FSIZE, as EFBIG: a full disk without root): the
    command refuses in one line and the previous files stay whole, no partial left."""
    build(tmp_path)
    problems, verdict = full_disk_case(tmp_path, which, room, False, {})
    assert (problems, verdict) == ([], "refused"), kill_command(which)[0]


# the seeded draw of the files surface (16 of these 40 lost something before the guard)
DRAW, DRAW_SEED = 40, 29


@pytest.mark.parametrize("i", range(DRAW))
def test_a_drawn_files_case_loses_nothing(i, tmp_path):
    rng = random.Random(DRAW_SEED * 1000 + i)
    build(tmp_path)
    case = file_case(rng, tmp_path)
    out = play(case, tmp_path)
    assert out.lost == [] and out.verdict in ("ran", "refused"), (case.argv, out.lost, out.stderr[-300:])
    assert not out.silent and not out.overeager, (case.argv, case.expect, out.verdict, out.stderr[-300:])
