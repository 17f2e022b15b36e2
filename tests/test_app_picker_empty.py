"""With no scenario open (the file given on the command line is missing), the toolbar's
Scenario box named the first bundled scenario, as if it were open; it is empty, with a prompt."""
import pytest

pytest.importorskip("PySide6")
pytestmark = pytest.mark.gui


def test_no_scenario_open_leaves_the_picker_empty(qtbot, settings, tmp_path):
    from app.shell.window import MainWindow
    win = MainWindow(str(tmp_path / "missing.toml"), settings=settings)
    qtbot.addWidget(win)
    win.show()
    assert win.panel.path() is None and win.result is None
    assert win.picker.currentIndex() == -1 and win.picker.currentText() == ""
    assert win.picker.placeholderText()  # says what to do
    win.picker.activated.emit(win.picker.findText("rope_prefetch_16"))  # the user picks one
    qtbot.waitUntil(lambda: win.result is not None, timeout=30_000)
    assert win.picker.currentText() == "rope_prefetch_16"
    win.close()
