"""Cache replay view: a request trace through one cache tier, as a miss-ratio curve per policy
(kvviz.replay, the same code as `kvviz replay`: libCacheSim where installed, with every policy
it has). It does not depend on the loaded scenario. Replays run in a background thread with
progress and Cancel, and each point is drawn as it arrives; the curve can be saved as CSV."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from kvviz.bundled import resources_dir
from kvviz.errors import ScenarioError
from kvviz.executor import cluster_executor
from kvviz.export.colours import series_colour
from kvviz.export.table import table_csv
from kvviz.format import bytes_for_people, readable_bytes
from kvviz.outputs import check_outputs, write_text
from kvviz.replay import check_sample_rate, miss_ratio_curve, parse_capacities, policies, sampling_note
from kvviz.replay.c_output import describe, per_policy
from kvviz.replay.engines import has_libcachesim
from kvviz.requests.csv_format import parse_layout
from kvviz.requests.reader import read_trace

from ..background import JobControls
from ..run_on import RunOn
from ..save_dir import remember, start_path
from ._common import hover_point, hover_tip, info_label, nearest_point, style_plot
from .log_axis import LogAxis

RESOURCES = resources_dir()
SAMPLE = RESOURCES / "traces" / "zipf_20k.csv"
METRICS = {"request miss ratio": "request_miss_ratio", "byte miss ratio": "byte_miss_ratio"}
# Ticked when the tab opens: the classic three and the two that recent work compares them with.
CSV_HEAD = ["policy", "capacity", "requests", "misses", "request_miss_ratio", "byte_miss_ratio", "engine"]
DEFAULT_POLICIES = ("lru", "fifo", "belady", "s3fifo", "sieve")


class ReplayView(QWidget):
    finished = Signal(object)     # [ReplayResult], for tests and screenshots
    stopped = Signal()            # done, failed or cancelled
    point = Signal(int, object)   # (index, ReplayResult) from the worker thread, as each is known

    def __init__(self, parent=None, settings=None):
        super().__init__(parent)
        self.settings = settings  # where the last export went (app/save_dir.py)
        self.path = QLineEdit(str(SAMPLE) if SAMPLE.exists() else "")
        self.path.setPlaceholderText("CSV; libCacheSim oracleGeneral or .txt; Mooncake or Qwen JSONL; any as .zst")
        browse = QPushButton("Open…")
        browse.clicked.connect(self._browse)
        self.engine_box = QComboBox()
        self.engine_box.addItems(["auto", "libcachesim", "python"] if has_libcachesim() else ["python"])
        self.engine_box.setToolTip("auto: libCacheSim's C engine where installed, else kvviz's own Python "
                                   "LRU/FIFO/Belady (the same counts, slower)")
        self.engine_box.currentIndexChanged.connect(lambda _: self._fill_policies())
        self.policy_list = QListWidget()
        self.policy_list.setFixedWidth(240)  # the plot keeps the room; a long description is elided
        self.policy_list.setTextElideMode(Qt.ElideRight)
        self.policy_list.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        self._fill_policies()
        self.capacities = QLineEdit("auto")
        self.capacities.setToolTip("auto: 12 capacities from 0.1% of the trace's footprint (every object "
                                   "once) to all of it; or sizes such as 64MiB, 256MiB, 1GB; or shares of the "
                                   "footprint such as 1%, 10%")
        self.fields = QLineEdit()
        self.fields.setPlaceholderText("from the header")
        self.fields.setToolTip("A CSV without the time,id,size header: its field numbers as libCacheSim's CSV "
                               "reader takes them, e.g. id=2,size=3 or time=1,id=2,size=3 (no time: the request's "
                               "index; no size: 1 byte). The separator is told from the first line, and so is a "
                               "header line (its time or size is not a number).")
        self.sample_rate = QLineEdit()
        self.sample_rate.setPlaceholderText("exact")
        self.sample_rate.setFixedWidth(110)
        self.sample_rate.setToolTip("LRU from a SHARDS sample at this rate in (0, 1], e.g. 0.01: faster, "
                                    "an estimate (the legend says so); empty: exact")
        self.ratio_box = QComboBox()
        self.ratio_box.addItems(list(METRICS))
        self.ratio_box.currentIndexChanged.connect(lambda _: self._draw())
        self.jobs = JobControls(self, "Run replay", "replays")
        self.jobs.run_btn.clicked.connect(self.run)
        self.jobs.stopped.connect(self.stopped)
        self.status = self.jobs.status
        self.run_on = RunOn(self.status.setText, "the per-capacity replays, each worker sent the trace once")
        self.save_btn = QPushButton("Save CSV…")
        self.save_btn.clicked.connect(self._save_dialog)
        self.save_btn.setEnabled(False)
        self.point.connect(self._on_point)
        for field in (self.path, self.capacities, self.fields, self.sample_rate):
            field.returnPressed.connect(self.run)  # Return runs, as the button does

        form = QGridLayout()  # label, field, label, field; the trace and the buttons span them
        form.addWidget(QLabel("trace"), 0, 0)
        trace_row = QHBoxLayout()
        trace_row.addWidget(self.path, 1)
        trace_row.addWidget(browse)
        form.addLayout(trace_row, 0, 1, 1, 3)
        for row, pairs in ((1, (("capacities", self.capacities), ("engine", self.engine_box))),
                           (2, (("CSV fields", self.fields), ("LRU sample rate", self.sample_rate)))):
            for k, (label, widget) in enumerate(pairs):
                form.addWidget(QLabel(label), row, 2 * k)
                form.addWidget(widget, row, 2 * k + 1)
        form.addWidget(QLabel("run on"), 3, 0)
        form.addWidget(self.run_on, 3, 1)
        buttons = QHBoxLayout()
        for w in (self.ratio_box, self.jobs.run_btn, self.jobs.cancel_btn, self.save_btn):
            buttons.addWidget(w)
        buttons.addWidget(self.jobs.progress, 1)
        form.addLayout(buttons, 4, 0, 1, 4)
        form.addWidget(self.status, 5, 0, 1, 4)  # its own row, as the Sweep tab's: a message has the width
        form.setColumnStretch(1, 1)

        self.plot = pg.PlotWidget(background="w", axisItems={"bottom": LogAxis("bottom")})
        pi = self.plot.getPlotItem()
        style_plot(pi, left="request miss ratio", bottom="cache capacity (bytes, log scale)")
        pi.setLogMode(x=True, y=False)
        pi.enableAutoRange(y=False)
        pi.setYRange(0, 1.05, padding=0)
        self.legend = pi.addLegend(offset=(-10, 8), brush=pg.mkBrush(255, 255, 255, 230),
                                   pen=pg.mkPen("#cccccc"), labelTextColor="#222222", labelTextSize="9.5pt")
        side = QVBoxLayout()
        side.addWidget(QLabel("policies (hover for a description)"))
        side.addWidget(self.policy_list, 1)
        self.info = info_label()  # the point under the mouse: policy, capacity, ratio
        self.plot.scene().sigMouseMoved.connect(self._on_move)
        plot_col = QVBoxLayout()
        plot_col.setSpacing(0)
        plot_col.addWidget(self.plot, 1)
        plot_col.addWidget(self.info)
        body = QHBoxLayout()
        body.addLayout(side)
        body.addLayout(plot_col, 1)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addLayout(body, 1)
        self.results: list = []
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.flags: dict[str, pg.TextItem] = {}  # a ⚠ on a curve libCacheSim printed warnings about
        self._points: dict[str, tuple] = {}  # policy -> (capacities, ratios) as drawn, for hover
        self._opened = False  # shown once already
        self._ran = False     # a run was asked for (the sample is then not started on its own)
        self._replacing = False  # a run has started and none of its points has arrived yet
        self._asked: tuple | None = None  # the inputs of the run in progress
        self._shown: tuple | None = None  # the inputs of the curves on show (`_inputs`)
        self._shown_text = ""             # the status line of the curves on show
        for field in (self.path, self.capacities, self.fields, self.sample_rate):
            field.textChanged.connect(self._mark_stale)
        self.engine_box.currentIndexChanged.connect(self._mark_stale)
        self.policy_list.itemChanged.connect(self._mark_stale)

    @property
    def job(self):
        return self.jobs.job

    @property
    def policy_boxes(self) -> dict[str, QListWidgetItem]:
        """The policy list's items by name (checkable)."""
        return {self.policy_list.item(i).data(Qt.UserRole): self.policy_list.item(i)
                for i in range(self.policy_list.count())}

    def ticked(self) -> list[str]:
        return [name for name, item in self.policy_boxes.items() if item.checkState() == Qt.Checked]

    def tick(self, names) -> None:
        names = set(names)
        for name, item in self.policy_boxes.items():
            item.setCheckState(Qt.Checked if name in names else Qt.Unchecked)

    def _fill_policies(self):
        keep = set(self.ticked()) if self.policy_list.count() else set(DEFAULT_POLICIES)
        self.policy_list.clear()
        for name, text in policies(self.engine_box.currentText()).items():
            item = QListWidgetItem(f"{name}  ·  {text}")
            item.setData(Qt.UserRole, name)
            item.setToolTip(text)
            item.setFlags(item.flags() | Qt.ItemIsUserCheckable)
            item.setCheckState(Qt.Checked if name in keep else Qt.Unchecked)
            self.policy_list.addItem(item)

    # --- the view protocol: a scenario's result does not change a replay ----------------------
    def set_result(self, result) -> None:
        pass

    def draw_sample_once(self):
        """The first time the tab is shown, with the bundled sample still chosen, draw its curves:
        the tab never opens on an empty plot."""
        if not self._opened and not self._ran and not self.results and self.job is None \
                and self.path.text() == str(SAMPLE):
            self.run()
        self._opened = True

    def _browse(self):
        path, _ = QFileDialog.getOpenFileName(self, "Open a request trace", str(Path(self.path.text()).parent),
                                              "Traces (*.csv *.tsv *.txt *.jsonl *.oracleGeneral *.bin *.zst);;All files (*)")
        if path:
            self.path.setText(path)

    def _inputs(self) -> tuple:
        """What a run replays: the trace, capacities, engine, CSV fields, sample rate, policies."""
        return (self.path.text().strip(), self.capacities.text().strip(), self.engine_box.currentText(),
                self.fields.text().strip(), self.sample_rate.text().strip(), tuple(self.ticked()))

    def _mark_stale(self, *_):
        """An edit after a run: the curves stay, and the status line says they are the last run's
        (of which trace) until the next run, instead of passing for the edited settings'."""
        if self.job is not None or self._shown is None or not self.results:
            return
        if self._inputs() == self._shown:
            self.status.setText(self._shown_text)
        else:
            self.status.setText(f"⚠ edited since the curves were drawn: they are the last run's, of "
                                f"{Path(self._shown[0]).name} · Run replay to replay the edited settings")

    def run(self):
        self._ran = True
        if self.job is not None:
            return
        self._asked = self._inputs()
        names = self.ticked()
        path, text, engine = self.path.text().strip(), self.capacities.text(), self.engine_box.currentText()
        fields = self.fields.text().strip() or None
        rate_text = self.sample_rate.text().strip() or None
        spec = self.run_on.spec()
        self.jobs.cancel_note = "" if spec == "local" else " (replays already on the cluster finish there)"
        if not names:
            self.status.setText("⚠ tick at least one policy")
            return
        if not path:
            self.status.setText("⚠ choose a trace file")
            return
        self._replacing = True  # the last curves stay until this run's first point (or for good, if it fails)
        emit = self.point.emit

        def work(progress):
            rate = check_sample_rate(rate_text, "LRU sample rate")  # before a long read, not after
            with cluster_executor(spec) as executor:
                reqs = read_trace(path, layout=parse_layout(fields, source="CSV fields"))
                caps = sorted(set(parse_capacities(text or "auto", reqs, "capacities")))
                skipped: list = []
                results = miss_ratio_curve(reqs, names, caps, progress, engine=engine, on_result=emit,
                                           skipped=skipped, sample_rate=rate, executor=executor)
            note = sampling_note(reqs, rate, names)
            return reqs, results, skipped, note
        self.jobs.start(work, "replay", self._on_done, status="reading the trace…")

    def cancel(self):
        self.jobs.cancel()

    def shutdown(self):
        self.jobs.shutdown()
        self.run_on.shutdown()

    def _on_point(self, i: int, r):
        if self.job is None:
            return  # a late point of a finished or cancelled run
        if self._replacing:
            self.results, self._replacing = [], False
        if len(self.results) <= i:
            self.results.extend([None] * (i + 1 - len(self.results)))
        self.results[i] = r
        self._draw()

    def _on_done(self, payload):
        reqs, results, skipped, note = payload
        self.results, self._replacing = [r for r in results if r is not None], False
        self.save_btn.setEnabled(bool(self.results))
        engines = sorted({r.engine for r in self.results})
        text = (f"{len(reqs):,} requests · {reqs.objects:,} objects · footprint {bytes_for_people(reqs.footprint)} · "
                f"{len(self.results)} replays · {', '.join(engines)}")
        if skipped:  # e.g. libCacheSim's S3-FIFO below 10 B: the rest of the curve still stands
            policy, cap, why = skipped[0]
            text += f" · ⚠ {len(skipped)} point(s) skipped, e.g. {policy} at {cap:,} B: {why}"
        if note:
            text += f" · ⚠ {note}"
        for policy, counts in per_policy(self.results).items():
            text += f" · ⚠ {describe(policy, *counts)}"
        self.status.setText(text)
        self._shown, self._shown_text = self._asked, text
        self._draw()
        self.finished.emit(results)

    def _draw(self):
        pi = self.plot.getPlotItem()
        for c in [*self.curves.values(), *self.flags.values()]:
            pi.removeItem(c)
        self.curves, self._points, self.flags = {}, {}, {}
        done = [r for r in self.results if r is not None]
        if not done:
            return
        key = METRICS[self.ratio_box.currentText()]
        pi.setLabel("left", self.ratio_box.currentText())
        # an estimated curve says so on the plot: "lru (SHARDS R=0.01 stack distances)"
        sampled = {r.policy: r.engine for r in done if r.engine.startswith("SHARDS")}
        warned = per_policy(done)  # what libCacheSim printed, beside the curve it concerns
        for p in dict.fromkeys(r.policy for r in done):
            rows = sorted((r for r in done if r.policy == p), key=lambda r: r.capacity)
            x = np.array([r.capacity for r in rows], dtype=float)
            y = np.array([getattr(r, key) for r in rows], dtype=float)
            self._points[p] = (x, y)
            colour = series_colour(p)  # by name: ticking another policy recolours none
            self.curves[p] = pi.plot(x, y, pen=pg.mkPen(colour, width=2), symbol="o", symbolSize=6,
                                     symbolBrush=colour, symbolPen="w",
                                     name=(f"{p} ({sampled[p]})" if p in sampled else p)
                                     + (" ⚠ libCacheSim warned" if p in warned else ""))
            if p in warned:  # at the curve's first warned point, in its colour: hover it for the text
                first = next(r for r in rows if r.warnings)
                flag = pg.TextItem("⚠", color=colour, anchor=(-0.3, 0.5))  # right of the point
                flag.setToolTip(describe(p, *warned[p]))
                flag.setPos(np.log10(first.capacity), getattr(first, key))
                pi.addItem(flag)
                self.flags[p] = flag
        pi.enableAutoRange(x=True, y=False)  # a ratio: always the whole 0..1 scale
        pi.setYRange(0, 1.05, padding=0)

    def point_text(self, policy: str, capacity: int) -> str:
        """The hover line of one curve point."""
        r = next(r for r in self.results if r is not None and r.policy == policy and r.capacity == capacity)
        return (f"{policy} · capacity {readable_bytes(r.capacity)} · request miss ratio "
                f"{r.request_miss_ratio:.4f} · byte miss ratio {r.byte_miss_ratio:.4f} · "
                f"{r.misses:,} of {r.requests:,} missed · {r.engine}"
                + (f" · ⚠ libCacheSim printed: {'; '.join(r.warnings)}" if r.warnings else ""))

    def _on_move(self, pos):
        # view coordinates of the points: x is log10 of the capacity (the axis is logarithmic)
        series = {p: (np.log10(caps), ys) for p, (caps, ys) in self._points.items()}
        hit = None if hover_point(self.plot, pos) is None else nearest_point(self.plot, pos, series)
        if hit is None:
            hover_tip(self.plot, pos, None)
            return
        policy, i = hit
        text = self.point_text(policy, int(self._points[policy][0][i]))
        self.info.setText(text)
        hover_tip(self.plot, pos, text)

    def figure_note(self) -> str:
        """A figure's caption: the trace replayed (not the scenario in the panel)."""
        return f"miss-ratio curves of {Path(self._shown[0]).name}" if self.results and self._shown else ""

    def data_rows(self) -> tuple[list[str], list[list]] | None:
        """The curves as a table (File → Export → Data as CSV, and Save CSV)."""
        done = [r for r in self.results if r is not None]
        if not done:
            return None
        return CSV_HEAD, [[r.policy, r.capacity, r.requests, r.misses, r.request_miss_ratio, r.byte_miss_ratio,
                       r.engine] for r in done]

    def csv_text(self) -> str:
        head, rows = self.data_rows() or (CSV_HEAD, [])
        return table_csv(head, rows)

    def _save_dialog(self):
        path, _ = QFileDialog.getSaveFileName(self, "Save the miss-ratio curve",
                                              start_path(self.settings, "miss_ratio_curve.csv"), "CSV (*.csv)")
        if path:
            try:
                trace = self._shown[0] if self._shown else self.path.text().strip()
                check_outputs([("curve", path, "CSV")], [("trace this curve replays", trace)])
                write_text(path, self.csv_text())
            except ScenarioError as e:
                self.status.setText(f"⚠ could not save: {e}")
                return
            remember(self.settings, path)
            self.status.setText(f"saved {path}")
