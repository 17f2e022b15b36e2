"""Operating point view (issue 31 item 6): each model's TTFT cut, prefill and GPU-time speedups
against the load, with the paper's figures marked: `kvviz operating-point` in the app.

Run when asked (Run), in the background, cancellable, on the scenario as edited: one run per model
and load (kvviz.operating_point.evaluate_data, the CLI's own computation). The figure shown is the
command's own SVG (kvviz.operating_point.figure_svg, drawn by QSvgWidget), so the app and the file
are the same figure; a model selector picks whose. The table under it gives each load's numbers and
whether recompute's queue is steady or grows (the figure's red λ labels), and "Copy command" the
CLI line that writes the figures."""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QGuiApplication
from PySide6.QtSvg import QSvgRenderer
from PySide6.QtSvgWidgets import QSvgWidget
from PySide6.QtWidgets import (
    QComboBox,
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

from kvviz import ScenarioError
from kvviz.operating_point import (
    GPU,
    HEADLINE,
    PREFILL,
    RATES,
    SATURATED,
    SHORT,
    TTFT,
    command_line,
    conclusion,
    evaluate_data,
    figure_svg,
    headline_claims,
)

from ..background import JobControls

STEADY_COLOUR, GROWS_COLOUR = "#FFFFFF", "#F3D0D0"  # a load whose queue grows: the figure's red label
COLUMNS = ("λ (turns/s)", "queue", "queue (mid)", "recompute TTFT (s)", "p (prefill share)",
           *(SHORT[m] for m in HEADLINE), "together")


def _num(v, pct=False) -> str:
    if not isinstance(v, (int, float)) or v != v:
        return "—"
    return f"{v * 100:.1f}%" if pct else f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def parse_rates(text: str) -> tuple:
    """The rates box: turns/s, comma-separated (blank: kvviz's default); saturated always added."""
    from kvviz.sweep import parse_values
    rates = tuple(float(v) for v in parse_values(text, "rates")) if text.strip() else RATES
    if any(r <= 0 for r in rates):
        raise ScenarioError("an arrival rate is above 0 turns/s", "rates")
    return (*rates, SATURATED)


class OperatingPointView(QWidget):
    finished = Signal(object)  # the list of ModelPoints (tests, screenshots)
    stopped = Signal()         # the job ended: done, failed or cancelled

    def __init__(self, parent=None):
        super().__init__(parent)
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.jobs = JobControls(self, "Run", "runs")
        self.jobs.run_btn.setToolTip("one run per model and load, in the background (Cancel stops it)")
        self.jobs.run_btn.clicked.connect(self.run)
        self.jobs.stopped.connect(self.stopped)
        self.status = self.jobs.status
        self.rates = QLineEdit()
        self.rates.setPlaceholderText(",".join(f"{r:g}" for r in RATES))
        self.rates.setToolTip("arrival rates in turns/s (blank: " + ", ".join(f"{r:g}" for r in RATES)
                              + "); flat out (saturated) is always added")
        self.rates.setMaximumWidth(220)
        self.model_box = QComboBox()
        self.model_box.setMinimumWidth(140)
        self.model_box.currentIndexChanged.connect(self._show_model)
        self.copy_btn = QPushButton("Copy command")
        self.copy_btn.setToolTip("the kvviz line that computes these figures and writes one SVG per model")
        self.copy_btn.clicked.connect(self.copy_command)
        self.svg = QSvgWidget()
        self.svg.renderer().setAspectRatioMode(Qt.KeepAspectRatio)
        self.svg.setMinimumHeight(160)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)

        top = QHBoxLayout()
        for w in (self.jobs.run_btn, self.jobs.cancel_btn, self.jobs.progress):
            top.addWidget(w)
        top.addWidget(QLabel("λ"))
        top.addWidget(self.rates)
        top.addWidget(QLabel("model"))
        top.addWidget(self.model_box)
        top.addWidget(self.copy_btn)
        top.addStretch(1)
        split = QSplitter(Qt.Vertical)
        split.addWidget(self.svg)
        split.addWidget(self.table)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        split.setSizes([600, 150])  # the figure first: the table scrolls
        lay = QVBoxLayout(self)
        lay.addLayout(top)
        lay.addWidget(self.status)  # its own row: progress, the outcome and errors always have room
        # before a run what Run does; after it the chosen model's conclusion (the figure's first line)
        lay.addWidget(self.note)
        lay.addWidget(split, 1)

        self.data: dict = {}
        self.source = "<scenario>"
        self.edited = False  # the scenario differs from its file: the command runs the file as saved
        self.models: list = []  # ModelPoints of the last run
        self.svgs: dict[str, str] = {}  # preset -> the SVG shown (figure_svg's text)
        self.intro = ""
        self._set_models([])

    @property
    def job(self):
        return self.jobs.job

    # --- the scenario ----------------------------------------------------------------------------

    def set_scenario(self, scenario, data: dict, source: str, edited: bool = False):
        """The scenario as edited; a previous run is forgotten (it was of the scenario as it was)."""
        if self.job is not None:
            self.jobs.cancel()
        self.data, self.source, self.edited = data, source, edited
        self.models, self.svgs = [], {}
        presets = list(headline_claims(scenario, data)) if data else []
        self._set_models(presets)
        self.svg.load(b"")
        self.table.setRowCount(0)
        self.jobs.run_btn.setEnabled(bool(presets))
        self.intro = (
            f"{len(presets)} models with the paper's TTFT cut, prefill and GPU-time speedups ({', '.join(presets)}): "
            "Run computes each against the load, from λ = 0.25 turns/s to flat out, one run per model and load "
            "(kvviz operating-point). Red λ: recompute's queue grows (no operating point there)."
            if presets else "No [[claim]] rows on the TTFT cut, prefill or GPU-time speedup with only a model.preset")
        self.note.setText(self.intro)
        self.status.setText(" ")

    def _set_models(self, presets):
        self.model_box.blockSignals(True)
        self.model_box.clear()
        self.model_box.addItems(presets)
        self.model_box.blockSignals(False)
        self.model_box.setEnabled(bool(presets))
        self.copy_btn.setEnabled(bool(presets))

    # --- the job ---------------------------------------------------------------------------------

    def run(self):
        if self.job is not None or not self.data:
            return
        try:
            rates = parse_rates(self.rates.text())
        except ScenarioError as e:
            self.status.setText(f"⚠ {e}")
            return
        data, source = self.data, self.source
        total = self.model_box.count() * len(rates)
        self.jobs.start(lambda progress: (progress(0, total), evaluate_data(data, source, (), rates,
                                                                             progress=progress))[1],
                        "the operating points", self._ran, status=f"running {total} runs…")

    def _ran(self, models):
        self.models = list(models)
        self.svgs = {mp.preset: figure_svg(mp, f"{self._name()}, {mp.preset}") for mp in self.models}
        chosen = self.model_box.currentText()
        self._set_models([mp.preset for mp in self.models])
        if chosen in self.svgs:
            self.model_box.setCurrentText(chosen)
        self._show_model()
        runs = sum(len(mp.points) for mp in self.models)
        held = [mp.preset for mp in self.models if mp.holding()]
        self.status.setText(f"ran {runs} runs; the paper's figures hold together at a steady load for "
                            + (", ".join(held) if held else "no model"))
        self.finished.emit(self.models)

    def _name(self) -> str:
        from pathlib import Path
        return Path(self.source).stem

    def chosen(self):
        """The ModelPoints shown, or None before a run."""
        return next((mp for mp in self.models if mp.preset == self.model_box.currentText()), None)

    def _show_model(self, *_):
        mp = self.chosen()
        if mp is None:
            return
        self.svg.load(self.svgs[mp.preset].encode())
        self.svg.renderer().setAspectRatioMode(Qt.KeepAspectRatio)  # a new document resets it
        self.note.setText(f"{mp.preset}: {conclusion(mp)}")
        self.table.setRowCount(len(mp.points))
        for r, p in enumerate(mp.points):
            texts = self._cells(p)
            grows = not p.steady
            for c, text in enumerate(texts):
                item = QTableWidgetItem(text)
                item.setBackground(QColor(GROWS_COLOUR if grows else STEADY_COLOUR))
                if c == 1 and grows:
                    item.setToolTip("recompute's queue builds up (or the turns arrive flat out): not an operating point")
                self.table.setItem(r, c, item)

    @staticmethod
    def _cells(p) -> list[str]:
        if p.error:
            return ["saturated" if p.rate == SATURATED else f"{p.rate:g}", "error", p.error] + [""] * (len(COLUMNS) - 3)
        vals = [f"{_num(p.values.get(m), m == TTFT)} ({p.verdicts.get(m, '—')})" for m in (TTFT, PREFILL, GPU)]
        return ["saturated" if p.rate == SATURATED else f"{p.rate:g}",
                "steady" if p.steady else "grows",
                "—" if p.queue_len_mid is None else f"{p.queue_len_mid:,}",
                _num(p.recompute_ttft_s), _num(p.recompute_prefill_share, True), *vals,
                "yes" if p.holds else "no"]

    # --- what the tab offers ---------------------------------------------------------------------

    def command(self) -> str:
        model = self.model_box.currentText()
        return command_line(self.source, [model] if model else [], svg_dir=".") if self.model_box.count() else ""

    def copy_command(self) -> str:
        text = self.command()
        if text:
            QGuiApplication.clipboard().setText(text)
            self.status.setText(f"copied: {text}" + (" (the file as saved: the edits are not in it)"
                                                     if self.edited else ""))
        return text

    def data_rows(self):
        """Every model's loads, as the table shows them (File → Export → Data as CSV)."""
        if not self.models:
            return None
        rows = [[mp.preset, *self._cells(p)] for mp in self.models for p in mp.points]
        return ["model", *COLUMNS], rows

    def renderer(self) -> QSvgRenderer:
        return self.svg.renderer()

    def shutdown(self):
        self.jobs.shutdown()
