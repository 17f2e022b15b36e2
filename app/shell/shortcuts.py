"""Help → Keyboard Shortcuts…: the window's keys and the timeline's (app.views.timeline_keys),
in one small non-modal dialog."""
from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget

from ..views.timeline_keys import SHORTCUTS as TIMELINE

WINDOW = [
    ("Ctrl+F", "the Timeline's search box (typing there never zooms)"),
    ("Home", "show the whole run"),
    ("Ctrl+PgDown / Ctrl+PgUp", "the next / previous view tab"),
    ("Ctrl+O / Ctrl+S / Ctrl+Shift+S", "open / save / save as"),
]


def shortcuts_html() -> str:
    def rows(items):
        return "".join(f"<tr><td style='padding-right:14px'><b>{html.escape(k)}</b></td>"
                       f"<td>{html.escape(v)}</td></tr>" for k, v in items)
    return (f"<h3>Window</h3><table>{rows(WINDOW)}</table>"
            f"<h3>Timeline (when it has the focus: click it first)</h3><table>{rows(TIMELINE)}</table>")


def shortcuts_dialog(parent: QWidget) -> QDialog:
    dlg = QDialog(parent)
    dlg.setWindowTitle("Keyboard Shortcuts")
    text = QLabel(shortcuts_html())
    text.setTextFormat(Qt.RichText)
    text.setTextInteractionFlags(Qt.TextSelectableByMouse)
    buttons = QDialogButtonBox(QDialogButtonBox.Close)
    buttons.rejected.connect(dlg.close)
    lay = QVBoxLayout(dlg)
    lay.addWidget(text)
    lay.addWidget(buttons)
    dlg.text = text
    return dlg
