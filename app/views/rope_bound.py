"""What RoPE proves about distance, against what the scenario assumes (seed 000).

The proven curve is RoFormer's relative upper bound B(|m−n|) on the attention logit
|⟨q_m, k_n⟩| for a head dimension and base, shown raw (it oscillates) and as its
non-increasing envelope; the assumed curve is the attention-mass profile the scenario feeds
its simulation. Both are scaled to 1 at distance 0: the plot compares shapes, not magnitudes.
Everything comes from `kvviz.mechanisms.rope_window.rope_bound.bound_vs_assumption`; nothing simulates.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QCheckBox, QDoubleSpinBox, QGridLayout, QLabel, QSpinBox, QWidget

from kvviz.mechanisms.rope_window.rope_bound import bound_vs_assumption
from kvviz.result import Result

from ._common import NoteStack, caption_label, carries, kinds_carrying, stack_vertically, style_plot

BOUND_RAW = "#9ecae1"
BOUND_ENV = "#0072B2"
ASSUMED = "#D55E00"
MAX_DISTANCE = 32768


class RopeBoundView(QWidget):
    """RoPE's proven logit bound vs the scenario's assumed attention profile."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.head_dim = QSpinBox()
        self.head_dim.setRange(2, 1024)
        self.head_dim.setSingleStep(2)
        self.head_dim.setValue(128)
        self.head_dim.setToolTip("Head dimension d (even): RoPE rotates d/2 pairs")
        self.base = QDoubleSpinBox()
        self.base.setRange(2.0, 1e9)
        self.base.setDecimals(0)
        self.base.setSingleStep(1000)
        self.base.setValue(10000)
        self.base.setToolTip("RoPE base θ: pair j rotates by θ^(−2j/d) per position (10000 in RoFormer/Llama 2)")
        self.max_distance = QSpinBox()
        self.max_distance.setRange(1, MAX_DISTANCE)
        self.max_distance.setValue(64)
        self.max_distance.setSuffix(" positions")
        self.max_distance.setToolTip("Largest |m − n| shown; the envelope is valid up to it")
        for w, width in ((self.head_dim, 90), (self.base, 120), (self.max_distance, 150)):
            w.setFixedWidth(width)
        self.log_y = QCheckBox("log y")
        # two rows, so the tab never forces the window wider than the plots need
        controls = QGridLayout()
        controls.setContentsMargins(8, 4, 8, 4)
        controls.setHorizontalSpacing(8)
        cells = (("head dim", self.head_dim, 0, 0), ("base θ", self.base, 0, 2),
                 ("distances up to", self.max_distance, 1, 0))
        for text, w, row, col in cells:
            lab = QLabel(text)
            lab.setStyleSheet("color:#222;")
            controls.addWidget(lab, row, col)
            controls.addWidget(w, row, col + 1)
        controls.addWidget(self.log_y, 1, 2, 1, 2)
        controls.setColumnStretch(4, 1)

        self.plot = pg.PlotWidget(background="w")
        pi = self.plot.getPlotItem()
        style_plot(pi, left="relative to distance 0", bottom="distance |m − n| (positions)")
        pi.setMouseEnabled(x=True, y=False)
        self.legend = pi.addLegend(offset=(-10, 8), brush=pg.mkBrush(255, 255, 255, 230),
                                   pen=pg.mkPen("#cccccc"), labelTextColor="#222222", labelTextSize="9.5pt")
        self.raw_curve = pi.plot([], [], pen=pg.mkPen(BOUND_RAW, width=1.2),
                                 name="B(|m−n|): RoPE's logit bound (oscillates)")
        self.envelope_curve = pi.plot([], [], pen=pg.mkPen(BOUND_ENV, width=2.6),
                                      name="proven: non-increasing envelope of B")
        self.assumed_curve = pi.plot([], [], pen=pg.mkPen(ASSUMED, width=2.2, style=Qt.DashLine),
                                     symbol="o", symbolSize=5, symbolBrush=ASSUMED, symbolPen=None,
                                     name="assumed: the scenario's attention profile", connect="finite")
        self.caption = caption_label()

        body = QWidget()
        bar = QWidget()
        bar.setLayout(controls)
        bar.setStyleSheet("background:white;")
        stack_vertically(bar, self.plot, self.caption, stretch=self.plot, into=body)
        self.stack = NoteStack(body)
        stack_vertically(self.stack, stretch=self.stack, into=self)

        self.result: Result | None = None
        self.data: dict | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(60)
        self._timer.timeout.connect(self.redraw)
        for w in (self.head_dim, self.base, self.max_distance):
            w.valueChanged.connect(lambda *_: self._timer.start())
        self.log_y.toggled.connect(lambda *_: self.redraw())

    def set_result(self, result: Result) -> None:
        self.result = result
        if not carries(result, "rope_bound"):
            self.data = None
            self.stack.show_note(f"The RoPE bound view applies to {kinds_carrying('rope_bound')} scenarios:\n"
                                 "it compares what RoPE proves about distance with the attention "
                                 "profile such a scenario assumes.")
            return
        self.stack.show_content()
        self.redraw()

    def redraw(self) -> None:
        if self.result is None or self.stack.showing_note:
            return
        self._timer.stop()
        d = bound_vs_assumption(self.result.scenario, max_distance=self.max_distance.value(),
                                head_dim=self.head_dim.value() // 2 * 2, base=self.base.value())
        self.data = d
        x = d["distance"].astype(float)
        log = self.log_y.isChecked()
        assumed = d["assumed"].astype(float)
        if log:
            assumed = np.where(assumed > 0, assumed, np.nan)  # zero mass has no log: a gap
        show_dots = len(x) <= 80
        self.assumed_curve.setSymbol("o" if show_dots else None)
        pi = self.plot.getPlotItem()
        pi.setLogMode(x=False, y=log)
        self.raw_curve.setData(x, d["bound"])
        self.envelope_curve.setData(x, d["envelope"])
        self.assumed_curve.setData(x, assumed)
        pi.setLabel("left", "relative to distance 0" + (" (log scale)" if log else ""))
        pi.setXRange(0, float(x[-1]) if len(x) else 1.0, padding=0.02)
        if log:
            finite = np.concatenate([d["bound"], assumed[np.isfinite(assumed)]])
            lo = max(float(finite[finite > 0].min()), 1e-12)
            pi.setYRange(np.log10(lo), 0.05, padding=0.02)
        else:
            pi.setYRange(0, 1.05, padding=0.02)
        tail = float(d["envelope"][-1]) if len(x) else 1.0
        self.caption.setText(
            f"<b>proven:</b> RoPE bounds the logit |q<sub>m</sub>·k<sub>n</sub>| (not softmax mass) by a "
            f"factor that depends only on q and k times B(|m−n|) (RoFormer §3.4.3); for head dim {d['head_dim']} and "
            f"θ = {d['base']:,.0f} its envelope falls to {tail:.2f} at distance {int(x[-1]) if len(x) else 0}, "
            f"and the envelope holds only up to the largest distance shown.<br>"
            f"<b>assumed:</b> the scenario's attention profile — {d['assumption']}. "
            f"Both curves are scaled to 1 at distance 0: compare shapes, not magnitudes; "
            f"a small logit bound does not by itself make attention mass small.")
