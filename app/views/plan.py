"""Plan view (issue 34): `kvviz plan` in the app. Run searches the scenario's `[plan]` grid in
the background for the cheapest mix meeting the target (the box, the section's first target by
default); each mix's point appears as its run ends (cost per hour against the target's metric),
the cost-latency front and the best mix are drawn when the search ends, the region that misses
the target is shaded; the front is redrawn as each run ends, so it fills in during the search.
Click a point to make it A, Shift-click another to make it B: the table beside the plot shows
their settings, cost and target metrics side by side with B − A (as the Compare tab does);
double-click a point, or Open A / Open B, opens that mix (its settings set on the scenario: the
timeline and the Tiers tab show its run)."""
from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from kvviz.format import format_value

from ..background import JobControls
from ._common import info_label, style_plot
from .compare import change_text

RUN, FRONT, BEST, MISS = "#9a9a9a", "#1f77b4", "#d62728", (214, 39, 40, 28)
PICK = {"A": "#2ca02c", "B": "#9467bd"}


def front_of(points: list[tuple[float, float, int]], lower_is_better: bool = True) -> list[tuple[float, float, int]]:
    """(cost, metric, point) of the points, cheapest first, each better than every cheaper one:
    the cost-latency front of what has run so far."""
    sign = 1.0 if lower_is_better else -1.0
    out, best = [], math.inf
    for c, v, i in sorted(points, key=lambda p: (p[0], p[2])):
        if sign * v < best:
            out.append((c, v, i))
            best = sign * v
    return out


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
        self.picked = pg.ScatterPlotItem(size=14, pen=None, brush=None)  # A and B, labelled
        self.labels = [pg.TextItem(k, color=PICK[k], anchor=(-0.3, 1.1)) for k in PICK]
        for item in (self.miss, self.limit, self.scatter, self.front, self.best, self.picked, *self.labels):
            self.plot.addItem(item)
        for t in self.labels:
            t.setVisible(False)
        self._axes_shown(False)  # before the first Run: no target line, no miss region, no numbers
        # A and B side by side
        self.pair: dict[str, int | None] = {"A": None, "B": None}
        self.table = QTableWidget(0, 4)
        self.table.setHorizontalHeaderLabels(["A", "B", "B − A", "change"])
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.table.setToolTip("click a point: A; Shift-click another: B")
        self.open_btn = {k: QPushButton(f"Open {k}") for k in PICK}
        for k, b in self.open_btn.items():
            b.setEnabled(False)
            b.setToolTip(f"set mix {k}'s settings on the scenario and show its timeline")
            b.clicked.connect(lambda _=False, k=k: self._open(self.pair[k]))
        self.pair_hint = QLabel("Click a point: A · Shift-click: B · double-click: open it")
        self.pair_hint.setWordWrap(True)
        side = QWidget()
        sl = QVBoxLayout(side)
        sl.setContentsMargins(0, 0, 0, 0)
        sl.addWidget(self.pair_hint)
        sl.addWidget(self.table, 1)
        buttons = QHBoxLayout()
        for b in self.open_btn.values():
            buttons.addWidget(b)
        sl.addLayout(buttons)
        split = QSplitter(Qt.Horizontal)
        split.addWidget(self.plot)
        split.addWidget(side)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([780, 560])  # room for A, B, B − A and the change without scrolling
        top = QHBoxLayout()
        for w in (self.jobs.run_btn, self.jobs.cancel_btn, self.jobs.progress):
            top.addWidget(w)
        top.addWidget(QLabel("target"))
        top.addWidget(self.target, 1)
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.status)
        lay.addWidget(self.note)
        lay.addWidget(split, 1)
        self.data: dict = {}
        self.source = "<scenario>"
        self.plans: list = []
        self._live: list[tuple[float, float | None, int]] = []  # (cost, metric, point) as runs end
        self._values: dict[int, dict] = {}  # point -> its run's metrics, as runs end
        self._metric = ""
        self._total = 0

    @property
    def job(self):
        return self.jobs.job

    def _axes_shown(self, on: bool) -> None:
        """The target's line and miss region and the axes' numbers, from a Run on: before one
        the empty plot read 0…1 under a miss region shaded over all of it (seen at 1920 px)."""
        self.limit.setVisible(on)
        self.miss.setVisible(on)
        pi = self.plot.getPlotItem()
        for side in ("bottom", "left"):
            pi.getAxis(side).setStyle(showValues=on)

    def set_scenario(self, data: dict, source: str, targets: list[str], grid_points: int):
        if self.job is not None:
            self.jobs.cancel()
        self.data, self.source, self._total = data, source, grid_points
        self.target.setPlaceholderText(targets[0] if targets else "policies.lru.ttft_p99_ms<=2000")
        self._clear()
        self._axes_shown(False)  # another scenario's target and numbers no longer apply
        self.note.setText(f"{grid_points} mixes on the [plan] grid: Run finds the cheapest meeting the target "
                          "with a fraction of their runs; click a point (A) and Shift-click another (B) to "
                          "compare them, double-click to open one")

    def _clear(self):
        self.plans, self._live, self._values = [], [], {}
        for item in (self.scatter, self.best, self.picked):
            item.setData([], [])
        self.front.setData([], [])
        self.pair = {"A": None, "B": None}
        self._show_pair()

    def run(self):
        if self.job is not None or not self.data:
            return
        from kvviz.plan.planner import plan
        text = self.target.text().strip()
        flags = [text] if text else None
        self._clear()
        self._metric = (text or self.target.placeholderText()).replace(">=", "<=").split("<=")[0].strip()
        self._show_target(text or self.target.placeholderText())
        live, total, data, source, got = self._live, self._total, self.data, self.source, self._values

        def on_result(_k, i, values):  # in the job's thread: a list append, read on the GUI thread
            got[i] = values
            live.append((values.get("cost_per_hour"), values.get(self._metric), i))

        def work(progress):
            progress(0, total)
            return plan(data, source, flags, progress=lambda done: progress(done, total), on_result=on_result)
        self.jobs.start(work, "the plan", self._done, status=f"searching {total} mixes…")
        self.jobs.job.progress.connect(self._show_live)

    def _show_target(self, text: str):
        """The target's line and shaded miss region from the start, so the points fill in around it
        (a target that does not parse is refused by the plan itself, with its message)."""
        from kvviz.errors import ScenarioError
        from kvviz.plan.targets import parse_target
        try:
            t = parse_target(text, self.source, "target")
        except ScenarioError:
            return
        self._axes_shown(True)
        self.limit.setValue(t.value)
        self.miss.setRegion((t.value, t.value * 2.5) if t.op == "<=" else (0.0, t.value))
        self.plot.getPlotItem().setLabel("left", t.metric)

    def _show_live(self, *_):
        """The runs ended so far, and the front of them (it fills in as the search goes)."""
        pts = [(c, v, i) for c, v, i in list(self._live) if c is not None and v is not None and math.isfinite(v)]
        self.scatter.setData([c for c, _, _ in pts], [v for _, v, _ in pts], data=[i for _, _, i in pts])
        lower = ">=" not in (self.target.text() or self.target.placeholderText())
        fr = front_of(pts, lower)
        self.front.setData([c for c, _, _ in fr], [v for _, v, _ in fr])

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

    def _clicked(self, _item, points, ev=None, *_):
        """Click: A; Shift-click: B; double-click: open the mix."""
        if not points or not self.plans:
            return
        i = points[0].data()
        if i is None:
            return
        if ev is not None and hasattr(ev, "double") and ev.double():
            self._open(int(i))
            return
        shift = ev is not None and hasattr(ev, "modifiers") and bool(ev.modifiers() & Qt.ShiftModifier)
        self.pick("B" if shift else "A", int(i))

    def pick(self, which: str, i: int | None):
        """Point i (a grid index of a mix that ran) is A or B now."""
        self.pair[which] = i
        self._show_pair()

    def _open(self, i: int | None):
        if i is None or not self.plans:
            return
        settings = self.settings_of(int(i))
        self.status.setText("opened " + ", ".join(f"{k} = {v:g}" for k, v in settings.items()))
        self.open_mix.emit(settings)

    def pair_rows(self) -> list[tuple[str, str, str, str, str]]:
        """(row, A, B, B − A, change) for A's and B's settings, cost per hour and target metrics."""
        if not self.plans:
            return []
        rp = self.plans[0]
        a, b = self.pair["A"], self.pair["B"]

        def cols(i):
            if i is None:
                return {}
            v = rp.outcome.values.get(i, {})
            out = dict(sorted(rp.grid.settings[i].items()))
            out["cost_per_hour"] = float(rp.grid.cost[i])
            out.update({t.metric: v.get(t.metric) for t in rp.targets})
            return out
        ca, cb = cols(a), cols(b)
        rows = []
        for key in list(ca) + [k for k in cb if k not in ca]:
            va, vb = ca.get(key), cb.get(key)
            both = isinstance(va, (int, float)) and isinstance(vb, (int, float))
            rows.append((key, "" if va is None else format_value(va), "" if vb is None else format_value(vb),
                         format_value(vb - va) if both else "", change_text(va, vb) if both else ""))
        return rows

    def _row_name(self, key: str) -> str:
        """A setting by its axis's name (the path in the tooltip of the plot's note), a metric by
        its last segment."""
        if self.plans:
            for a in self.plans[0].grid.axes:
                if key in a.paths:
                    return a.label if len(a.paths) == 1 else f"{a.label}: {key}"
        return key.rsplit(".", 1)[-1] if key.startswith("policies.") else key

    def _show_pair(self):
        rows = self.pair_rows()
        self.table.setRowCount(len(rows))
        self.table.setVerticalHeaderLabels([self._row_name(r[0]) for r in rows])
        for r, row in enumerate(rows):
            for c, text in enumerate(row[1:]):
                item = QTableWidgetItem(text)
                item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                self.table.setItem(r, c, item)
        xs, ys, brushes = [], [], []
        rp = self.plans[0] if self.plans else None
        for label, (k, i) in zip(self.labels, self.pair.items()):
            self.open_btn[k].setEnabled(i is not None)
            v = rp.outcome.values.get(i, {}).get(rp.targets[0].metric) if (rp is not None and i is not None) else None
            if v is None:
                label.setVisible(False)
                continue
            c = float(rp.grid.cost[i])
            xs.append(c)
            ys.append(v)
            brushes.append(pg.mkBrush(PICK[k]))
            label.setPos(c, v)
            label.setVisible(True)
        self.picked.setData(xs, ys, brush=brushes)
        if rp is not None and (self.pair["A"] is not None or self.pair["B"] is not None):
            self.pair_hint.setText("A " + ("and B " if self.pair["B"] is not None else "") +
                                   "side by side (Shift-click a point for B; double-click opens it)")

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
