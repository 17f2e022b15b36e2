"""Scratch files: what a killed process left is removed by the next one, nothing alive is touched."""
import os
import signal
import subprocess
import sys
import time

from kvviz.io import ORPHAN_AFTER_S, remove_scratch, scratch_file, scratch_tree, sweep_orphans

OWNER = """
import sys, time
from kvviz.io import scratch_file, scratch_tree
path, _ = scratch_file(10, ".oracleGeneral", sys.argv[1])
held = scratch_tree(None)  # kept referenced: a collected generator would clean up
tree = held.__enter__()
print(path, tree, flush=True)
time.sleep(120)
"""


def _age(path):
    old = time.time() - 2 * ORPHAN_AFTER_S
    os.utime(path, (old, old))


def test_a_killed_owners_files_are_swept_and_live_ones_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # scratch_tree(None) goes to the default temporary directory
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        left, tree = owner.stdout.readline().split()
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
    mine, lock = scratch_file(10, ".oracleGeneral", str(tmp_path))
    young, young_lock = scratch_file(10, "", str(tmp_path))
    os.close(young_lock)  # an orphan, but too young to tell from one its owner has not locked yet
    for p in (left, tree, mine):
        _age(p)
    assert os.path.isdir(tree) and os.path.exists(left)
    assert sorted(sweep_orphans(str(tmp_path))) == sorted([left, tree])
    assert not os.path.exists(left) and not os.path.exists(tree)
    assert os.path.exists(mine) and os.path.exists(young)  # alive (locked), and young
    remove_scratch(mine, lock)
    assert not os.path.exists(mine)


def test_a_scratch_tree_is_removed_on_exit_and_swept_on_creation(tmp_path):
    orphan, lock = scratch_file(10, "", str(tmp_path))
    os.close(lock)
    _age(orphan)
    with scratch_tree(None) as d:
        open(os.path.join(d, "x"), "w").close()
    assert not os.path.exists(d)
    scratch_file(10, "", str(tmp_path))  # creating one sweeps where it is created
    assert not os.path.exists(orphan)


def test_other_names_are_never_touched(tmp_path):
    other = tmp_path / "kvviz-replay-mine"
    other.write_text("x")
    _age(other)
    assert sweep_orphans(str(tmp_path)) == [] and other.exists()
