"""Capacity surface: one policy's metric (a token hit rate, by default) over the capacities of
two tiers, as a heat map with iso-lines, filling in as the grid's runs complete.

It is a sweep (as kvviz.sweep.run_sweep; here app.surface_runs: coarse grid first, runs kept) over `tiers.<i>.capacity_gb` (or `capacity_blocks`, as
the tier gives its size) of the scenario as edited, with `policies` cut to the metric's one
policy so each point runs it alone (and Belady, which belady_gap always needs). The default
grid spans each tier from a 32nd of the workload's unique blocks to all of them, doubling."""
from __future__ import annotations

import copy
import math
import shlex
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QGridLayout, QHBoxLayout, QLabel, QLineEdit, QSizePolicy, QVBoxLayout, QWidget

from kvviz import ScenarioError
from kvviz.format import format_value, readable_number
from kvviz.sweep import Axis, SweepResult, grid_size, parse_values, shaped

from ..background import JobControls
from ..surface_runs import SurfaceRuns, nearest_filled
from ..worker import child_context
from ._common import caption_label, hover_point, info_label, no_si_prefix, show_hover, style_plot
from .heat_map import MIN_TICK_GAP_PX, MIN_TICK_GAP_PY, draw_heat_map, thinned_ticks
from .iso_lines import iso_segments, nice_levels
from .streamed_grid import StreamedGrid
from .vector_image import vector_colour_bar

STEPS = 6        # default values per axis: the working set / 2^5 … the working set
# a policy's metrics offered (policies.<p>.<name>; per tier: policies.<p>.tiers.<t>.<name>)
# (those a run has: the timed engine's TTFTs and upper-tier share too)
METRICS = ("token_hit_rate", "request_hit_rate", "block_hit_ratio", "belady_gap", "dram_or_above_hit_share",
           "ttft_p50_ms", "ttft_p99_ms")
TIER_METRICS = ("token_hit_rate", "hit_share")
ISO_PEN = pg.mkPen("#ffffff", width=1.6)


def _two_figures(v: float, up: bool = False) -> float:
    """`v` to two significant figures (rounded up with `up`)."""
    mag = 10.0 ** (math.floor(math.log10(v)) - 1)
    return (math.ceil(v / mag - 1e-9) if up else round(v / mag)) * mag


def default_values(unique_blocks: int, block_gb: float, unit: str) -> tuple:
    """STEPS capacities doubling up to the workload's unique blocks (all of it fits: LRU reaches
    the ceiling there), in the tier's unit, never below one block."""
    top = max(int(unique_blocks), 1)
    blocks = sorted({max(1, round(top / 2 ** k)) for k in range(STEPS)})
    if unit == "capacity_blocks":
        return tuple(blocks)
    least = _two_figures(block_gb, up=True)
    return tuple(sorted({float(f"{max(_two_figures(b * block_gb), least):.12g}") for b in blocks}))


def _num(v) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else np.nan


class CapacitySurfaceView(QWidget):
    finished = Signal(object)  # SweepResult, for tests and screenshots
    stopped = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.y_tier, self.x_tier, self.metric_box = QComboBox(), QComboBox(), QComboBox()
        self.y_values, self.x_values = QLineEdit(), QLineEdit()
        self.metric_box.setEditable(True)
        self.metric_box.setMinimumWidth(260)
        for box, values in ((self.y_tier, self.y_values), (self.x_tier, self.x_values)):
            box.currentIndexChanged.connect(lambda _i, b=box, v=values: self._fill_default(b, v))
            values.setPlaceholderText("1,2,4  or  start:stop[:step]")
            values.returnPressed.connect(self.run)
        self.jobs = JobControls(self, "Run surface", "runs")
        self.jobs.run_btn.clicked.connect(self.run)
        self.jobs.stopped.connect(self.stopped)
        self.status = self.jobs.status

        form = QGridLayout()
        form.addWidget(QLabel("rows: tier"), 0, 0)
        form.addWidget(self.y_tier, 0, 1)
        form.addWidget(QLabel("capacities"), 0, 2)
        form.addWidget(self.y_values, 0, 3)
        form.addWidget(QLabel("columns: tier"), 1, 0)
        form.addWidget(self.x_tier, 1, 1)
        form.addWidget(QLabel("capacities"), 1, 2)
        form.addWidget(self.x_values, 1, 3)
        form.addWidget(QLabel("metric"), 2, 0)
        form.addWidget(self.metric_box, 2, 1)
        buttons = QHBoxLayout()
        for w in (self.jobs.run_btn, self.jobs.cancel_btn):
            buttons.addWidget(w)
        buttons.addWidget(self.jobs.progress, 1)
        form.addLayout(buttons, 2, 2, 1, 2)
        form.addWidget(self.status, 3, 0, 1, 4)
        form.setColumnStretch(3, 1)

        self.caption = caption_label()
        self.plot = pg.PlotWidget(background="w")
        self.plot.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Expanding)
        style_plot(self.plot.getPlotItem(), grid=(False, False))
        self.bar = None
        self.info = info_label()
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(self.caption)
        lay.addWidget(self.plot, 1)
        lay.addWidget(self.info)
        self.plot.scene().sigMouseMoved.connect(self._on_move)

        self.data: dict | None = None
        self.source = "<scenario>"
        self.tiers: list[str] = []
        self.units: list[str] = []  # per tier: capacity_gb or capacity_blocks, as the scenario gives it
        self._unique, self._block_gb = 1, 1.0
        self.result: SweepResult | None = None
        self._shown: SweepResult | None = None
        self._axes: tuple = ()
        self._metric = ""
        self.grid = StreamedGrid(self, self._draw_partial)  # the running surface's values so far
        self.runs = SurfaceRuns()  # every run kept: a cell already run is never run again
        self._before: tuple | None = None
        self._ran_before = 0

    @property
    def job(self):
        return self.jobs.job

    # --- the scenario -------------------------------------------------------------------------
    def set_scenario(self, data: dict, source: str, metrics: dict, new: bool = False) -> None:
        """Offer the run's tiers and its policies' metrics; keep the user's choices unless the
        scenario is `new` (another file) or its tiers changed."""
        self.data, self.source = data, source
        tiers = list(metrics.get("tiers") or {})
        listed = data.get("tiers") if isinstance(data.get("tiers"), list) else []
        units = ["capacity_blocks" if i < len(listed) and isinstance(listed[i], dict)
                 and listed[i].get("capacity_blocks") is not None else "capacity_gb" for i in range(len(tiers))]
        w = metrics.get("workload") or {}
        self._unique = int(w.get("unique_blocks") or 1)
        self._block_gb = float(w.get("block_bytes") or 1e9) / 1e9
        changed = new or tiers != self.tiers or units != self.units
        self.tiers, self.units = tiers, units
        if changed:
            self.clear()
            for box, pick in ((self.y_tier, len(tiers) - 2), (self.x_tier, len(tiers) - 1)):
                box.blockSignals(True)
                box.clear()
                box.addItems([t.upper() for t in tiers])
                box.setCurrentIndex(max(pick, 0))
                box.blockSignals(False)
            self._fill_default(self.y_tier, self.y_values)
            self._fill_default(self.x_tier, self.x_values)
        names = []
        for p, m in (metrics.get("policies") or {}).items():
            names += [f"policies.{p}.{k}" for k in METRICS if k in m]
            names += [f"policies.{p}.tiers.{t}.{k}" for t in tiers for k in TIER_METRICS]
        keep = self.metric_box.currentText() if not changed else ""
        self.metric_box.clear()
        self.metric_box.addItems(names)
        shown = metrics.get("trace_policy")
        self.metric_box.setCurrentText(keep or (f"policies.{shown}.token_hit_rate" if shown else names[0] if names
                                                else ""))
        enough = len(tiers) >= 2
        self.jobs.run_btn.setEnabled(enough and self.job is None)
        if changed and enough:
            self.status.setText(f"{Path(source).name}: choose two tiers, their capacities and a metric, "
                                "then Run surface (one run per cell)")
        if not enough:
            self.status.setText("A capacity surface needs two tiers; this scenario has one (the Sweep tab "
                                "varies one capacity).")

    def _fill_default(self, box: QComboBox, values: QLineEdit) -> None:
        i = box.currentIndex()
        if 0 <= i < len(self.tiers):
            vals = default_values(self._unique, self._block_gb, self.units[i])
            values.setText(",".join(format_value(v).removesuffix(".0") for v in vals))

    def path_of(self, i: int) -> str:
        return f"tiers.{i}.{self.units[i]}"

    def configure(self, y_tier: str, y_values: str, x_tier: str, x_values: str, metric: str) -> None:
        """Axes and metric set programmatically (tests, screenshots)."""
        self.y_tier.setCurrentIndex(self.tiers.index(y_tier))
        self.x_tier.setCurrentIndex(self.tiers.index(x_tier))
        self.y_values.setText(y_values)
        self.x_values.setText(x_values)
        self.metric_box.setCurrentText(metric)

    def clear(self) -> None:
        """Forget the last surface: its grid, axes (names and ticks), caption, hover line and the
        `kvviz sweep` command that computed it (a running surface is cancelled)."""
        if self.job is not None:
            self.jobs.cancel()
            self._before = None  # the cancelled run restores nothing: the surface goes
        self.grid.stop()
        self.result = self._shown = None
        self._axes, self._metric = (), ""
        pi = self.plot.getPlotItem()
        pi.clear()
        for side in ("bottom", "left"):  # the last surface's tiers and capacities; no numbers for none
            pi.setLabel(side, "")
            pi.getAxis(side).setTicks(None)
            pi.getAxis(side).setStyle(showValues=False)
        self.caption.setText(" ")
        self.info.setText(" ")
        self.status.setText("")
        if self.bar is not None:
            self.bar.hide()

    def not_applicable(self, why: str) -> None:
        """The run open now has no tiers to sweep: the last surface goes, and the page says why."""
        self.clear()
        self.data, self.tiers, self.units = None, [], []
        for box in (self.y_tier, self.x_tier):
            box.blockSignals(True)
            box.clear()
            box.blockSignals(False)
        self.y_values.clear()
        self.x_values.clear()
        self.metric_box.clear()
        self.jobs.run_btn.setEnabled(False)
        self.status.setText(why)

    # --- running ------------------------------------------------------------------------------
    def base_for(self, metric: str) -> dict:
        """The scenario as edited, running only the metric's policy (and Belady, for belady_gap)."""
        data = copy.deepcopy(self.data)
        parts = metric.split(".")
        if len(parts) >= 3 and parts[0] == "policies":
            policy, store = parts[1], data.get("store")
            prefetched = policy.endswith("_prefetch") and policy not in (data.get("policies") or [])
            if prefetched:  # `<policy>_prefetch` is the policy's run with store.prefetch: run that policy
                policy = policy.removesuffix("_prefetch")
            elif isinstance(store, dict) and store.get("prefetch"):
                store["prefetch"] = False  # the metric's run is the one without prefetch: skip the other
            data["policies"], data["trace_policy"] = [policy], policy
        return data

    def command(self) -> str:
        """The `kvviz sweep` command that computes the same grid."""
        if not self._axes:
            return ""
        base = self.base_for(self._metric)
        sets = [f'policies=["{base["trace_policy"]}"]', f"trace_policy={base['trace_policy']}"] \
            if base.get("policies") != self.data.get("policies") else []
        if (base.get("store") or {}).get("prefetch") != (self.data.get("store") or {}).get("prefetch"):
            sets.append("store.prefetch=false")
        words = ["kvviz", "sweep", self.source] + [w for s in sets for w in ("--set", s)]
        for a in self._axes:
            words += ["--param", a.path, "--values", ",".join(format_value(v).removesuffix(".0") for v in a.values)]
        words += ["--metric", self._metric, "--csv"]
        return shlex.join(words)

    def run(self) -> None:
        if self.data is None or self.job is not None or len(self.tiers) < 2:
            return
        yi, xi = self.y_tier.currentIndex(), self.x_tier.currentIndex()
        if yi == xi:
            self.status.setText("⚠ choose two different tiers for the rows and the columns")
            return
        try:
            axes = (Axis(self.path_of(yi), parse_values(self.y_values.text(), f"{self.tiers[yi]} capacities")),
                    Axis(self.path_of(xi), parse_values(self.x_values.text(), f"{self.tiers[xi]} capacities")))
        except ScenarioError as e:
            self.status.setText(f"⚠ {e}")
            return
        metric = self.metric_box.currentText().strip()
        base, source = self.base_for(metric), self.source
        # what Cancel goes back to: the surface drawn now (or none), its axes and its command
        self._before = (self.result, self._shown, self._axes, self._metric, self.caption.text())
        self._axes, self._metric = axes, metric
        self.grid.start(axes)
        runs, emit, ctx = self.runs, self.grid.point.emit, child_context()
        self._ran_before = runs.ran
        self.jobs.start(lambda progress: runs.fill(base, axes, metric, source, progress, emit, ctx),
                        "capacity surface", self._on_done, restore=self._restore)

    def cancel(self):
        self.jobs.cancel()

    def shutdown(self):
        self.jobs.shutdown()

    def _draw_partial(self):
        """The runs so far, coarse grid first: a cell not run yet shows its nearest run's value
        (said in the caption; its hover says "not run yet") until its own run refines it."""
        if self.grid.values is not None and self.job is not None and any(v is not None for v in self.grid.values):
            self._draw(SweepResult(self._axes, self._metric, shaped(self._axes, self.grid.values)), coarse=True)

    def _restore(self):
        """Cancelled or failed: the surface drawn before the run, as it was (or none); the runs
        that ended are kept, so Run surface again runs only the others."""
        self.grid.stop()
        if self._before is None:  # cleared meanwhile (another scenario): nothing comes back
            return
        res, shown, axes, metric, caption = self._before
        self._axes, self._metric = axes, metric
        self.result = res
        if shown is None:
            self.result = self._shown = None
            self.plot.getPlotItem().clear()
            if self.bar is not None:
                self.bar.hide()
            self.caption.setText(" ")
        else:
            self._draw(shown)
            self.caption.setText(caption)
        kept = self.runs.ran - self._ran_before
        note = f" ({kept} {'run' if kept == 1 else 'runs'} kept: Run surface again runs only the others)" if kept else ""
        text = self.status.text()
        self.status.setText((text if text.startswith("⚠") and "cancelled" not in text else
                             "cancelled: the surface shown is the one before") + note)

    def _on_done(self, values: list):
        self.grid.stop()
        res = SweepResult(self._axes, self._metric, shaped(self._axes, values))
        self.result = res
        reused = self.runs.reused
        again = f" ({reused} reused)" if reused else ""
        self.status.setText(f"{grid_size(res.axes)} runs done{again} · the same grid on the command line: "
                            f"{self.command()}")
        self._draw(res)
        self.finished.emit(res)

    # --- drawing ------------------------------------------------------------------------------
    def _axis_name(self, axis: Axis) -> str:
        i = int(axis.path.split(".")[1])
        unit = "blocks" if self.units[i] == "capacity_blocks" else "GB"
        return f"{self.tiers[i].upper()} capacity ({unit})"

    def _draw(self, res: SweepResult, coarse: bool = False) -> None:
        pi = self.plot.getPlotItem()
        pi.clear()
        self._shown = res
        a, b = res.axes
        done = sum(v is not None for row in res.values for v in row)
        painted, stand_ins = nearest_filled(res.values) if coarse else (res.values, 0)
        grid = np.array([[_num(v) for v in row] for row in painted], dtype=float)
        cmap, levels, _ = draw_heat_map(pi, grid, res.metric)
        finite = grid[np.isfinite(grid)]
        # no iso-lines through stand-in cells: they would trace the coarse blocks, not the surface
        steps = nice_levels(float(finite.min()), float(finite.max())) if finite.size and not stand_ins else []
        for level in steps:
            x, y = iso_segments(grid, level)
            if not x.size:
                continue
            pi.addItem(pg.PlotCurveItem(x, y, connect="pairs", pen=ISO_PEN))
            k = int(np.argmax(x))  # the label at the line's right end
            label = pg.TextItem(_short(level, res.metric), color="#ffffff", anchor=(1.05, 0.5))
            label.setPos(x[k], y[k])
            pi.addItem(label)
        pi.setLabel("bottom", self._axis_name(b))
        pi.setLabel("left", self._axis_name(a))
        vb = pi.getViewBox()
        room_x = vb.width() if vb.width() > 50 else self.plot.width() * 0.75
        room_y = vb.height() if vb.height() > 50 else self.plot.height() * 0.75
        for side in ("bottom", "left"):
            pi.getAxis(side).setStyle(hideOverlappingLabels=False, showValues=True)
        pi.getAxis("bottom").setTicks([thinned_ticks([_tick(v) for v in b.values], room_x, MIN_TICK_GAP_PX)])
        pi.getAxis("left").setTicks([thinned_ticks([_tick(v) for v in a.values], room_y, MIN_TICK_GAP_PY)])
        if self.bar is None:
            self.bar = vector_colour_bar(values=levels, colorMap=cmap, interactive=False)
            no_si_prefix(self.bar.axis)  # a hit rate read "(x0.001)" 200…650
            pi.layout.addItem(self.bar, 2, 5)
            pi.layout.setColumnFixedWidth(4, 5)
        self.bar.setColorMap(cmap)
        self.bar.setLevels(levels)
        self.bar.axis.setLabel(res.metric)
        self.bar.show()
        pi.setRange(xRange=(-0.5, len(b.values) - 0.5), yRange=(-0.5, len(a.values) - 0.5), padding=0)
        iso = f" · white iso-lines at {', '.join(_short(v, res.metric) for v in steps)}" if steps else ""
        coarse_note = f" (coarse: {stand_ins} cells show their nearest run's value until they run)" \
            if stand_ins else ""
        self.caption.setText(f"<b>Capacity surface</b> · {res.metric} over {self._axis_name(a)} × "
                             f"{self._axis_name(b)} · {done} of {grid.size} runs{coarse_note}{iso}")

    # --- numbers: hover and the data table ----------------------------------------------------
    def _on_move(self, pos):
        show_hover(self.plot, self.info, pos, self.text_at(pos))

    def text_at(self, scene_pos) -> str | None:
        res, at = self._shown, hover_point(self.plot, scene_pos)
        if res is None or at is None:
            return None
        a, b = res.axes
        i, j = round(at.y()), round(at.x())
        if not (0 <= i < len(a.values) and 0 <= j < len(b.values)):
            return None
        v = res.values[i][j]
        shown = "not run yet" if v is None else readable_number(v)
        return (f"{self._axis_name(a)} = {readable_number(a.values[i])} · {self._axis_name(b)} = "
                f"{readable_number(b.values[j])} · {res.metric} = {shown}")

    def data_rows(self) -> tuple[list[str], list[list]] | None:
        """One row per grid point: both capacities (by field path) and the metric, of the grid
        drawn (a running surface's too: a point not run yet is empty)."""
        res = self._shown
        if res is None:
            return None
        return [a.path for a in res.axes] + [res.metric], [[x, y, v] for (x, y), v in res.points()]


def _tick(v) -> float | int:
    return int(v) if isinstance(v, float) and v.is_integer() else v


def _short(level: float, metric: str) -> str:
    """An iso-line's label: a percentage for rates and shares."""
    last = metric.rsplit(".", 1)[-1]
    if last == "belady_gap":
        return f"{100 * level:g} pts"
    return f"{100 * level:g}%" if last in METRICS + TIER_METRICS else f"{level:g}"
