"""Cache replay view: a (time, id, size) request trace through one cache tier, as a miss-ratio
curve per policy (kvviz.replay, the same code as `kvviz replay`). It does not depend on the
loaded scenario. Replays run in a background thread with progress and Cancel; the curve can
be saved as CSV."""
from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QFileDialog, QGridLayout, QHBoxLayout, QLabel,
                               QLineEdit, QPushButton, QVBoxLayout, QWidget)

from kvviz.io import atomic_write
from kvviz.replay import POLICIES, footprint, miss_ratio_curve, parse_capacities, read_requests

from .background import JobControls
from .views.log_axis import LogAxis
from .views._common import LINE_COLOURS, style_plot

RESOURCES = Path(__file__).resolve().parents[1] / "resources"
SAMPLE = RESOURCES / "traces" / "zipf_20k.csv"
METRICS = {"request miss ratio": "request_miss_ratio", "byte miss ratio": "byte_miss_ratio"}


class ReplayView(QWidget):
    finished = Signal(object)  # [ReplayResult], for tests and screenshots
    stopped = Signal()         # done, failed or cancelled

    def __init__(self, parent=None):
        super().__init__(parent)
        self.path = QLineEdit(str(SAMPLE) if SAMPLE.exists() else "")
        self.path.setPlaceholderText("CSV with header time,id,size")
        browse = QPushButton("Open…")
        browse.clicked.connect(self._browse)
        self.policy_boxes = {p: QCheckBox(p) for p in POLICIES}
        for box in self.policy_boxes.values():
            box.setChecked(True)
        self.capacities = QLineEdit("auto")
        self.capacities.setToolTip("auto: 12 capacities from 0.1% of the trace's footprint (every object "
                                   "once) to all of it; or sizes such as 64MiB, 256MiB, 1GB")
        self.ratio_box = QComboBox()
        self.ratio_box.addItems(list(METRICS))
        self.ratio_box.currentIndexChanged.connect(lambda _: self._draw())
        self.jobs = JobControls(self, "Run replay", "replays")
        self.jobs.run_btn.clicked.connect(self.run)
        self.jobs.stopped.connect(self.stopped)
        self.status = self.jobs.status
        self.save_btn = QPushButton("Save CSV…")
        self.save_btn.clicked.connect(self._save_dialog)
        self.save_btn.setEnabled(False)

        form = QGridLayout()
        form.addWidget(QLabel("trace"), 0, 0)
        form.addWidget(self.path, 0, 1, 1, 3)
        form.addWidget(browse, 0, 4)
        policies = QHBoxLayout()
        for box in self.policy_boxes.values():
            policies.addWidget(box)
        policies.addStretch(1)
        form.addWidget(QLabel("policies"), 1, 0)
        form.addLayout(policies, 1, 1)
        form.addWidget(QLabel("capacities"), 1, 2)
        form.addWidget(self.capacities, 1, 3, 1, 2)
        buttons = QHBoxLayout()
        for w in (self.ratio_box, self.jobs.run_btn, self.jobs.cancel_btn, self.save_btn, self.jobs.progress):
            buttons.addWidget(w)
        buttons.addWidget(self.status, 1)
        form.addLayout(buttons, 2, 0, 1, 5)
        form.setColumnStretch(3, 1)

        self.plot = pg.PlotWidget(background="w", axisItems={"bottom": LogAxis("bottom")})
        pi = self.plot.getPlotItem()
        style_plot(pi, left="request miss ratio", bottom="cache capacity (bytes, log scale)")
        pi.setLogMode(x=True, y=False)
        pi.enableAutoRange(y=False)
        pi.setYRange(0, 1.05, padding=0)
        self.legend = pi.addLegend(offset=(-10, 8), brush=pg.mkBrush(255, 255, 255, 230),
                                   pen=pg.mkPen("#cccccc"), labelTextColor="#222222", labelTextSize="9.5pt")
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(self.plot, 1)
        self.results: list = []
        self.curves: dict[str, pg.PlotDataItem] = {}
        self._opened = False  # shown once already

    @property
    def job(self):
        return self.jobs.job

    def draw_sample_once(self):
        """The first time the tab is shown, with the bundled sample still chosen, draw its curves:
        the tab never opens on an empty plot (about a second for the 20,000 requests)."""
        if not self._opened and not self.results and self.job is None and self.path.text() == str(SAMPLE):
            self.run()
        self._opened = True

    # --- the view protocol: a scenario's result does not change a replay ----------------------
    def set_result(self, result) -> None:
        pass

    def _browse(self):
        path, _ = QFileDialog.getOpenFileName(self, "Open a request trace", str(Path(self.path.text()).parent),
                                              "CSV (*.csv);;All files (*)")
        if path:
            self.path.setText(path)

    def run(self):
        if self.job is not None:
            return
        policies = [p for p, box in self.policy_boxes.items() if box.isChecked()]
        path, text = self.path.text().strip(), self.capacities.text()
        if not policies:
            self.status.setText("⚠ tick at least one policy")
            return
        if not path:
            self.status.setText("⚠ choose a trace file (CSV with header time,id,size)")
            return

        def work(progress):
            reqs = read_requests(path)
            caps = sorted(set(parse_capacities(text or "auto", reqs, "capacities")))
            return len(reqs), footprint(reqs), miss_ratio_curve(reqs, policies, caps, progress)
        self.jobs.start(work, "replay", self._on_done, status="reading the trace…")

    def cancel(self):
        self.jobs.cancel()

    def shutdown(self):
        self.jobs.shutdown()

    def _on_done(self, payload):
        n, top, results = payload
        self.results = results
        self.save_btn.setEnabled(bool(results))
        self.status.setText(f"{n:,} requests · footprint {top:,} B · {len(results)} replays")
        self._draw()
        self.finished.emit(results)

    def _draw(self):
        pi = self.plot.getPlotItem()
        for c in self.curves.values():
            pi.removeItem(c)
        self.curves = {}
        if not self.results:
            return
        key = METRICS[self.ratio_box.currentText()]
        pi.setLabel("left", self.ratio_box.currentText())
        for i, p in enumerate(dict.fromkeys(r.policy for r in self.results)):
            rows = [r for r in self.results if r.policy == p]
            x = np.array([r.capacity for r in rows], dtype=float)
            y = np.array([getattr(r, key) for r in rows], dtype=float)
            colour = LINE_COLOURS[i % len(LINE_COLOURS)]
            self.curves[p] = pi.plot(x, y, pen=pg.mkPen(colour, width=2), symbol="o", symbolSize=6,
                                     symbolBrush=colour, symbolPen="w", name=p)
        pi.enableAutoRange(x=True, y=False)  # a ratio: always the whole 0..1 scale
        pi.setYRange(0, 1.05, padding=0)

    def csv_text(self) -> str:
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(["policy", "capacity", "requests", "misses", "request_miss_ratio", "byte_miss_ratio"])
        for r in self.results:
            w.writerow([r.policy, r.capacity, r.requests, r.misses, r.request_miss_ratio, r.byte_miss_ratio])
        return out.getvalue()

    def _save_dialog(self):
        path, _ = QFileDialog.getSaveFileName(self, "Save the miss-ratio curve", "miss_ratio_curve.csv",
                                              "CSV (*.csv)")
        if path:
            try:
                atomic_write(path, self.csv_text())
            except OSError as e:
                self.status.setText(f"⚠ could not save {path}: {e.strerror or e}")
                return
            self.status.setText(f"saved {path}")
