"""With no scenario open (the file given was missing), Save, Save As and Reset raised
RuntimeError("no scenario loaded") out of a Qt slot (a traceback on stderr, nothing said to the
user), and Export wrote a figure of empty axes. Each now says there is nothing to act on."""
import pytest

pytest.importorskip("PySide6")
pytestmark = pytest.mark.gui


@pytest.fixture
def empty_window(qtbot, settings, tmp_path):
    from app.shell.window import MainWindow
    win = MainWindow(str(tmp_path / "missing.toml"), settings=settings)
    qtbot.addWidget(win)
    win.show()
    assert win.panel.path() is None and win.result is None
    yield win
    win.close()


def test_save_save_as_and_reset_say_nothing_is_open(empty_window, monkeypatch):
    from PySide6.QtWidgets import QFileDialog
    asked = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (asked.append(a), ("", ""))[1]))
    assert empty_window.save() is False
    assert "open a scenario first" in empty_window.status.text()
    assert empty_window.save_as() is False and not asked  # no dialog for nothing
    empty_window._say("")
    empty_window.reset_to_file()
    assert "open a scenario first" in empty_window.status.text()


@pytest.mark.parametrize("view", ["timeline", "tiers", "counters"])
def test_export_writes_no_figure_of_empty_axes(empty_window, monkeypatch, tmp_path, view):
    from PySide6.QtWidgets import QFileDialog
    asked = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName",
                        staticmethod(lambda *a, **k: (asked.append(a), (str(tmp_path / "out.svg"), ""))[1]))
    empty_window.show_view(view)
    empty_window.export_current()
    empty_window.export_view_dialog("png")
    empty_window.export_data_dialog()
    assert not asked and not (tmp_path / "out.svg").exists()
    assert "no run on show" in empty_window.status.text()


def test_tabs_that_draw_a_run_wait_for_one(empty_window, qtbot):
    """They showed empty axes (Ladder, Tiers) without a word; now disabled, saying why, until a
    scenario has run. The Timeline says what went wrong; Replay replays its own trace."""
    tabs = empty_window.tabs
    enabled = {t.name for i, t in enumerate(empty_window.tab_list) if tabs.isTabEnabled(i)}
    assert enabled == {"timeline", "replay"}
    i = empty_window.tab_list.index(empty_window.tab("tiers"))
    assert "Open a scenario first" in tabs.tabToolTip(i)
    empty_window.picker.activated.emit(empty_window.picker.findText("rope_prefetch_16"))
    qtbot.waitUntil(lambda: empty_window.result is not None, timeout=30_000)
    assert tabs.isTabEnabled(empty_window.tab_list.index(empty_window.tab("counters")))
    assert tabs.tabToolTip(empty_window.tab_list.index(empty_window.tab("counters"))) == ""
