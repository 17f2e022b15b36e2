"""Every tab reachable on a narrow screen: at 1366 px the eleven tabs' names need more room than
the centre has between the docks, and Qt left the last ones under a pair of tiny arrows.

The bar scrolls (names whole: Qt's eliding cut every name to its first letters at once, "S…",
"R…"), the current tab scrolled into view; a button at the bar's end lists every tab, so none is
more than two clicks away, as Perfetto's and Nsight's overflow menus do."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMenu, QTabWidget, QToolButton


class TabMenuButton(QToolButton):
    """The bar's corner button: a menu of every tab, the one on screen checked, the disabled
    ones greyed with their reason."""

    def __init__(self, tabs: QTabWidget):
        super().__init__(tabs)
        self.tabs = tabs
        self.setText("☰")
        self.setToolTip("All tabs")
        self.setAutoRaise(True)
        self.setFocusPolicy(Qt.NoFocus)
        self.setPopupMode(QToolButton.InstantPopup)
        self.menu_ = QMenu(self)
        self.menu_.setToolTipsVisible(True)
        self.menu_.aboutToShow.connect(self.fill)
        self.setMenu(self.menu_)

    def fill(self) -> None:
        """The menu as the tabs are now (names and enabled states change with each run)."""
        self.menu_.clear()
        tabs = self.tabs
        for i in range(tabs.count()):
            act = self.menu_.addAction(tabs.tabText(i), lambda i=i: tabs.setCurrentIndex(i))
            act.setCheckable(True)
            act.setChecked(i == tabs.currentIndex())
            act.setEnabled(tabs.isTabEnabled(i))
            if not tabs.isTabEnabled(i):
                act.setToolTip(tabs.tabToolTip(i))


def make_tabs_reachable(tabs: QTabWidget) -> TabMenuButton:
    """Scroll, and a menu of every tab at the bar's right end."""
    bar = tabs.tabBar()
    bar.setElideMode(Qt.ElideNone)
    bar.setUsesScrollButtons(True)  # (not every style's default)
    button = TabMenuButton(tabs)
    tabs.setCornerWidget(button, Qt.TopRightCorner)
    return button


def visible_span(bar) -> tuple[int, int]:
    """The part of a tab bar that shows tabs, (left, right) in its pixels: its width less the
    scroll buttons Qt shows when the names do not fit (what a user can see and click)."""
    left, right = 0, bar.width()
    for b in bar.findChildren(QToolButton):
        if b.isVisible():
            g = b.geometry()
            if g.center().x() > bar.width() / 2:
                right = min(right, g.left())
            else:
                left = max(left, g.right() + 1)
    return left, right
