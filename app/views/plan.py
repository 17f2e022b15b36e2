"""Plan view (issue 34): `kvviz plan` in the app. Run searches the scenario's `[plan]` grid in
the background for the cheapest mix meeting the target (the box, the section's first target by
default); each mix's point appears as its run ends (cost per hour against the target's metric),
the cost-latency front and the best mix are drawn when the search ends, the region that misses
the target is shaded. Clicking a point opens that mix (its settings set on the scenario: the
timeline and the Tiers tab show its run)."""
from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QVBoxLayout, QWidget

from ..background import JobControls
from ._common import info_label, style_plot

RUN, FRONT, BEST, MISS = "#9a9a9a", "#1f77b4", "#d62728", (214, 39, 40, 28)


class PlanView(QWidget):
    finished = Signal(object)   # the list of RatePlan (tests, screenshots)
    stopped = Signal()
    open_mix = Signal(dict)     # a clicked point's settings: path -> value

    def __init__(self, parent=None):
        super().__init__(parent)
        self.jobs = JobControls(self, "Run", "runs")
        self.jobs.run_btn.setToolTip("search the [plan] grid in the background (kvviz plan); Cancel stops it")
        self.jobs.run_btn.clicked.connect(self.run)
        self.jobs.stopped.connect(self.stopped)
        self.status = self.jobs.status
        self.target = QLineEdit()
        self.target.setToolTip("METRIC<=VALUE or METRIC>=VALUE (blank: the scenario's [plan] targets)")
        self.target.setMinimumWidth(280)
        self.note = info_label()
        self.plot = pg.PlotWidget(background="w")
        style_plot(self.plot.getPlotItem(), "target metric", "cost per hour (USD)")
        self.scatter = pg.ScatterPlotItem(size=8, pen=None, brush=pg.mkBrush(RUN))
        self.scatter.sigClicked.connect(self._clicked)
        self.front = pg.PlotDataItem(pen=pg.mkPen(FRONT, width=2), symbol="o", symbolSize=9,
                                     symbolBrush=FRONT, symbolPen=None)
        self.best = pg.ScatterPlotItem(size=18, pen=pg.mkPen(BEST, width=2), brush=None)
        self.limit = pg.InfiniteLine(angle=0, pen=pg.mkPen(BEST, style=Qt.DashLine), movable=False)
        self.miss = pg.LinearRegionItem(orientation="horizontal", movable=False, brush=pg.mkBrush(*MISS),
                                        pen=pg.mkPen(None))
        for item in (self.miss, self.limit, self.scatter, self.front, self.best):
            self.plot.addItem(item)
        top = QHBoxLayout()
        for w in (self.jobs.run_btn, self.jobs.cancel_btn, self.jobs.progress):
            top.addWidget(w)
        top.addWidget(QLabel("target"))
        top.addWidget(self.target, 1)
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.status)
        lay.addWidget(self.note)
        lay.addWidget(self.plot, 1)
        self.data: dict = {}
        self.source = "<scenario>"
        self.plans: list = []
        self._live: list[tuple[float, float | None, dict]] = []  # (cost, metric, settings) as runs end
        self._metric = ""
        self._total = 0

    @property
    def job(self):
        return self.jobs.job

    def set_scenario(self, data: dict, source: str, targets: list[str], grid_points: int):
        if self.job is not None:
            self.jobs.cancel()
        self.data, self.source, self._total = data, source, grid_points
        self.target.setPlaceholderText(targets[0] if targets else "policies.lru.ttft_p99_ms<=2000")
        self._clear()
        self.note.setText(f"{grid_points} mixes on the [plan] grid: Run finds the cheapest meeting the target "
                          "with a fraction of their runs; click a point to open that mix")

    def _clear(self):
        self.plans, self._live = [], []
        for item in (self.scatter, self.best):
            item.setData([], [])
        self.front.setData([], [])

    def run(self):
        if self.job is not None or not self.data:
            return
        from kvviz.plan.planner import plan
        text = self.target.text().strip()
        flags = [text] if text else None
        self._clear()
        self._metric = (text or self.target.placeholderText()).replace(">=", "<=").split("<=")[0].strip()
        live, total, data, source = self._live, self._total, self.data, self.source

        def on_result(_k, i, values):  # in the job's thread: a list append, read on the GUI thread
            live.append((values.get("cost_per_hour"), values.get(self._metric), i))

        def work(progress):
            progress(0, total)
            return plan(data, source, flags, progress=lambda done: progress(done, total), on_result=on_result)
        self.jobs.start(work, "the plan", self._done, status=f"searching {total} mixes…")
        self.jobs.job.progress.connect(self._show_live)

    def _show_live(self, *_):
        pts = [(c, v) for c, v, _ in list(self._live) if c is not None and v is not None and math.isfinite(v)]
        self.scatter.setData([c for c, _ in pts], [v for _, v in pts], data=[i for c, v, i in self._live
                                                                            if c is not None and v is not None
                                                                            and math.isfinite(v)])

    def _done(self, plans):
        self.plans = list(plans)
        rp = self.plans[0]
        t = rp.targets[0]
        self._metric = t.metric
        vals = rp.outcome.values
        idx = [i for i in vals if vals[i].get(t.metric) is not None]
        self.scatter.setData([float(rp.grid.cost[i]) for i in idx], [vals[i][t.metric] for i in idx], data=idx)
        fr = rp.front()
        self.front.setData([float(rp.grid.cost[i]) for i in fr], [vals[i][t.metric] for i in fr])
        if rp.outcome.best is not None:
            b = rp.outcome.best
            self.best.setData([float(rp.grid.cost[b])], [vals[b][t.metric]])
        self.limit.setValue(t.value)
        ys = [vals[i][t.metric] for i in idx] + [t.value]
        hi = max(ys) * 1.1 if ys else t.value * 2
        self.miss.setRegion((t.value, hi) if t.op == "<=" else (min(0.0, min(ys)), t.value))
        self.plot.getPlotItem().setLabel("left", t.metric)
        d = rp.to_dict()
        head = (f"cheapest meeting {t}: ${d['best']['cost_per_hour']:.3f}/h" if d["best"] else d["message"])
        self.status.setText(f"{head} · {d['runs']} runs of {d['grid_runs']} mixes "
                            f"({d['bound_pruned']} ruled out by the bound) · {len(fr)} on the front")
        self.finished.emit(self.plans)

    def settings_of(self, i: int) -> dict:
        return dict(self.plans[0].grid.settings[i]) if self.plans else {}

    def _clicked(self, _item, points, *_):
        if not points or not self.plans:
            return
        i = points[0].data()
        if i is None:
            return
        settings = self.settings_of(int(i))
        self.status.setText("opened " + ", ".join(f"{k} = {v:g}" for k, v in settings.items()))
        self.open_mix.emit(settings)

    def data_rows(self):
        if not self.plans:
            return None
        rp = self.plans[0]
        paths = sorted({p for s in rp.grid.settings for p in s})
        rows = [[*(rp.grid.settings[i].get(p) for p in paths), float(rp.grid.cost[i]),
                 v.get(rp.targets[0].metric)] for i, v in sorted(rp.outcome.values.items())]
        return [*paths, "cost_per_hour", rp.targets[0].metric], rows

    def shutdown(self):
        self.jobs.shutdown()
