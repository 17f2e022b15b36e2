"""The Cluster view's Routers page: the scenario run once per router (in the background, with
progress and Cancel; the shown run's router is not run again), each router's TTFT as a box
(25th–75th percentile, median line, whiskers 10th–90th), its mean (◆) beside the paper's (✕,
from the scenario's claims on mean_ttft_ms), on a log axis; a table row per router beneath."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QPainter, QPicture
from PySide6.QtWidgets import QHBoxLayout, QSizePolicy, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from .. import cluster_runs as cr
from ..background import JobControls
from ._common import hover_point, info_label, show_hover, style_plot

PAPER = "#C0392B"
OURS = "#0072B2"
BOX = "#9ecae1"
COLUMNS = ["router", "mean TTFT (ms)", "paper mean (ms)", "p50", "p90", "p99", "token hit rate", "served",
           "rejected"]


class Boxes(pg.GraphicsObject):
    """Box plots as one cached picture (one item, not one per box); x = router index, y = log10 ms."""

    def __init__(self, stats: list[tuple[int, tuple[float, float, float, float, float]]]):
        super().__init__()
        self.pic = QPicture()
        p = QPainter(self.pic)
        p.setPen(pg.mkPen("#2b4a6b", width=0))
        w = 0.28
        for x, (p10, p25, p50, p75, p90) in stats:
            p.setBrush(pg.mkBrush(BOX))
            p.drawRect(QRectF(x - w, p25, 2 * w, p75 - p25))
            p.drawLine(pg.QtCore.QLineF(x - w, p50, x + w, p50))
            p.drawLine(pg.QtCore.QLineF(x, p10, x, p25))
            p.drawLine(pg.QtCore.QLineF(x, p75, x, p90))
            p.drawLine(pg.QtCore.QLineF(x - w / 2, p10, x + w / 2, p10))
            p.drawLine(pg.QtCore.QLineF(x - w / 2, p90, x + w / 2, p90))
        p.end()
        self._rect = QRectF(self.pic.boundingRect())

    def paint(self, p, *args):
        self.pic.play(p)

    def boundingRect(self):  # noqa: N802 (Qt's name)
        return self._rect


def log_ticks(lo: float, hi: float) -> list[list[tuple[float, str]]]:
    """Ticks for a log10 axis of milliseconds: 1-2-5 steps named in ms or s, grid lines at each."""
    major = []
    for e in range(int(np.floor(lo)), int(np.ceil(hi)) + 1):
        for m in (1, 2, 5):
            v = m * 10.0 ** e
            if lo <= np.log10(v) <= hi:
                major.append((float(np.log10(v)), f"{v / 1e3:g} s" if v >= 1e3 else f"{v:g} ms"))
    return [major, []]


class RoutersView(QWidget):
    finished = Signal(object)  # the summaries, once every router has run
    arrived = Signal(object)   # one router's summary (emitted in the job's thread, drawn in the GUI's)
    stopped = Signal()         # the comparison ended: done, failed or cancelled

    def __init__(self, parent=None):
        super().__init__(parent)
        self.memory_limit = lambda: None
        self.jobs = JobControls(self, "Compare routers", "routers")
        self.jobs.run_btn.setToolTip("Run the scenario once per router in the background (the shown run's router "
                                     "is not run again)")
        self.jobs.run_btn.clicked.connect(self.run)
        self.jobs.stopped.connect(self.stopped)
        self.arrived.connect(self._add)
        self.status = self.jobs.status
        bar = QHBoxLayout()
        bar.setContentsMargins(8, 4, 8, 0)
        for w in (self.jobs.run_btn, self.jobs.cancel_btn):
            bar.addWidget(w)
        bar.addWidget(self.jobs.progress, 1)
        self.plot = pg.PlotWidget(background="w")
        # its title's width must never widen the tab (it pushed the last router off the page)
        self.plot.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Expanding)
        pi = self.plot.getPlotItem()
        style_plot(pi, left="TTFT (log scale)", grid=(False, True))
        pi.setMouseEnabled(x=False, y=True)
        pi.getAxis("bottom").setHeight(58)  # three lines of a router's name
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.setMaximumHeight(200)
        self.info = info_label()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        lay.addLayout(bar)
        lay.addWidget(self.status)
        lay.addWidget(self.plot, 1)
        lay.addWidget(self.info)
        lay.addWidget(self.table)
        self.plot.scene().sigMouseMoved.connect(self._hover)
        self.data: dict | None = None
        self.source = "<scenario>"
        self.names: tuple[str, ...] = ()
        self.paper: dict[str, float] = {}
        self.shown: dict | None = None  # the shown run's summary
        self.summaries: dict[str, dict] = {}
        self.clear()

    @property
    def job(self):
        return self.jobs.job

    def set_scenario(self, data: dict, source: str, result, new: bool = False) -> None:
        """The scenario as edited now and its run: what a comparison will run. An edit or a new
        file makes the last comparison stale: it is cleared (a running one cancelled)."""
        self.data, self.source = data, source
        self.names = cr.policies(type(result.scenario))
        self.paper = cr.paper_means(result.scenario)
        self.shown = cr.summary(result.metrics.get("routing_policy", ""), result)
        self.clear()
        self.jobs.run_btn.setEnabled(self.job is None)

    def clear(self) -> None:
        if self.job is not None:
            self.jobs.cancel()
        self.summaries = {}
        self._draw()
        self.status.setText("Compare routers: the scenario once per router, TTFT side by side"
                            + (" with the paper's means (✕)" if self.paper else ""))

    def not_applicable(self, why: str) -> None:
        self.data = None
        self.clear()
        self.jobs.run_btn.setEnabled(False)
        self.status.setText(why)

    def run(self) -> None:
        if self.data is None or self.job is not None:
            return
        data, source, names, have = self.data, self.source, self.names, self.shown
        limit = self.memory_limit()
        self.summaries = {}
        self._draw()
        self.jobs.start(lambda progress: cr.compare_routers(data, source, names, progress, self.arrived.emit, have=have,
                                                            max_memory_gb=limit),
                        "router comparison", self._done, status=f"running {len(names)} routers…")

    def cancel(self) -> None:
        self.jobs.cancel()

    def shutdown(self) -> None:
        self.jobs.shutdown()

    def _add(self, s: dict) -> None:
        if self.job is not None:  # not one from a comparison cleared since
            self.summaries[s["policy"]] = s
            self._draw()

    def _done(self, rows: list[dict]) -> None:
        self.summaries = {s["policy"]: s for s in rows}
        self._draw()
        best = min(rows, key=lambda s: s["mean_ttft_ms"] if s["mean_ttft_ms"] is not None else np.inf)
        self.status.setText(f"{len(rows)} routers run · lowest mean TTFT: {best['policy']} "
                            f"({best['mean_ttft_ms']:,.0f} ms)")
        self.finished.emit(rows)

    # --- drawing ----------------------------------------------------------------------------
    def _draw(self) -> None:
        pi = self.plot.getPlotItem()
        pi.clear()
        names = self.names
        ax = pi.getAxis("bottom")
        # a name a line per word: seven routers' names side by side overlapped at 1366 px
        ax.setTicks([[(i, n.replace("_", "\n")) for i, n in enumerate(names)], []])
        stats, means, paper = [], [], []
        for i, n in enumerate(names):
            s = self.summaries.get(n)
            if s is not None and s["ttft_ms"] is not None and len(s["ttft_ms"]):
                t = np.log10(np.maximum(s["ttft_ms"], 1e-3))
                stats.append((i, tuple(np.percentile(t, (10, 25, 50, 75, 90)))))
                if s["mean_ttft_ms"]:
                    means.append((i, np.log10(s["mean_ttft_ms"])))
            if n in self.paper:
                paper.append((i, np.log10(self.paper[n])))
        if stats:
            pi.addItem(Boxes(stats))
        for pts, symbol, colour, size in ((means, "d", OURS, 11), (paper, "x", PAPER, 13)):
            if pts:
                x, y = zip(*pts)
                # a small offset apart, so a mean equal to the paper's shows both marks
                dx = 0.12 if symbol == "x" else -0.12
                pi.addItem(pg.ScatterPlotItem(np.array(x) + dx, y, symbol=symbol, size=size, pen=pg.mkPen(colour, width=2),
                                              brush=pg.mkBrush(colour)))
        pi.setXRange(-0.6, len(names) - 0.4, padding=0)
        if stats or paper:
            ys = [v for _, q in stats for v in (q[0], q[-1])] + [y for _, y in means + paper]
            lo, hi = min(ys) - 0.1, max(ys) + 0.1
            pi.setYRange(lo, hi, padding=0)
            pi.getAxis("left").setTicks(log_ticks(lo, hi))
        # the key as the plot's title, so an exported figure (PNG, SVG) carries it
        paper_key = f'&nbsp;&nbsp; <span style="color:{PAPER}">✕</span>&nbsp;paper\'s mean' if self.paper else ""
        pi.setTitle(
            f'<span style="color:{BOX}">■</span>&nbsp;quartiles and median, whiskers 10th–90th percentile'
            f'&nbsp;&nbsp; <span style="color:{OURS}">◆</span>&nbsp;mean' + paper_key, color="#222", size="9pt")
        self._fill_table()

    def _fill_table(self) -> None:
        header, rows = self.data_rows() or (COLUMNS, [])
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, v in enumerate(row):
                text = f"{v:,.0f}" if isinstance(v, float) and c != 6 else f"{v:.1%}" if c == 6 and v != "" else str(v)
                item = QTableWidgetItem(text)
                item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter if c else Qt.AlignLeft | Qt.AlignVCenter)
                self.table.setItem(r, c, item)
        self.table.resizeColumnsToContents()

    def _hover(self, pos) -> None:
        p = hover_point(self.plot, pos)
        if p is None:
            return
        i = int(round(p.x()))
        if not 0 <= i < len(self.names):
            return
        n = self.names[i]
        s = self.summaries.get(n)
        ours = f"mean {s['mean_ttft_ms']:,.0f} ms, median {s['ttft_p50_ms']:,.0f} ms" if s and s["mean_ttft_ms"] else \
            "not run yet"
        paper = f" · paper's mean {self.paper[n]:,.0f} ms" if n in self.paper else ""
        show_hover(self.plot, self.info, pos, f"{n}: {ours}{paper}")

    def data_rows(self) -> tuple[list[str], list[list]] | None:
        """A row per router run so far: its TTFT figures beside the paper's mean."""
        if not self.summaries:
            return None
        header = ["router", "mean_ttft_ms", "paper_mean_ttft_ms", "ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms",
                  "token_hit_rate", "served", "rejected"]
        rows = []
        for n in self.names:
            s = self.summaries.get(n)
            if s is None:
                continue
            rows.append([n, s["mean_ttft_ms"], self.paper.get(n, ""), s["ttft_p50_ms"], s["ttft_p90_ms"],
                         s["ttft_p99_ms"], s["token_hit_rate"], s["served"], s["rejected"]])
        return header, rows

