"""The side docks' widths: each dock keeps the width it wants (its default, a kind's metrics
tables, or where the user dragged it) and gets it back when the window has room again, since
Qt gives a growing window's room to the centre only. Also View → Reset Layout, and the layout
saved in and restored from the settings."""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QDockWidget, QMainWindow


class DockLayout(QObject):
    def __init__(self, window: QMainWindow):
        super().__init__(window)
        self.window = window
        self.defaults: dict[QDockWidget, tuple] = {}  # dock -> (area, width), for View → Reset Layout
        self.wanted: dict[QDockWidget, int] = {}  # dock -> the width it gets back when there is room
        self._metrics_auto = 0  # the width last fitted to a kind's metrics (not the user's drag)
        self._fitting = False  # docks are being resized by the window, not by the user
        self._last_width = 0  # the window's width at its last resize
        window.installEventFilter(self)

    def add(self, title: str, widget, area, width: int) -> QDockWidget:
        win = self.window
        dock = QDockWidget(title, win)
        dock.setObjectName(f"dock-{title.lower()}")
        dock.setWidget(widget)
        widget.setMinimumWidth(width - 70)  # a restored or squeezed layout never hides the fields
        win.addDockWidget(area, dock)
        win.resizeDocks([dock], [width], Qt.Horizontal)
        self.defaults[dock] = (area, width)
        self.wanted[dock] = width
        dock.installEventFilter(self)
        return dock

    def eventFilter(self, obj, ev):  # noqa: N802 (Qt's name)
        win = self.window
        if ev.type() != QEvent.Resize:
            return False
        if obj is win:
            grew = ev.size().width() > self._last_width > 0
            self._last_width = ev.size().width()
            if grew:
                QTimer.singleShot(0, self, self.regrow)
        # A dock resized while the window keeps its width: the user dragged the separator.
        elif obj in self.wanted and not self._fitting and not obj.isFloating() and ev.oldSize().width() > 0 \
                and win.isVisible() and win.width() == self._last_width:
            self.wanted[obj] = obj.width()
        return False

    def regrow(self):
        """Side docks squeezed by a smaller window get their widths back as it grows."""
        docks = [d for d, w in self.wanted.items()
                 if d.isVisible() and not d.isFloating() and d.width() < w - 2]
        if docks:
            self.fit(docks, [self.wanted[d] for d in docks])

    def fit(self, docks, widths):
        self._fitting = True  # until the layout this posts has run: its resizes are not a drag
        self.window.resizeDocks(docks, widths, Qt.Horizontal)
        QTimer.singleShot(0, self, lambda: setattr(self, "_fitting", False))

    def fit_right(self, dock: QDockWidget, wanted: int, centre_min: int):
        """Room for the right dock's widest content (`wanted`, e.g. five policies side by side),
        up to 35% of the window, and never so wide that the centre gets less than `centre_min`
        (every tab's name); back to its default when it wants less, unless the user has
        dragged it since."""
        win = self.window
        left = max((d.width() for d in win.findChildren(QDockWidget)
                    if win.dockWidgetArea(d) == Qt.LeftDockWidgetArea and d.isVisible()), default=0)
        room = win.width() - left - centre_min
        default = self.defaults[dock][1]
        want = max(default, min(wanted, int(win.width() * 0.35), room))
        had = self.wanted[dock]
        if want > had or had in (self._metrics_auto, default):
            self._metrics_auto = self.wanted[dock] = want
            self.fit([dock], [want])

    def reset(self):
        """Docks back in their areas at their first widths, shown."""
        for dock, (area, _) in self.defaults.items():
            dock.setFloating(False)
            self.window.addDockWidget(area, dock)
            dock.show()
        self.wanted = {d: w for d, (_, w) in self.defaults.items()}
        self.fit(list(self.defaults), list(self.wanted.values()))

    def restore(self, settings):
        win = self.window
        geo, state = settings.value("geometry"), settings.value("windowState")
        if geo is not None:
            win.restoreGeometry(geo)
        if state is not None:
            win.restoreState(state)
            widths = settings.value("dockWidths")  # what the user chose, squeezed or not
            if isinstance(widths, list) and len(widths) == len(self.wanted):
                for dock, w in zip(self.wanted, widths):
                    if str(w).isdigit():
                        self.wanted[dock] = int(w)
            QTimer.singleShot(0, self, self.regrow)  # a layout saved squeezed opens with room
        self.fit_to_screen()

    def save(self, settings):
        settings.setValue("geometry", self.window.saveGeometry())
        settings.setValue("windowState", self.window.saveState())
        settings.setValue("dockWidths", [str(w) for w in self.wanted.values()])

    def fit_to_screen(self):
        """Never larger than the screen: the 1440 x 860 default on a 1366 x 768 laptop put the
        Metrics dock past the screen's edge (Qt already fits a restored layout)."""
        win = self.window
        screen = win.screen() or QGuiApplication.primaryScreen()
        if screen is None:
            return
        room = screen.availableGeometry()
        w, h = min(win.width(), room.width()), min(win.height(), room.height())
        if (w, h) != (win.width(), win.height()):
            win.resize(w, h)
            win.move(room.topLeft())
