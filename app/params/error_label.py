"""The red message under a field or a section: it wraps at the width the form gives it and never
asks for more. A long unbroken word (a field path, a file name) had set the label's minimum
width: the form grew past the dock (560 px in a 306 px view at 1366 px), scrolled sideways and
cut every editor at the dock's edge."""
from __future__ import annotations

import re

from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QLabel, QSizePolicy

from .values import ERROR_COLOR

ZWSP = "\u200b"  # a break opportunity that prints nothing
_BREAK_AFTER = re.compile(r"([./\\_,:=\-])(?=\S)")


def breakable(text: str) -> str:
    """`text` with a place to break after each dot, slash, underscore, comma, colon, equals sign
    and hyphen, so a long path wraps instead of setting the label's width."""
    return _BREAK_AFTER.sub(lambda m: m.group(1) + ZWSP, text)


class ErrorLabel(QLabel):
    """A word-wrapped message whose width is the layout's, not its text's."""

    def __init__(self, point_size_less: float = 0.0, parent=None):
        super().__init__(parent)
        self.setWordWrap(True)
        # Ignored: its width is what the column has; its height follows (height-for-width)
        policy = QSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)
        self.setMinimumWidth(1)
        pal = self.palette()
        pal.setColor(QPalette.ColorRole.WindowText, ERROR_COLOR)
        self.setPalette(pal)
        if point_size_less:
            f = self.font()
            f.setPointSizeF(max(f.pointSizeF() - point_size_less, 7))
            self.setFont(f)
        self._plain = ""
        self.hide()

    def set_message(self, text: str) -> None:
        self._plain = text
        self.setText(breakable(text))
        self.setToolTip(text)
        self.setVisible(bool(text))

    def message(self) -> str:
        """The text as given (no break marks)."""
        return self._plain
