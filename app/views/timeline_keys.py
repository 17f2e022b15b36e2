"""The timeline's keyboard, as in the instruments people know (Perfetto, Nsight): W/S zoom in and
out around the cursor (or the view's centre when the cursor is out of view), A/D pan, Enter and
Shift+Enter step through the search's hits, Escape clears, and a click on the time ruler places
the cursor. A mixin of TimelineView; keys typed in the search box are text, never a zoom."""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt

ZOOM_STEP = 0.8  # W: the visible span times this (S: divided by it)
PAN_STEP = 0.2  # A/D: this share of the visible span

# (keys, what they do): the Help menu's list; the window adds its own (Home, Ctrl+F, …)
SHORTCUTS = [
    ("W / S", "zoom in / out around the time cursor (the view's centre when the cursor is out of view)"),
    ("A / D", "pan left / right"),
    ("Enter / Shift+Enter", "in the search box: the next / previous hit (the cursor goes to it)"),
    ("Escape", "clear the search, the selection, the range and the second cursor"),
    ("Click on the time ruler", "place the time cursor there"),
    ("Click / Shift-click", "select an event / place the second cursor (Δt)"),
    ("Shift-drag", "select a time range"),
    ("Double-click a span", "re-run with that job picked (where the mechanism allows)"),
]


class _SearchKeys(QObject):
    """Shift+Enter (QLineEdit says returnPressed for both) and Escape in the search box."""

    def __init__(self, view):
        super().__init__(view)
        self.view = view

    def eventFilter(self, obj, ev):  # noqa: N802 (Qt's name)
        if ev.type() == QEvent.KeyPress:
            if ev.key() in (Qt.Key_Return, Qt.Key_Enter):
                self.view.find_next(-1 if ev.modifiers() & Qt.ShiftModifier else +1)
                return True
            if ev.key() == Qt.Key_Escape:
                self.view.clear_search()
                self.view.plot.setFocus(Qt.ShortcutFocusReason)  # W/A/S/D work again at once
                return True
        return False


class Keys:
    """Mixed into TimelineView, after build_instrument."""

    def build_keys(self) -> None:
        self.time_axis.clicked.connect(self._ruler_clicked)
        if self.details is not None:
            self._search_keys = _SearchKeys(self)
            self.search.installEventFilter(self._search_keys)

    def focus_search(self) -> bool:
        """Ctrl+F: the search box has the focus, its text selected to type over. False when this
        timeline has no search row (Compare's)."""
        if self.details is None or self.search.parentWidget().isHidden():
            return False
        self.search.setFocus(Qt.ShortcutFocusReason)
        self.search.selectAll()
        return True

    def clear_search(self) -> None:
        if self.details is not None:
            self.search.clear()
            self._forget_matches()

    def handle_key(self, ev) -> bool:
        """A key pressed on the timeline (never in a text field: those take their keys). True
        if it was one of the timeline's."""
        if ev.modifiers() & ~(Qt.KeypadModifier | Qt.ShiftModifier):
            return False  # Ctrl+S is Save, never a zoom
        key = ev.key()
        if key == Qt.Key_Escape:  # clear what was selected, measured and found
            self.cursor_b.hide()
            self.close_details()
            self.clear_search()
            return True
        if self.result is None:
            return False
        if key == Qt.Key_W:
            self.zoom_by(ZOOM_STEP)
        elif key == Qt.Key_S:
            self.zoom_by(1 / ZOOM_STEP)
        elif key == Qt.Key_A:
            self.pan_by(-PAN_STEP)
        elif key == Qt.Key_D:
            self.pan_by(+PAN_STEP)
        else:
            return False
        return True

    def zoom_by(self, factor: float) -> None:
        """The visible span times `factor` (< 1: in), the cursor's time staying where it is on
        screen when it is in view, else the view's centre."""
        (lo, hi), _ = self.viewbox.viewRange()
        at = self.time_cursor.value()
        if not lo <= at <= hi:
            at = (lo + hi) / 2
        self.viewbox.setXRange(at - (at - lo) * factor, at + (hi - at) * factor, padding=0)

    def pan_by(self, share: float) -> None:
        """The view moved by `share` of its span (< 0: left, to earlier times)."""
        (lo, hi), _ = self.viewbox.viewRange()
        d = (hi - lo) * share
        self.viewbox.setXRange(lo + d, hi + d, padding=0)

    def _ruler_clicked(self, x: float) -> None:
        """A click on the time axis: the cursor at that time, as clicked (a drag of the cursor
        snaps to an event's edge; a click on the ruler means the time under the mouse)."""
        if self.result is not None:
            self.place_cursor(x * self.scale, snap=False)
