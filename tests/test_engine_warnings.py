"""libCacheSim's own messages (issue 22, item 8): what its C code prints while replaying is caught
off the process's stdout/stderr and kept with the curve point, said once by the CLI (stderr) and
beside its curve in the app."""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys

import pytest

from kvviz.replay.c_output import captured_c_output, summarise
from kvviz.replay.model import ReplayResult

from .conftest import ROOT

MOONCAKE = ROOT / "resources" / "traces" / "mooncake_synthetic_trace.jsonl"


def test_c_output_is_caught_and_summarised(capfd):
    libc = ctypes.CDLL(None)
    with captured_c_output() as lines:
        os.write(1, b"CBF at 0x55d0c1 has too few counters -2147483648! make it into 2 * 20\n")
        libc.printf(b"CBF at 0x7f00aa has too few counters -2147483648! make it into 2 * 20\n")  # C stdio, unflushed
        os.write(2, b"\x1b[31mERROR\x1b[0m: something else\n")
    out, err = capfd.readouterr()
    assert "CBF" not in out and "ERROR" not in err  # nothing reached the terminal
    assert summarise(lines) == ("CBF at 0x… has too few counters -2147483648! make it into 2 * 20 (×2)",
                                "ERROR: something else")
    os.write(1, b"after\n")
    assert capfd.readouterr().out == "after\n"  # the descriptors are back


def test_wtinylfu_on_the_mooncake_sample_warns_in_the_result_and_on_stderr():
    pytest.importorskip("libcachesim")
    cmd = [sys.executable, "-m", "kvviz", "replay", str(MOONCAKE), "--policy", "wtinylfu,fifo",
           "--capacity", "8GB", "--json"]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    rows = {r["policy"]: r for r in json.loads(p.stdout)}  # JSON: no line of libCacheSim's loose in it
    assert any("too few counters" in w for w in rows["wtinylfu"]["warnings"])
    assert "warnings" not in rows["fifo"]
    assert p.stderr.count("warning: wtinylfu: libCacheSim printed at 1 of 1 capacities: CBF") == 1


@pytest.mark.gui
def test_the_replay_tab_marks_the_curve_libcachesim_warned_about(qtbot):
    from app.views.replay import ReplayView
    view = ReplayView()
    qtbot.addWidget(view)
    said = ("CBF at 0x… has too few counters -2147483648! make it into 2 * 20",)
    view.results = [ReplayResult("wtinylfu", 10, 100, 100, 100, 100, "libcachesim", said),
                    ReplayResult("wtinylfu", 1000, 100, 40, 100, 40, "libcachesim"),
                    ReplayResult("lru", 10, 100, 90, 100, 90, "libcachesim")]
    view._draw()
    assert view.curves["wtinylfu"].name() == "wtinylfu ⚠ libCacheSim warned" and view.curves["lru"].name() == "lru"
    assert set(view.flags) == {"wtinylfu"} and "1 of 2 capacities" in view.flags["wtinylfu"].toolTip()
    assert view.flags["wtinylfu"].pos().x() == pytest.approx(1.0)  # at its warned point (log10 10)
    assert view.point_text("wtinylfu", 10).endswith("⚠ libCacheSim printed: " + said[0])
    assert "⚠" not in view.point_text("wtinylfu", 1000)
