"""Output folders (issue 23): a file path into a folder that does not exist is refused, for
kvviz-gui --screenshot as for kvviz run's flags (tests/test_output_failures.py); the headless
job's --out folder is the tool's own and is made, also with QT_QPA_PLATFORM set empty."""
import pytest

from app.main import main as gui_main

from .conftest import SCENARIOS

pytestmark = pytest.mark.gui
SEED = str(SCENARIOS / "rope_prefetch_16.toml")


def test_a_screenshot_into_a_missing_folder_is_refused_before_the_window(tmp_path, capsys):
    out = tmp_path / "no" / "such" / "x.png"
    assert gui_main([SEED, "--screenshot", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {out}: cannot write the file: the folder {out.parent} does not exist"], err
    assert list(tmp_path.iterdir()) == []


def test_the_headless_job_makes_its_out_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("QT_QPA_PLATFORM", "")  # as `QT_QPA_PLATFORM= DISPLAY= make run` leaves it
    out = tmp_path / "a" / "b"
    assert gui_main(["--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["rope_prefetch_16.json", "rope_prefetch_16.png",
                                                      "rope_prefetch_16.svg"]
