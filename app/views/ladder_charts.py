"""The ladder view's charts: each rung's HBM hit rate (drag a bar to change it) and its mean
access latency stacked by tier, side by side and sharing the rung rows."""
from __future__ import annotations

import weakref

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetrics

from kvviz.mechanisms.ladder import TIERS
from kvviz.palette import tier_color

from ._common import hover_tip, style_plot
from .rung_table import fmt_ns, fmt_pts

TIER_LABEL = {"hbm": "HBM", "cxl": "CXL", "flash": "flash"}
SIM_ALPHA = 95  # simulated bars: the tier colour, pale, with a solid outline


def tier_colour(tier: str) -> str:
    """A tier's colour as every view gives it (kvviz.palette; flash is the SSD tier): the bars
    used the span colours of the ladder's timeline (HBM green, flash red), so HBM read as DRAM
    beside the Tiers and Counters views."""
    return tier_color(tier)


def sim_text_colour() -> str:
    """Text on a pale simulated HBM bar: the HBM colour, darkened."""
    return QColor(tier_color("hbm")).darker(230).name()


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

    def __init__(self, view):  # the LadderView: a drag calls its rung_at and drag_rung
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


class LadderCharts:
    """The two charts of LadderView, mixed into it: made once, rebuilt for a new set of rungs,
    redrawn on every change, their bar labels placed again on every resize. They read the
    view's rungs (`labels`, `pcts`, `simulated`, `figures`) and a drag calls its
    `rung_at` and `drag_rung`."""

    def _make_charts(self) -> None:
        """The two plots side by side, sharing the rung rows; called once, by the view's __init__."""
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

    def _draw_charts(self) -> None:
        """Set the bars and their labels from the current rungs and figures."""
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
            text = "–" if p is None else f"{p:.4g}%" + (f"   {fmt_pts(inc)}" if inc is not None else "")
            hit.append((self.hit_texts[i], text, p or 0.0, ym[i], "#ffffff"))
            m, sp_ = f["mean_latency_ns"], f["speedup_vs_first"]
            lat.append((self.latency_texts[i], "–" if m is None else
                        fmt_ns(m) + (f"  ({sp_:.2f}×)" if sp_ is not None else ""), m or 0.0, ym[i], None))
            if self.simulated is not None:
                s = self.simulated[i]
                if s is None:
                    hit.append((self.sim_hit_texts[i], "", 0.0, ys[i], sim_text_colour()))
                    lat.append((self.sim_latency_texts[i], "", 0.0, ys[i], None))
                    continue
                gap = s["hbm_hit_pct"] - p if p is not None else None
                hit.append((self.sim_hit_texts[i], f"simulated {s['hbm_hit_pct']:.4g}%"
                            + (f"  ({fmt_pts(gap)})" if gap is not None else ""),
                            s["hbm_hit_pct"], ys[i], sim_text_colour()))
                lat.append((self.sim_latency_texts[i], f"simulated {fmt_ns(s['mean_latency_ns'])}",
                            s["mean_latency_ns"] or 0.0, ys[i], None))
        self._hit_labels, self._lat_labels = hit, lat
        self._layout_labels()

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

    def _on_move(self, pos) -> None:
        vb = self.hit_plot.getViewBox()
        over = None
        if vb.sceneBoundingRect().contains(pos):
            over = self.rung_at(vb.mapSceneToView(pos).y())
        self.charts.setCursor(Qt.SizeHorCursor if over is not None else Qt.ArrowCursor)
        lat = self.lat_plot.getViewBox()
        if over is None and lat.sceneBoundingRect().contains(pos):
            over = self.rung_at(lat.mapSceneToView(pos).y())
        text = None if over is None or over >= len(self.figures) else self.rung_text(over)
        if text:
            self.status.setText(text)
        hover_tip(self.charts, pos, text)

    def rung_text(self, i: int) -> str:
        """The hover line of rung i: its hit rate, where its accesses go, and what they cost."""
        f, p = self.figures[i], self.pcts[i]
        head = f"rung {i + 1}. {self.labels[i]}"
        if p is None or f["mean_latency_ns"] is None:
            return f"{head} · no modeled hit rate"
        parts = [f"{head} · HBM hit rate {p:.4g}%" + (f" ({fmt_pts(f['increment_pts'])})"
                                                     if f["increment_pts"] is not None else ""),
                 "accesses " + ", ".join(f"{TIER_LABEL[t]} {f['access_pct'][t]:.3g}%" for t in TIERS),
                 f"mean {fmt_ns(f['mean_latency_ns'])} = "
                 + " + ".join(f"{TIER_LABEL[t]} {f['contrib_ns'][t]:,.1f}" for t in TIERS)]
        if f["speedup_vs_first"] is not None and i > 0:
            parts.append(f"{f['speedup_vs_first']:.2f}× faster than rung 1")
        s = self.simulated[i] if self.simulated is not None else None
        if s is not None:
            parts.append(f"simulated {s['hbm_hit_pct']:.4g}%, {fmt_ns(s['mean_latency_ns'])}")
        return " · ".join(parts)
