"""Hit-rate ladder (seed 000): each rung's HBM hit rate, and what it is worth in access time.

Left chart: the ladder itself, one bar per rung (rung 1 on top), labelled with its hit rate
and its increment over the previous rung; drag a bar sideways to change that rung's hit rate
(0.5-point steps). Right chart: each rung's mean access latency, stacked by the tier that
serves it (HBM, CXL, flash, in the ladder timeline's colours), labelled at the bar end. With
a simulated ladder, pale bars beside the modeled ones show the measured rates and latencies,
and the disagreement in points. Below: the rungs as an editable table.

Edits recompute at once with the ladder model's own `ladder_figures` (exact fractions; no
simulation) and are announced with `rungs_edited`, so the window can put them into the
scenario's parameters.
"""
from __future__ import annotations

import math
import weakref

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLineEdit,
    QSplitter,
    QStyledItemDelegate,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from kvviz.mechanisms.ladder import TIERS, ladder_figures
from kvviz.palette import span_color
from kvviz.result import Result

from ._common import NoteStack, caption_label, carries, info_label, kinds_carrying, stack_vertically, style_plot

# The ladder's timeline draws HBM time as `load`, CXL as `fetch` and flash as `stall`;
# the bars use the same colours so both views read alike.
TIER_SPAN_KIND = {"hbm": "load", "cxl": "fetch", "flash": "stall"}
TIER_LABEL = {"hbm": "HBM", "cxl": "CXL", "flash": "flash"}
STEP = 0.5      # drag resolution, in points
SIM_ALPHA = 95  # simulated bars: the tier colour, pale, with a solid outline

COLUMNS = ["rung", "label", "HBM hit %", "increment", "mean latency", "speedup vs first",
           "flash share of latency"]
SIM_COLUMNS = ["simulated hit %", "simulated latency", "sim − model"]
LABEL_COL, PCT_COL = 1, 2


def tier_colour(tier: str) -> str:
    return span_color(TIER_SPAN_KIND[tier])


def _num(v: float | None, fmt: str = "{:.4g}") -> str:
    return "–" if v is None else fmt.format(v)


def _pts(v: float | None) -> str:
    if v is None:
        return "–"
    s = f"{abs(v):.3g}"
    return f"+{s} pts" if v >= 0 else f"−{s} pts"


def _ns(v: float | None) -> str:
    return "–" if v is None else f"{v:,.1f} ns"


def _font(size: float, bold: bool = False) -> QFont:
    f = QFont()
    f.setPointSizeF(size)
    f.setBold(bold)
    return f


class RungAxis(pg.AxisItem):
    """Left axis naming each rung row: '1. baseline'."""

    def __init__(self):
        super().__init__("left")
        self.names: list[str] = []
        self.setStyle(tickLength=0, autoExpandTextSpace=False)

    def tickValues(self, minVal, maxVal, size):
        return [(1.0, [float(i) for i in range(len(self.names))])]

    def tickStrings(self, values, scale, spacing):
        fm = QFontMetrics(self.style.get("tickFont") or QFont())
        room = max(int((self.width() or 200) - 12), 40)
        return [fm.elidedText(self.names[int(v)], Qt.ElideRight, room) if 0 <= int(v) < len(self.names)
                else "" for v in values]

    def fit(self, chart_width: float) -> None:
        """As wide as the longest rung name, but never more than 30% of the charts' width
        (longer names are elided; the table below shows them in full)."""
        fm = QFontMetrics(self.style.get("tickFont") or QFont())
        want = max((fm.horizontalAdvance(n) for n in self.names), default=40) + 14
        w = int(min(want, max(0.3 * chart_width, 90)))
        if w != self.width():
            self.setWidth(w)
            self.picture = None
            self.update()


def _shorter_forms(text: str) -> list[str]:
    """A bar label, then shorter forms of it: 'simulated 43.77% (−36.2 pts)', '43.77% (−36.2 pts)',
    '43.77%'."""
    forms = [text]
    if text.startswith("simulated "):
        forms.append(text[len("simulated "):])
    short = forms[-1].split("  ")[0].split(" (")[0].strip()
    if short and short != forms[-1]:
        forms.append(short)
    return forms


def _clip_title(label: pg.LabelItem) -> None:
    """A title never forces the charts wider than the widget; it is clipped instead. pyqtgraph
    sets a label's minimum width to its text's on every layout pass, so a minimum set once was
    gone by the first resize, and the latency chart was cut off past the tab's edge."""
    update_min = type(label).updateMin
    ref = weakref.ref(label)  # no cycle through the Qt object (collecting one crashes PySide6)

    def narrow():
        lab = ref()
        if lab is not None:
            update_min(lab)
            lab.setMinimumWidth(10)
    label.updateMin = narrow
    label.setFlag(label.GraphicsItemFlag.ItemClipsChildrenToShape)  # never over its neighbour's
    narrow()


class _DragBox(pg.ViewBox):
    """The hit-rate chart's view box: a left-drag on a rung's row sets that rung's hit rate;
    there is no pan or zoom (the axis is always 0–100 %)."""

    def __init__(self, view: "LadderView"):
        super().__init__(enableMenu=False)
        # A weak reference: a view box that keeps its widget alive makes a reference cycle
        # through Qt objects, and collecting that cycle crashes PySide6.
        self._view = weakref.ref(view)
        self._rung: int | None = None
        self.setMouseEnabled(False, False)

    def mouseDragEvent(self, ev, axis=None):
        if ev.button() != Qt.LeftButton:
            ev.ignore()
            return
        if ev.isStart():
            p = self.mapSceneToView(ev.buttonDownScenePos())
            view = self._view()
            self._rung = view.rung_at(p.y()) if view is not None else None
        view = self._view()
        if self._rung is None or view is None:
            ev.ignore()
            return
        ev.accept()
        x = self.mapSceneToView(ev.scenePos()).x()
        view.drag_rung(self._rung, x, finish=ev.isFinish())
        if ev.isFinish():
            self._rung = None

    def wheelEvent(self, ev, axis=None):
        ev.ignore()


class _PctEdit(QLineEdit):
    """A hit-rate cell's editor: any text goes to the table, which refuses what is not 0–100
    with a message (a spin box limited to 100 dropped the last key: 150 became 15, silently).
    Up and Down step by STEP points."""

    def keyPressEvent(self, ev):  # noqa: N802 (Qt's name)
        step = {Qt.Key_Up: STEP, Qt.Key_Down: -STEP}.get(ev.key())
        try:
            value = float(self.text().strip().rstrip("%")) if step else None
        except ValueError:
            value = None
        if value is None:
            super().keyPressEvent(ev)
            return
        self.setText(f"{min(100.0, max(0.0, value + step)):g}")


class _PctDelegate(QStyledItemDelegate):
    """Hit-rate cells are edited as text (see _PctEdit)."""

    def createEditor(self, parent, option, index):
        box = _PctEdit(parent)
        box.setAlignment(Qt.AlignRight | Qt.AlignVCenter)
        return box

    def setEditorData(self, editor, index):
        editor.setText(str(index.data() or ""))
        editor.selectAll()

    def setModelData(self, editor, model, index):
        model.setData(index, editor.text().strip())


class _RungTable(QTableWidget):
    """The rung table: numeric columns fit their contents; the label column takes the width
    left over, but never less than LABEL_MIN px (the table scrolls sideways instead)."""

    LABEL_MIN = 170

    def fit_label_column(self) -> None:
        h = self.horizontalHeader()
        others = sum(h.sectionSize(c) for c in range(self.columnCount()) if c != LABEL_COL)
        room = self.viewport().width() - others
        want = max(self.sizeHintForColumn(LABEL_COL), h.sectionSizeFromContents(LABEL_COL).width()) + 16
        self.setColumnWidth(LABEL_COL, max(self.LABEL_MIN, room, min(want, self.LABEL_MIN)))

    def resizeEvent(self, ev):
        super().resizeEvent(ev)
        self.fit_label_column()


class LadderView(QWidget):
    """Ladder chart + editable rung table for `ladder` results."""

    rungs_edited = Signal(list)  # [{"label": str, "hbm_hit_pct": float | None}, …]

    def __init__(self, parent=None):
        super().__init__(parent)
        self.headline = caption_label()
        self.legend = caption_label()
        self.charts = pg.GraphicsLayoutWidget()
        self.charts.setBackground("w")
        self.axis = RungAxis()
        self.hit_plot = self.charts.addPlot(row=0, col=0, viewBox=_DragBox(self),
                                            axisItems={"left": self.axis})
        self.lat_plot = self.charts.addPlot(row=0, col=1)
        self.charts.ci.layout.setColumnStretchFactor(0, 5)
        self.charts.ci.layout.setColumnStretchFactor(1, 6)
        style_plot(self.hit_plot, bottom="HBM hit rate (%)", grid=(True, False))
        style_plot(self.lat_plot, bottom="mean access latency (ns)", grid=(True, False))
        self.axis.setPen("#555555")
        self.axis.setTextPen("#222222")
        self.axis.setTickFont(_font(9.5))
        self.hit_plot.setTitle("HBM hit rate per rung (drag a bar to change it)", color="#222222", size="10pt",
                               justify="left")
        self.lat_plot.setTitle("Mean latency of one access, by tier", color="#222222", size="10pt", justify="left")
        for pi in (self.hit_plot, self.lat_plot):
            _clip_title(pi.titleLabel)
        for pi in (self.hit_plot, self.lat_plot):
            pi.invertY(True)
        self.lat_plot.setYLink(self.hit_plot)
        self.lat_plot.hideAxis("left")
        self.lat_plot.setMouseEnabled(x=False, y=False)
        self.lat_plot.getViewBox().wheelEvent = lambda ev, axis=None: ev.ignore()
        self.charts.scene().sigMouseMoved.connect(self._on_move)
        self._hit_labels: list = []
        self._lat_labels: list = []
        for pi in (self.hit_plot, self.lat_plot):
            pi.getViewBox().sigResized.connect(self._on_chart_resized)

        self.table = _RungTable(0, len(COLUMNS))
        self.table.verticalHeader().setVisible(False)
        self.table.setAlternatingRowColors(True)
        self.table.setItemDelegateForColumn(PCT_COL, _PctDelegate(self.table))
        self.table.setEditTriggers(QAbstractItemView.DoubleClicked | QAbstractItemView.EditKeyPressed
                                   | QAbstractItemView.AnyKeyPressed | QAbstractItemView.SelectedClicked)
        self.table.itemChanged.connect(self._on_item_changed)
        self.status = info_label()

        lower = QWidget()
        ll = QVBoxLayout(lower)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.setSpacing(0)
        ll.addWidget(self.table, 1)
        ll.addWidget(self.status)
        split = QSplitter(Qt.Vertical)
        split.addWidget(self.charts)
        split.addWidget(lower)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        split.setChildrenCollapsible(False)
        self.splitter = split
        self.stack = NoteStack(stack_vertically(self.headline, self.legend, split, stretch=split))
        stack_vertically(self.stack, stretch=self.stack, into=self)

        self.result: Result | None = None
        self.labels: list[str] = []
        self.pcts: list[float | None] = []
        self.figures: list[dict] = []
        self.simulated: list[dict | None] | None = None
        self._tiers = None
        self._updating = False
        self._items: list = []
        self.hit_texts: list[pg.TextItem] = []
        self.latency_texts: list[pg.TextItem] = []

    # --- public API ---------------------------------------------------------------------

    def set_result(self, result: Result) -> None:
        self.result = result
        rungs = result.metrics.get("rungs") if carries(result, "ladder") else None
        if not rungs:
            self.stack.show_note(f"The ladder view applies to {kinds_carrying('ladder')} scenarios\n"
                                 "(a modeled or simulated HBM hit-rate ladder).")
            return
        self.stack.show_content()
        self._tiers = result.scenario.tiers
        self.labels = [str(r["label"]) for r in rungs]
        self.pcts = [None if r["hbm_hit_pct"] is None else float(r["hbm_hit_pct"]) for r in rungs]
        sims = [r.get("simulated") for r in rungs]
        self.simulated = sims if any(s is not None for s in sims) else None
        self._build_items()
        self._build_table()
        self._refresh()

    def rungs(self) -> list[dict]:
        """The rungs as edited: [{label, hbm_hit_pct}, …]."""
        return [{"label": lab, "hbm_hit_pct": p} for lab, p in zip(self.labels, self.pcts)]

    def set_hit_pct(self, i: int, pct: float | None, emit: bool = True) -> None:
        """Set rung i's modeled hit rate (clamped to 0–100) and recompute everything shown."""
        if pct is not None:
            pct = min(100.0, max(0.0, float(pct)))
        if pct == self.pcts[i]:
            return
        self.pcts[i] = pct
        self._refresh()
        if emit:
            self.rungs_edited.emit(self.rungs())

    def drag_rung(self, i: int, x: float, finish: bool = False) -> None:
        """A drag on rung i's row reached x (%): snap to 0.5 points; announce on release."""
        if not math.isfinite(x):
            return
        pct = min(100.0, max(0.0, round(x / STEP) * STEP))
        if pct != self.pcts[i]:
            self.pcts[i] = pct
            self._refresh()
        if finish:
            self.rungs_edited.emit(self.rungs())

    def rung_at(self, y: float) -> int | None:
        i = int(round(y))
        return i if 0 <= i < len(self.pcts) and abs(y - i) <= 0.45 else None

    # --- building -------------------------------------------------------------------------

    def _rows(self) -> tuple[np.ndarray, np.ndarray, float]:
        """y of the modeled and simulated bars of each rung, and bar height."""
        y = np.arange(len(self.pcts), dtype=float)
        if self.simulated is None:
            return y, y, 0.62
        return y - 0.19, y + 0.19, 0.34

    def _build_items(self) -> None:
        for pi in (self.hit_plot, self.lat_plot):
            pi.clear()
        self.hit_texts, self.latency_texts, self.sim_hit_texts, self.sim_latency_texts = [], [], [], []
        n = len(self.pcts)
        self.axis.names = [f"{i + 1}. {lab}" for i, lab in enumerate(self.labels)]
        self.axis.fit(self.charts.width())
        ym, ys, h = self._rows()
        hbm = tier_colour("hbm")
        zeros = np.zeros(n)
        self.hit_bars = pg.BarGraphItem(x0=zeros, y=ym, width=zeros, height=h,
                                        brush=hbm, pen=pg.mkPen("w", width=1))
        self.hit_plot.addItem(self.hit_bars)
        self.lat_bars = {}
        for t in TIERS:
            item = pg.BarGraphItem(x0=zeros, y=ym, width=zeros, height=h, brush=tier_colour(t),
                                   pen=pg.mkPen("w", width=1))
            self.lat_plot.addItem(item)
            self.lat_bars[t] = item
        if self.simulated is not None:
            c = QColor(hbm)
            pale = QColor(c.red(), c.green(), c.blue(), SIM_ALPHA)
            self.sim_hit_bars = pg.BarGraphItem(x0=zeros, y=ys, width=zeros, height=h,
                                                brush=QBrush(pale), pen=pg.mkPen(hbm, width=1.2))
            self.hit_plot.addItem(self.sim_hit_bars)
            self.sim_lat_bars = {}
            for t in TIERS:
                c = QColor(tier_colour(t))
                item = pg.BarGraphItem(x0=zeros, y=ys, width=zeros, height=h,
                                       brush=QBrush(QColor(c.red(), c.green(), c.blue(), SIM_ALPHA)),
                                       pen=pg.mkPen(tier_colour(t), width=1.2))
                self.lat_plot.addItem(item)
                self.sim_lat_bars[t] = item
        for _ in range(n):
            for plot, store, sim in ((self.hit_plot, self.hit_texts, False),
                                     (self.lat_plot, self.latency_texts, False),
                                     (self.hit_plot, self.sim_hit_texts, True),
                                     (self.lat_plot, self.sim_latency_texts, True)):
                if sim and self.simulated is None:
                    continue
                t = pg.TextItem("", color="#222222", anchor=(0, 0.5))
                t.setFont(_font(9, bold=not sim))
                t.setZValue(10)
                plot.addItem(t)
                store.append(t)
        # a little room either side so that the 0 and 100 tick labels are not dropped
        self.hit_plot.setXRange(-2, 106, padding=0)
        self.hit_plot.setYRange(-0.55, n - 0.45, padding=0)

    def _build_table(self) -> None:
        cols = COLUMNS + (SIM_COLUMNS if self.simulated is not None else [])
        self._updating = True
        try:
            self.table.clear()
            self.table.setColumnCount(len(cols))
            self.table.setHorizontalHeaderLabels(cols)
            self.table.setRowCount(len(self.pcts))
            for r in range(len(self.pcts)):
                for c in range(len(cols)):
                    item = QTableWidgetItem("")
                    if c not in (LABEL_COL, PCT_COL):
                        item.setFlags(item.flags() & ~Qt.ItemIsEditable)
                        item.setForeground(QColor("#333333"))
                    if c != LABEL_COL:
                        item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                    self.table.setItem(r, c, item)
            h = self.table.horizontalHeader()
            for c in range(len(cols)):
                h.setSectionResizeMode(c, QHeaderView.ResizeToContents)
            h.setSectionResizeMode(LABEL_COL, QHeaderView.Interactive)
            self.table.setToolTip("Double-click a label or a hit rate to edit it")
            # show every rung (up to 6 without scrolling): the table must not be squeezed away
            rows = min(len(self.pcts), 6)
            self.table.setMinimumHeight(h.sizeHint().height() + rows * self.table.verticalHeader()
                                        .defaultSectionSize() + 2 * self.table.frameWidth() + 2)
        finally:
            self._updating = False

    # --- recomputing ------------------------------------------------------------------------

    def _refresh(self) -> None:
        """Recompute every figure from the current rungs and update bars, labels and table."""
        self.figures = ladder_figures(self.pcts, self._tiers)
        figs, n = self.figures, len(self.pcts)
        ym, ys, h = self._rows()
        pct = np.array([p or 0.0 for p in self.pcts])
        self.hit_bars.setOpts(x0=np.zeros(n), y=ym, width=pct, height=h)
        left = np.zeros(n)
        for t in TIERS:
            w = np.array([f["contrib_ns"][t] if f["contrib_ns"] else 0.0 for f in figs])
            self.lat_bars[t].setOpts(x0=left.copy(), y=ym, width=w, height=h)
            left += w
        if self.simulated is not None:
            sp = np.array([s["hbm_hit_pct"] if s else 0.0 for s in self.simulated])
            self.sim_hit_bars.setOpts(x0=np.zeros(n), y=ys, width=sp, height=h)
            sl = np.zeros(n)
            for t in TIERS:
                w = np.array([s["contrib_ns"][t] if s and s.get("contrib_ns") else 0.0
                              for s in self.simulated])
                self.sim_lat_bars[t].setOpts(x0=sl.copy(), y=ys, width=w, height=h)
                sl += w

        # (text item, text, bar end, y, inside colour) per chart; placed by _layout_labels
        hit, lat = [], []
        for i, f in enumerate(figs):
            p = self.pcts[i]
            inc = f["increment_pts"]
            text = "–" if p is None else f"{p:.4g}%" + (f"   {_pts(inc)}" if inc is not None else "")
            hit.append((self.hit_texts[i], text, p or 0.0, ym[i], "#ffffff"))
            m, sp_ = f["mean_latency_ns"], f["speedup_vs_first"]
            lat.append((self.latency_texts[i], "–" if m is None else
                        _ns(m) + (f"  ({sp_:.2f}×)" if sp_ is not None else ""), m or 0.0, ym[i], None))
            if self.simulated is not None:
                s = self.simulated[i]
                if s is None:
                    hit.append((self.sim_hit_texts[i], "", 0.0, ys[i], "#0b4f3c"))
                    lat.append((self.sim_latency_texts[i], "", 0.0, ys[i], None))
                    continue
                gap = s["hbm_hit_pct"] - p if p is not None else None
                hit.append((self.sim_hit_texts[i], f"simulated {s['hbm_hit_pct']:.4g}%"
                            + (f"  ({_pts(gap)})" if gap is not None else ""),
                            s["hbm_hit_pct"], ys[i], "#0b4f3c"))
                lat.append((self.sim_latency_texts[i], f"simulated {_ns(s['mean_latency_ns'])}",
                            s["mean_latency_ns"] or 0.0, ys[i], None))
        self._hit_labels, self._lat_labels = hit, lat
        self._layout_labels()
        self._update_headline()
        self._fill_table()

    def _on_chart_resized(self, *_) -> None:
        self._layout_labels()

    def _layout_labels(self) -> None:
        """Place bar labels in pixels: on the hit-rate chart inside a bar's end when it fits
        there, else just after it; on the latency chart after the bar's end, with the x range
        made wide enough that the longest label is not clipped. Redone when a chart resizes."""
        if not self._lat_labels:
            return
        self.axis.fit(self.charts.width())
        # bar labels no taller than their bar: smaller type in a small chart, and simulated
        # labels left out when even that does not fit (the table has every number)
        _, _, h = self._rows()
        vb_h = self.hit_plot.getViewBox().height()
        (y0, y1) = self.hit_plot.getViewBox().viewRange()[1]
        bar_px = h * vb_h / max(abs(y1 - y0), 1e-9) if vb_h > 40 else 30.0
        size = 9.0
        while size > 7.0 and QFontMetrics(_font(size)).height() > bar_px + 2:
            size -= 0.5
        fits = QFontMetrics(_font(size)).height() <= bar_px + 4
        for t in self.hit_texts + self.latency_texts + self.sim_hit_texts + self.sim_latency_texts:
            f = t.textItem.font()
            if f.pointSizeF() != size:
                f.setPointSizeF(size)
                t.setFont(f)
        for t in self.sim_hit_texts + self.sim_latency_texts:
            t.setVisible(fits)
        fm = QFontMetrics(self.latency_texts[0].textItem.font())
        pad = 8.0
        vb = self.lat_plot.getViewBox()
        wpx = vb.width()
        ends = [end for _, _, end, _, _ in self._lat_labels]
        if wpx > 80:
            need = [end / max(1.0 - 1.02 * (fm.horizontalAdvance(text) + 2 * pad) / wpx, 0.25)
                    for item, text, end, _, _ in self._lat_labels if item.isVisible()]
            xmax = max(need + [max(ends) * 1.05, 1.0])
        else:  # not laid out yet: a guess, redone on the first resize
            xmax = max(max(ends) * 1.35, 1.0)
        self.lat_plot.setXRange(-0.02 * xmax, xmax, padding=0)
        upx = 1.02 * xmax / wpx if wpx > 80 else xmax / 600
        for item, text, end, y, _ in self._lat_labels:
            item.setText(text)
            item.setColor("#222222")
            item.setAnchor((0, 0.5))
            item.setPos(end + pad / 2 * upx, y)
        hw = self.hit_plot.getViewBox().width()
        (lo, hi), _ = self.hit_plot.getViewBox().viewRange()
        upx = (hi - lo) / hw if hw > 80 else 100 / 400
        for item, full, end, y, inside_colour in self._hit_labels:
            fm = QFontMetrics(item.textItem.font())
            # the full text where it fits inside the bar or after it, else shorter forms: a
            # label fitting neither ran left over the axis
            for text in _shorter_forms(full):
                tw = fm.horizontalAdvance(text) * upx
                fits_in, fits_after = end - pad * upx >= tw + pad * upx, end + tw + pad * upx <= hi
                if fits_in or fits_after:
                    break
            inside = fits_in or not fits_after
            item.setText(text)
            item.setColor(inside_colour if inside else "#222222")
            item.setAnchor((1, 0.5) if inside else (0, 0.5))
            item.setPos(end - pad / 2 * upx if inside else end + pad / 2 * upx, y)

    def _update_headline(self) -> None:
        figs = self.figures
        valid = [i for i, f in enumerate(figs) if f["mean_latency_ns"] is not None]
        tiers = self._tiers
        swatches = "&nbsp;&nbsp;&nbsp;".join(
            f'<span style="color:{tier_colour(t)}; font-size:13pt">■</span>&nbsp;{TIER_LABEL[t]} '
            f'{getattr(tiers, t + "_ns"):,} ns' for t in TIERS)
        share = tiers.flash_share_of_misses
        sim = ("&nbsp;&nbsp;·&nbsp;&nbsp;solid = modeled, pale = simulated "
               "(attention mass on cache-resident positions at query arrival)"
               if self.simulated is not None else "")
        self.legend.setText(f'<span style="color:#333">{swatches}&nbsp;&nbsp;·&nbsp;&nbsp;'
                            f'{share:.3g} of misses fall through to flash{sim}</span>')
        if not valid:
            self.headline.setText("<b>No rung has a modeled hit rate.</b>")
            return
        i = valid[-1]
        f = figs[i]
        first = figs[valid[0]]["mean_latency_ns"]
        speed = (f"&nbsp;&nbsp;·&nbsp;&nbsp;rung {valid[0] + 1} → {i + 1}: {first:,.1f} → "
                 f"{f['mean_latency_ns']:,.1f} ns ({first / f['mean_latency_ns']:.2f}× faster)"
                 if len(valid) > 1 and f["mean_latency_ns"] else "")
        flash_ns = f["contrib_ns"]["flash"]
        share_lat = f["flash_share_of_latency"]
        self.headline.setText(
            f'<span style="font-size:12pt">flash tail: <b>{f["access_pct"]["flash"]:.3g}% of accesses, '
            f'{100 * (share_lat or 0):.3g}% of mean latency</b></span>'
            f'<span style="color:#333">&nbsp;&nbsp;at rung {i + 1} ({self.pcts[i]:.4g}% HBM hits), flash is '
            f'{flash_ns:,.1f} of its {f["mean_latency_ns"]:,.1f} ns{speed}</span>')

    def _fill_table(self) -> None:
        self._updating = True
        try:
            for r, f in enumerate(self.figures):
                p = self.pcts[r]
                share = f["flash_share_of_latency"]
                cells = [str(r + 1), self.labels[r], "" if p is None else f"{p:g}",
                         _pts(f["increment_pts"]), _ns(f["mean_latency_ns"]),
                         _num(f["speedup_vs_first"], "{:.2f}×"),
                         "–" if share is None else f"{100 * share:.1f}%"]
                if self.simulated is not None:
                    s = self.simulated[r]
                    cells += ["–", "–", "–"] if s is None else [
                        f"{s['hbm_hit_pct']:.4g}", _ns(s["mean_latency_ns"]),
                        _pts(s["hbm_hit_pct"] - p) if p is not None else "–"]
                for c, text in enumerate(cells):
                    item = self.table.item(r, c)
                    if item is not None and item.text() != text:
                        item.setText(text)
        finally:
            self._updating = False
        self.table.fit_label_column()

    # --- events -------------------------------------------------------------------------------

    def _on_item_changed(self, item: QTableWidgetItem) -> None:
        if self._updating:
            return
        r, c = item.row(), item.column()
        if c == LABEL_COL:
            text = item.text().strip()
            if not text:
                self.status.setText(f"rung {r + 1}: a label cannot be empty")
                self._fill_table()
                return
            if text != self.labels[r]:
                self.labels[r] = text
                self.axis.names[r] = f"{r + 1}. {text}"
                self.axis.picture = None
                self.axis.update()
                self.status.setText(" ")
                self.rungs_edited.emit(self.rungs())
        elif c == PCT_COL:
            raw = item.text().strip().rstrip("%").strip()
            try:
                pct = None if raw == "" else float(raw)
                if pct is not None and not (0 <= pct <= 100 and math.isfinite(pct)):
                    raise ValueError
            except ValueError:
                self.status.setText(f"rung {r + 1}: HBM hit % must be a number from 0 to 100 (got {raw!r})")
                self._fill_table()
                return
            self.status.setText(" ")
            if pct == self.pcts[r]:
                self._fill_table()
                return
            self.set_hit_pct(r, pct)

    def _on_move(self, pos) -> None:
        vb = self.hit_plot.getViewBox()
        over = None
        if vb.sceneBoundingRect().contains(pos):
            over = self.rung_at(vb.mapSceneToView(pos).y())
        self.charts.setCursor(Qt.SizeHorCursor if over is not None else Qt.ArrowCursor)
