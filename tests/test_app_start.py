"""The window is on the screen before anything runs (issue 33, item 1): the constructor starts
no simulation process and sends no run; the first run is sent once the window has been painted,
and the empty timeline says what is coming meanwhile. A window never shown still runs."""
from __future__ import annotations

import pytest

from .conftest import SCENARIOS

pytestmark = pytest.mark.gui


def _window(settings, name: str):
    from PySide6.QtWidgets import QMessageBox

    from app.shell.window import MainWindow
    win = MainWindow(str(SCENARIOS / f"{name}.toml"), settings=settings)
    win.ask_unsaved = lambda: QMessageBox.Discard
    return win


def test_the_first_run_is_sent_after_the_first_paint(qtbot, settings):
    win = _window(settings, "attention_store_mooncake")
    qtbot.addWidget(win)
    sent = []
    submit = win.runner.submit
    win.runner.submit = lambda sc: (sent.append(win._drawn), submit(sc))[1]
    assert win.runner._proc is None and win.result is None  # nothing started by the constructor
    assert "opening" in win.status.text()
    note = win.view("timeline")._waiting
    assert note is not None and "AttentionStore" in note.textItem.toPlainText()  # the scenario's name
    assert win.panel.scenario() is not None  # the panel is filled before the paint
    win.show()
    qtbot.waitUntil(lambda: win.result is not None, timeout=120_000)
    assert sent == [True]  # one run, sent once the window had been painted
    win.show_view("timeline")  # (AttentionStore opens on Policies: the timeline draws when shown)
    assert win.view("timeline")._waiting is None  # the note went with the first drawn run
    win.close()


def test_a_window_never_shown_runs_all_the_same(qtbot, settings):
    win = _window(settings, "rope_prefetch_16")
    qtbot.addWidget(win)
    qtbot.waitUntil(lambda: win.result is not None, timeout=60_000)
    assert not win.isVisible()
    win.close()
