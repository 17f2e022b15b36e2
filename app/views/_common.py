"""Small pieces every view shares: light plot styling, a centred "nothing to show" note,
linking a view's x axis to another plot (the timeline's), and asking a run's mechanism record
what the run carries beyond its timeline."""
from __future__ import annotations

import weakref
from typing import Callable

import pyqtgraph as pg
from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QCursor, QFont
from PySide6.QtWidgets import QLabel, QSizePolicy, QStackedWidget, QToolTip, QVBoxLayout, QWidget

from kvviz.mechanisms import mechanisms

AXIS_PEN = "#555555"
TEXT = "#222222"
MUTED = "#555555"
LABEL_STYLE = {"color": TEXT, "font-size": "10pt"}

# Colour-blind-safe colours (Okabe-Ito, then Paul Tol's) for lines that stand for no tier: none
# is a tier's colour or near one (resources/palette.toml [tiers]), so a "batch size" line never
# reads as a second HBM line, nor "staging rows" beside CXL's teal as a third CXL one.
LINE_COLOURS = ("#D55E00", "#CC79A7", "#000000", "#999933", "#882255")


def carries(result, analysis: str) -> bool:
    """Whether `result`'s mechanism record lists `analysis` ("rope_bound", "ladder", "policies"):
    views and tabs ask the record, never a kind's name."""
    record = mechanisms().get(getattr(result.scenario, "kind", None))
    return record is not None and analysis in record.analyses


def kinds_carrying(analysis: str) -> str:
    """The kinds whose runs carry `analysis`, for a note: "rope_window and ladder"."""
    kinds = [k for k, m in mechanisms().items() if analysis in m.analyses]
    return ", ".join(kinds[:-1]) + " and " + kinds[-1] if len(kinds) > 1 else "".join(kinds)


def tick_font() -> QFont:
    f = QFont()
    f.setPointSizeF(9)
    return f


def no_si_prefix(axis: pg.AxisItem) -> None:
    """No "(x0.001)" on a zoomed axis: the unit is in the label. pyqtgraph works out one last
    scale as it disables the prefix, from the range at that moment, and keeps it: after a
    0.25-ms view the timeline's next run read 110 for 0.11 ms."""
    axis.enableAutoSIPrefix(False)
    axis.autoSIPrefixScale, axis.labelUnitPrefix = 1.0, ""
    axis.picture = None


def style_plot(pi: pg.PlotItem, left: str | None = None, bottom: str | None = None,
               grid: tuple[bool, bool] = (True, True)) -> None:
    """White-background look shared by all views: dark axes, readable ticks, faint grid."""
    for name in ("left", "bottom"):
        ax = pi.getAxis(name)
        ax.setPen(AXIS_PEN)
        ax.setTextPen(TEXT)
        ax.setTickFont(tick_font())
        no_si_prefix(ax)
    if left is not None:
        pi.setLabel("left", left, **LABEL_STYLE)
    if bottom is not None:
        pi.setLabel("bottom", bottom, **LABEL_STYLE)
    pi.showGrid(x=grid[0], y=grid[1], alpha=0.12)
    pi.setMenuEnabled(False)
    pi.hideButtons()


def view_box_of(target) -> pg.ViewBox:
    """The ViewBox behind a PlotWidget, PlotItem or ViewBox."""
    if isinstance(target, pg.ViewBox):
        return target
    if isinstance(target, pg.PlotWidget):
        return target.getPlotItem().getViewBox()
    if isinstance(target, pg.PlotItem):
        return target.getViewBox()
    raise TypeError(f"cannot link to {type(target).__name__}: expected a PlotWidget, PlotItem or ViewBox")


def link_x_ranges(leader: pg.ViewBox, follower: pg.ViewBox) -> Callable[[], None]:
    """Keep two view boxes' x ranges equal, both ways; the follower takes the leader's range
    now. Returns a function that undoes the link.

    pyqtgraph's own setXLink lines views up in screen pixels, so plots of different widths or
    positions (a dock beside the timeline, a hidden tab) would get different ranges; here the
    ranges themselves are shared, wherever the plots are. Weak references: the link keeps
    neither plot alive."""
    busy = [False]
    refs = (weakref.ref(leader), weakref.ref(follower))

    def copier(src: int):
        def copy(*_):
            a, b = refs[src](), refs[1 - src]()
            if busy[0] or a is None or b is None:
                return
            try:
                lo, hi = a.viewRange()[0]
                if list(b.viewRange()[0]) != [lo, hi]:
                    busy[0] = True
                    b.setXRange(lo, hi, padding=0)
            except RuntimeError:  # one side's Qt object is gone
                pass
            finally:
                busy[0] = False
        return copy

    forward, backward = copier(0), copier(1)
    leader.sigXRangeChanged.connect(forward)
    follower.sigXRangeChanged.connect(backward)
    forward()

    def unlink():
        for box, slot in ((refs[0](), forward), (refs[1](), backward)):
            if box is not None:
                try:
                    box.sigXRangeChanged.disconnect(slot)
                except (RuntimeError, TypeError):
                    pass
    return unlink


def stack_vertically(*widgets: QWidget, stretch: QWidget, into: QWidget | None = None) -> QWidget:
    """Lay `widgets` out top to bottom with no margins; `stretch` takes the spare height.
    Fills `into` when given, else a new plain widget."""
    host = into if into is not None else QWidget()
    lay = QVBoxLayout(host)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.setSpacing(0)
    for w in widgets:
        lay.addWidget(w, 1 if w is stretch else 0)
    return host


def note_label() -> QLabel:
    lab = QLabel()
    lab.setAlignment(Qt.AlignCenter)
    lab.setWordWrap(True)
    lab.setStyleSheet("color:#555; font-size:11pt; background:white; padding:24px;")
    return lab


class NoteStack(QStackedWidget):
    """Shows its content, or — when a run has nothing for this view — a short centred note."""

    def __init__(self, content: QWidget, parent=None):
        super().__init__(parent)
        self.note = note_label()
        self.addWidget(content)
        self.addWidget(self.note)
        self.setStyleSheet("background:white;")

    def show_note(self, text: str) -> None:
        self.note.setText(text)
        self.setCurrentWidget(self.note)

    def show_content(self) -> None:
        self.setCurrentIndex(0)

    @property
    def showing_note(self) -> bool:
        return self.currentWidget() is self.note


def legend_key(colour: str, text: str, mark: str = "■") -> str:
    """A caption's key: `mark` in `colour`, then `text`, joined by non-breaking spaces (the
    caller escapes `text`), so a wrapping caption never leaves a swatch at the end of one line and
    its name at the start of the next (seen at 1366 px: "… · ■" / "HBM ■ CXL …")."""
    return f"<span style='color:{colour}'>{mark}</span>&nbsp;" + text.replace(" ", "&nbsp;")


def caption_label() -> QLabel:
    lab = QLabel(" ")
    lab.setTextFormat(Qt.RichText)
    lab.setWordWrap(True)
    lab.setStyleSheet("color:#222; padding:4px 8px; background:white;")
    return lab


class ElidedLabel(QLabel):
    """One line of text that never asks its layout for more width: too long, it is elided at
    the right and the whole text is its tooltip. A plain QLabel's minimum width is its text's,
    so a long hover line or status message widened the centre and squeezed the docks."""

    def __init__(self, text: str = " ", parent=None):
        super().__init__(parent)
        self._full = ""
        self.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt's name)
        self._full = text
        self._elide()

    def text(self) -> str:
        return self._full

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        return QSize(0, super().minimumSizeHint().height())

    def sizeHint(self) -> QSize:  # noqa: N802
        return QSize(0, super().sizeHint().height())

    def resizeEvent(self, ev) -> None:  # noqa: N802
        super().resizeEvent(ev)
        self._elide()

    def _elide(self) -> None:
        room = max(self.contentsRect().width() - 2, 0)
        shown = self.fontMetrics().elidedText(self._full, Qt.ElideRight, room)
        self.setToolTip(self._full if shown != self._full else "")
        super().setText(shown)


SCREEN_ONLY = "screenOnly"  # a widget property: left out of "Current View" figures


def info_label() -> QLabel:
    """A view's hover or status line: on screen only, never in an exported figure."""
    lab = ElidedLabel(" ")
    lab.setStyleSheet("color:#333; padding:2px 8px; background:white;")
    lab.setProperty(SCREEN_ONLY, True)
    return lab


def hover_tip(plot: pg.PlotWidget, scene_pos, text: str | None) -> None:
    """Show `text` as a tooltip at the mouse over `plot`, or hide it (None): the detail follows
    the mouse, and the view's line under the plot keeps it."""
    if text:
        QToolTip.showText(plot.mapToGlobal(plot.mapFromScene(scene_pos)), text, plot)
    else:
        QToolTip.hideText()


def show_hover(plot: pg.PlotWidget, info: QLabel, scene_pos, text: str | None) -> None:
    """A chart's hover: `text` on its line under the plot (kept when the mouse leaves the data)
    and as a tooltip at the mouse (hidden there)."""
    if text:
        info.setText(text)
    hover_tip(plot, scene_pos, text)


def rehover(plot: pg.PlotWidget, on_move) -> None:
    """The view moved under a still mouse (Home, a wheel step): `on_move` what is under it now,
    or hide the tooltip. The hover line and tooltip kept naming what had been there."""
    at = plot.mapFromGlobal(QCursor.pos())
    if not plot.rect().contains(at):
        return  # elsewhere: Qt hid this plot's tooltip as the mouse left; another's stays
    scene = plot.mapToScene(at)
    if hover_point(plot, scene) is not None:
        on_move(scene)
    else:
        QToolTip.hideText()


def hover_point(plot: pg.PlotWidget, scene_pos):
    """The data point under the mouse in `plot`, or None when the mouse is outside its view."""
    vb = plot.getPlotItem().getViewBox()
    if not vb.sceneBoundingRect().contains(scene_pos):
        return None
    return vb.mapSceneToView(scene_pos)


def nearest_point(plot: pg.PlotWidget, scene_pos, series: dict, max_px: float = 12.0):
    """(name, index) of the drawn point nearest the mouse within `max_px` screen pixels, or
    None. `series` maps a name to (xs, ys) in the plot's view coordinates (log10 on a log axis)."""
    from PySide6.QtCore import QPointF
    vb = plot.getPlotItem().getViewBox()
    best, best_d = None, max_px
    for name, (xs, ys) in series.items():
        for i, (x, y) in enumerate(zip(xs, ys)):
            if not (x == x and y == y):  # NaN: a point not run yet
                continue
            at = vb.mapViewToScene(QPointF(float(x), float(y)))
            d = ((at.x() - scene_pos.x()) ** 2 + (at.y() - scene_pos.y()) ** 2) ** 0.5
            if d <= best_d:
                best, best_d = (name, i), d
    return best
