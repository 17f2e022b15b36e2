"""The name an export suggests is the file whose run is on show: after opening a file that does
not validate, the window keeps the previous run, and its figure must not be offered under the
new (unrun) file's name."""
import pytest

pytest.importorskip("PySide6")
pytestmark = pytest.mark.gui

from .conftest import SCENARIOS, wait_new_result  # noqa: E402


def test_export_names_the_file_on_show_not_an_invalid_one_opened_after(window, qtbot, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog
    bad = tmp_path / "typo.toml"
    bad.write_text((SCENARIOS / "rope_prefetch_16.toml").read_text().replace("[cache]", "[cache]\nslotz = 4", 1))
    shown = window.result
    assert window.open(str(bad)) and window.panel.scenario() is None  # opened, marked, not run
    assert window.result is shown  # the previous run stays on screen
    asked = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (asked.append(a[2]), ("", ""))[1]))
    window.export_dialog("svg")
    window.show_view("counters")
    window.export_view_dialog("png")
    window.export_data_dialog()
    assert [a.rsplit("/", 1)[-1] for a in asked] == ["rope_prefetch_16.svg", "rope_prefetch_16_counters.png",
                                                      "rope_prefetch_16_counters.csv"]
    # once a valid file runs, its own name again
    good = tmp_path / "mine.toml"
    good.write_text((SCENARIOS / "rope_prefetch_16.toml").read_text())
    assert window.open(str(good))
    wait_new_result(qtbot, window, shown)
    asked.clear()
    window.export_dialog("svg")
    assert asked[0].endswith("mine.svg")


def test_after_save_as_the_export_takes_the_new_name(window, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog
    out = tmp_path / "copy.toml"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(out), "")))
    assert window.save_as()
    asked = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (asked.append(a[2]), ("", ""))[1]))
    window.export_dialog("png")
    assert asked[0].endswith("copy.png")


def test_the_status_line_says_a_run_is_of_edited_values(window, qtbot):
    """The scenario's name often holds its figures ("150 groups × 5 users"); after an edit the
    status line led with it unchanged, as if the run were the file's."""
    first = window.result
    assert "(edited)" not in window.status.text()
    window.panel.set_value("storage.latency_us", 30)
    wait_new_result(qtbot, window, first)
    assert window.status.text().startswith(f"{window.result.scenario.name} (edited): ")


def test_a_figure_caption_names_the_file_on_show_not_an_invalid_one_opened_after(window, tmp_path):
    bad = tmp_path / "typo.toml"
    bad.write_text((SCENARIOS / "rope_prefetch_16.toml").read_text().replace("[cache]", "[cache]\nslotz = 4", 1))
    assert window.open(str(bad)) and window.panel.scenario() is None
    window.show_view("counters")
    caption = window.figure_caption()
    assert "(rope_prefetch_16.toml)" in caption and "typo" not in caption and "slotz" not in caption
