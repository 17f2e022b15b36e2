"""Keyboard-only use: Ctrl+PgDown / Ctrl+PgUp bring the next / previous view tab to the front
from anywhere in the window (Ctrl+Tab works only with the focus inside the tab widget, so from
the Parameters a user had to Tab through every field to change the view), skipping the tabs
that have nothing for this scenario; a focused spin box is not stepped by them."""
import pytest

pytest.importorskip("PySide6")
pytestmark = pytest.mark.gui


def _enabled(window) -> list[int]:
    return [i for i in range(window.tabs.count()) if window.tabs.isTabEnabled(i)]


def test_ctrl_page_keys_change_the_view_from_the_parameters(window, qtbot):
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QAbstractSpinBox
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5_000)
    spin = next(w for w in window.panel.findChildren(QAbstractSpinBox) if w.isVisible() and w.isEnabled())
    spin.setFocus()
    qtbot.waitUntil(spin.hasFocus, timeout=5_000)
    before = spin.text()
    enabled = _enabled(window)
    start = window.tabs.currentIndex()
    assert start == enabled[0]
    qtbot.keyClick(spin, Qt.Key_PageDown, Qt.ControlModifier)
    assert window.tabs.currentIndex() == enabled[1] and spin.text() == before
    qtbot.keyClick(spin, Qt.Key_PageUp, Qt.ControlModifier)
    assert window.tabs.currentIndex() == enabled[0]
    qtbot.keyClick(spin, Qt.Key_PageUp, Qt.ControlModifier)  # wraps to the last enabled tab
    assert window.tabs.currentIndex() == enabled[-1]
    assert len(enabled) < window.tabs.count()  # this scenario has tabs that were skipped
    for _ in range(len(enabled)):
        qtbot.keyClick(spin, Qt.Key_PageDown, Qt.ControlModifier)
        assert window.tabs.isTabEnabled(window.tabs.currentIndex())
    assert window.tabs.currentIndex() == enabled[-1]


def test_the_shortcuts_dialog_lists_them():
    from app.shell.shortcuts import shortcuts_html
    assert "Ctrl+PgDown / Ctrl+PgUp" in shortcuts_html()
