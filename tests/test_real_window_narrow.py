"""1366 x 768 in a real X window (Xvfb, platform xcb; issue 33, item 7): every tab reachable
from the tab bar's menu, and a field's long error leaves the docks, the centre and the form's
width as they were. tests/real_window/narrow.py drives it and reports geometry as JSON.
Skipped, saying why, where Xvfb is absent."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from .conftest import ROOT, SCENARIOS

pytest.importorskip("PySide6")
pytestmark = [pytest.mark.gui, pytest.mark.xvfb]


def _drive(tmp_path_factory, scenario):
    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is not installed (Debian: apt-get install xvfb; `make test` does it as root)")
    r, w = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", "1366x768x24", "-nolisten", "tcp"],
                            pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(w)
    with os.fdopen(r) as f:
        number = f.readline().strip()
    if not number:
        proc.kill()
        pytest.skip("Xvfb did not start")
    try:
        home = tmp_path_factory.mktemp("home")
        env = {**os.environ, "DISPLAY": f":{number}", "QT_QPA_PLATFORM": "xcb", "HOME": str(home),
               "XDG_CONFIG_HOME": str(home / ".config"), "XDG_RUNTIME_DIR": str(home)}
        p = subprocess.run([sys.executable, "-m", "tests.real_window.narrow", str(scenario)],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    finally:
        proc.terminate()
        proc.wait(10)
    if "could not load the qt platform plugin" in p.stderr.lower():
        pytest.skip("Qt cannot open an X window here (install the xcb libraries: make system-libs as root)")
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return _drive(tmp_path_factory, SCENARIOS / "rope_prefetch_16.toml")


@pytest.fixture(scope="module")
def cluster_report(tmp_path_factory):
    """The cluster scenario (300 requests): its Cluster tab's long summary line once widened the
    tab in a real window and squeezed the Parameters dock."""
    text = (SCENARIOS / "cluster_mooncake_routing.toml").read_text()
    trace = ROOT / "resources" / "traces" / "mooncake_conversation_trace.jsonl"
    text = text.replace('trace_file = "../resources/traces/mooncake_conversation_trace.jsonl"', f'trace_file = "{trace}"')
    scen = tmp_path_factory.mktemp("cluster") / "cluster.toml"
    scen.write_text(text.replace("[workload]\n", "[workload]\nmax_requests = 300\n", 1))
    return _drive(tmp_path_factory, scen)


def test_no_tab_squeezes_the_docks(cluster_report):
    enabled = [t for t in cluster_report["tabs"] if t["enabled"]]
    assert "Cluster" in [t["title"] for t in enabled]
    widths = {tuple(t["docks"]) for t in enabled}
    assert len(widths) == 1, [(t["title"], t["docks"]) for t in enabled]


def test_the_window_fits_the_small_screen_and_the_bar_overflows(report):
    assert report["platform"] == "xcb"
    assert report["window"][0] <= report["screen"][0] and report["window"][1] <= report["screen"][1]
    assert report["bar_needs"] > report["bar_has"]  # the names do not all fit: the case in question


def test_every_enabled_tab_comes_to_the_front_inside_the_bar(report):
    enabled = [t for t in report["tabs"] if t["enabled"]]
    assert len(enabled) >= 6, report["tabs"]
    assert not all(t["inside_at_first"] for t in enabled), report["tabs"]  # some had to scroll into view
    for t in enabled:
        assert t["current"] and t["inside"], t


def test_a_long_field_error_keeps_every_width(report):
    b, a = report["before"], report["after"]
    assert a["form"] <= a["form_room"], report  # wrapped: no sideways scroll in the form
    for key in ("params", "centre", "metrics"):
        assert a[key] == b[key], (key, report)
