"""Output failures are refusals (issue 23): a read-only folder, a full disk, a folder that cannot
be made, a path that is a folder: one line naming the path, exit 2, the previous file intact and
no temporary file left; a killed save's partials are removed by the next save of that target.
A full disk and a read-only folder are real where a tiny tmpfs can be mounted (root), else the
write is made to fail with the same errno."""
import errno
import os
import subprocess
from pathlib import Path

import pytest

from kvviz.cli import main
from kvviz.io import atomic_write, remove_stale_partials

from .conftest import SCENARIOS

SEED = str(SCENARIOS / "rope_prefetch_16.toml")
OLD = "old contents\n"


def _mount(where: Path, size: str = "64k") -> bool:
    if os.geteuid() != 0:
        return False
    where.mkdir(exist_ok=True)
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True).returncode == 0


@pytest.fixture
def tiny_fs(tmp_path):
    where = tmp_path / "fs"
    if not _mount(where):
        yield None
        return
    yield where
    subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _one_line(capsys, path):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {path}: cannot write the file"), err
    return err[0]


def _no_leftovers(folder: Path, keep: set):
    assert {p.name for p in folder.iterdir()} == keep


def test_json_out_into_a_read_only_folder(tmp_path, tiny_fs, capsys):
    folder = tiny_fs or tmp_path / "ro"
    folder.mkdir(exist_ok=True)
    out = folder / "m.json"
    out.write_text(OLD)
    if tiny_fs is not None:
        assert subprocess.run(["mount", "-o", "remount,ro", str(folder)]).returncode == 0
    elif os.geteuid() != 0:
        folder.chmod(0o555)
    else:
        pytest.skip("root without mount: a folder cannot be made read-only for this process")
    try:
        assert main(["run", SEED, "--json-out", str(out)]) == 2
        assert "not writable" in _one_line(capsys, out) or "read-only" in capsys.readouterr().err
    finally:
        folder.chmod(0o755) if tiny_fs is None else None
    assert out.read_text() == OLD
    _no_leftovers(folder, {"m.json"})


def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, tiny_fs, capsys, monkeypatch):
    folder = tiny_fs or tmp_path
    out = folder / "t.perfetto.json"
    out.write_text(OLD)
    if tiny_fs is None:  # the write fails as a full disk makes it fail
        def full(fd):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        monkeypatch.setattr(os, "fsync", full)
    else:  # fill the 64 KiB file system to its last block
        (folder / "filler").write_bytes(b"\0" * 60_000)
    assert main(["run", SEED, "--perfetto", str(out)]) == 2
    assert "the disk is full" in _one_line(capsys, out)
    assert out.read_text() == OLD
    _no_leftovers(folder, {"t.perfetto.json"} | ({"filler"} if tiny_fs else set()))


@pytest.mark.parametrize("flag", ["--json-out", "--svg", "--perfetto"])
def test_a_path_that_is_a_folder(tmp_path, flag, capsys):
    target = tmp_path / "adir"
    target.mkdir()
    assert main(["run", SEED, flag, str(target)]) == 2
    assert "it is a folder" in _one_line(capsys, target)


def test_a_folder_that_cannot_be_made(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    out = tmp_path / "afile" / "sub" / "m.json"
    assert main(["run", SEED, "--json-out", str(out)]) == 2
    assert "is not a folder" in _one_line(capsys, out)


@pytest.mark.parametrize("flag", ["--json-out", "--svg", "--png", "--pdf", "--perfetto", "--csv"])
def test_a_missing_folder_is_refused_naming_it(tmp_path, capsys, flag):
    out = tmp_path / "new" / "deeper" / "m.out"
    assert main(["run", SEED, flag, str(out)]) == 2
    line = _one_line(capsys, f"{out}_lanes.csv" if flag == "--csv" else out)  # --csv names its first file
    assert f"the folder {out.parent} does not exist" in line, line
    _no_leftovers(tmp_path, set())  # nothing made, nothing written


def test_a_failed_png_exits_2_and_writes_nothing(tmp_path, capsys, monkeypatch):
    import kvviz.export.raster as raster

    def failing(svg, fmt, dpi=300):  # the renderer hands back bytes: a failure has no file to leave
        raise raster.ExportError("could not render the PNG: No space left on device")
    monkeypatch.setattr(raster, "render", failing)
    png = tmp_path / "t.png"
    assert main(["run", SEED, "--png", str(png), "--json-out", str(tmp_path / "m.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(png) in err[0], err
    _no_leftovers(tmp_path, set())  # nor the --json-out: the set is written whole or not at all


def test_the_next_save_removes_a_killed_saves_partials_and_nothing_else(tmp_path):
    target = tmp_path / "m.json"
    target.write_text(OLD)
    stale = tmp_path / ".m.json.kvviz-ab12cd_3.part"
    stale.write_text("half")
    # a user's files that look like the temporaries of older kvviz versions, or of other tools
    users = [".m.json.ab12cd_3", ".m.json.kvviz-tmp", ".m.json.20261202", ".m.json.my_notes",
             ".m.json.kvviz-ab12cd_3.part.bak", ".other.json.kvviz-ab12cd_3.part"]
    for name in users:
        (tmp_path / name).write_text("mine")
    atomic_write(target, "new\n")
    assert target.read_text() == "new\n"
    _no_leftovers(tmp_path, {"m.json", *users})
    assert all((tmp_path / name).read_text() == "mine" for name in users)


def test_a_live_saves_partial_is_left_alone(tmp_path):
    import fcntl
    target = tmp_path / "m.json"
    live = tmp_path / ".m.json.kvviz-zz99yy_1.part"
    live.write_text("being written")
    fd = os.open(live, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_SH)  # as atomic_write holds its own
    try:
        assert remove_stale_partials(target) == []
        assert live.exists()
    finally:
        os.close(fd)
    assert remove_stale_partials(target) == [str(live)]


def test_sigkill_during_a_save_then_a_save_leaves_one_file(tmp_path):
    """A real kill: a child writes a big file through atomic_write and is killed mid-write."""
    import signal
    import sys
    import time
    target = tmp_path / "big.bin"
    code = ("import sys, os; from kvviz import io\n"
            "real = os.fsync\n"
            "os.fsync = lambda fd: (print('writing', flush=True), __import__('time').sleep(60))\n"
            f"io.atomic_write({str(target)!r}, b'x' * 1000)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert p.stdout.readline().strip() == "writing"
    p.send_signal(signal.SIGKILL)
    p.wait()
    left = [n for n in os.listdir(tmp_path) if n.startswith(".big.bin.")]
    assert len(left) == 1  # the killed save's partial
    time.sleep(0.01)
    atomic_write(target, b"new")
    assert os.listdir(tmp_path) == ["big.bin"] and target.read_bytes() == b"new"


def test_a_set_whose_rename_fails_puts_the_old_set_back(tmp_path, monkeypatch):
    """`--csv PREFIX` failing at its third file left a mix of new and old files."""
    import kvviz.io as kio
    old = {f"p_{t}.csv": f"old {t}\n" for t in ("lanes", "spans", "instants")}
    for name, text in old.items():
        (tmp_path / name).write_text(text)
    items = [(str(tmp_path / n), "new\n") for n in [*old, "p_counters.csv"]]  # the last one is new
    real, calls = kio.os.replace, []

    def third_fails(src, dst):
        calls.append(dst)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(src, dst)
    monkeypatch.setattr(kio.os, "replace", third_fails)
    with pytest.raises(OSError) as e:
        kio.atomic_write_set(items)
    assert e.value.filename == items[2][0]  # named by the target, not by its partial
    monkeypatch.undo()
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == old  # whole, nothing else left


def test_a_symlink_is_written_through_and_stays_a_link(tmp_path):
    target = tmp_path / "real.json"
    target.write_text(OLD)
    link = tmp_path / "link.json"
    link.symlink_to(target.name)
    atomic_write(link, "new\n")
    assert link.is_symlink() and os.readlink(link) == "real.json" and target.read_text() == "new\n"


def test_a_read_needs_memory_for_the_file_not_for_the_cap(tmp_path):
    """read_capped asked for cap + 1 bytes at once: a MemoryError on a tiny file under an
    address-space limit smaller than the cap."""
    import sys
    f = tmp_path / "tiny.txt"
    f.write_text("kind = 1\n")
    code = ("import resource; from kvviz.io import read_capped\n"
            "resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))\n"
            f"print(read_capped({str(f)!r}, 'file', 8 << 30))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=Path(__file__).resolve().parents[1])
    assert p.returncode == 0 and "kind = 1" in p.stdout, p.stderr[-300:]
