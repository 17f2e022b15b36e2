"""Sweep view: vary one or two scenario fields, collect one metric, see a line chart or a
heat map (the Engram feasibility map is slack_us over layer × latency). Runs kvviz.sweep in a
background thread, on this computer's worker processes or a Dask cluster ("run on"), with
progress, Cancel, and the chart filling in as runs complete."""
from __future__ import annotations

import typing

import numpy as np
import pyqtgraph as pg
from pydantic import BaseModel
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSizePolicy,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from kvviz import ScenarioError
from kvviz.export.colours import series_colour
from kvviz.format import format_value, readable_number
from kvviz.metric_paths import metric_family, metric_paths
from kvviz.sweep import Axis, SweepResult, grid_size, parse_values, run_sweep, shaped

from ..background import JobControls
from ..run_on import RunOn
from ._common import hover_point, info_label, nearest_point, show_hover, style_plot
from .heat_map import MIN_TICK_GAP_PX, MIN_TICK_GAP_PY, draw_heat_map, thinned_ticks
from .streamed_grid import StreamedGrid
from .vector_image import vector_colour_bar

MAX_CELL_TEXT = 400  # write values into heat-map cells only for grids this small


def numeric_paths(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Dotted paths of the int/float/bool fields of a scenario model (sweepable fields)."""
    out = []
    for name, f in model.model_fields.items():
        ann = f.annotation
        path = f"{prefix}{name}"
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            out += numeric_paths(ann, path + ".")
            continue
        args = typing.get_args(ann) or (ann,)
        if any(a in (int, float, bool) for a in args):
            out.append(path)
    return out


# The metric a new scenario's sweep starts with, the first of these it reports: what a policy
# comparison is about (the first numeric metric was AttentionStore's `conversations`, an input).
PREFERRED_METRICS = ("policies.*.hit_rate", "policies.*.token_hit_rate", "token_hit_rate", "hit_rate", "mean_ttft_ms")


def default_metric(names: list[str]) -> str:
    return next((m for m in PREFERRED_METRICS if m in names), names[0])


class SweepView(QWidget):
    finished = Signal(object)  # SweepResult, for tests and screenshots
    stopped = Signal()         # the sweep ended: done, failed or cancelled

    def __init__(self, parent=None):
        super().__init__(parent)
        self.memory_limit = lambda: None  # the size guard's limit in GB (the window's setting; None: kvviz's)
        self.p1, self.p2 = QComboBox(), QComboBox()
        self.v1, self.v2 = QLineEdit(), QLineEdit()
        for c in (self.p1, self.p2):
            c.setEditable(True)
            c.setMinimumWidth(220)
        for v in (self.v1, self.v2):
            v.setPlaceholderText("1,2,4  or  start:stop[:step]")
        self.use2 = QCheckBox("second parameter")
        self.use2.toggled.connect(lambda on: (self.p2.setEnabled(on), self.v2.setEnabled(on)))
        self.use2.setChecked(False)
        self.p2.setEnabled(False)
        self.v2.setEnabled(False)
        self.metric_box = QComboBox()
        self.metric_box.setEditable(True)
        self.metric_box.setMinimumWidth(200)
        self.jobs = JobControls(self, "Run sweep", "runs")
        self.jobs.run_btn.clicked.connect(self.run)
        self.jobs.stopped.connect(self.stopped)
        self.status = self.jobs.status
        self.run_on = RunOn(self.status.setText, "the grid")

        form = QGridLayout()
        form.addWidget(QLabel("parameter"), 0, 0)
        form.addWidget(self.p1, 0, 1)
        form.addWidget(QLabel("values"), 0, 2)
        form.addWidget(self.v1, 0, 3)
        form.addWidget(self.use2, 1, 0)
        form.addWidget(self.p2, 1, 1)
        form.addWidget(QLabel("values"), 1, 2)
        form.addWidget(self.v2, 1, 3)
        form.addWidget(QLabel("metric"), 2, 0)
        form.addWidget(self.metric_box, 2, 1)
        form.addWidget(QLabel("run on"), 3, 0)
        form.addWidget(self.run_on, 3, 1)
        self.more = QLineEdit()
        self.more.setPlaceholderText("path=1,2,4; path2=start:stop  (a slider each over the heat map)")
        self.more.setToolTip("Third and further parameters (with a second one): the heat map shows one slice "
                             "of the grid, picked with a slider per parameter")
        form.addWidget(QLabel("more axes"), 3, 2)
        form.addWidget(self.more, 3, 3)
        for field in (self.v1, self.v2, self.more):
            field.returnPressed.connect(self.run)  # Return runs, as the button does
        form.addWidget(self.status, 4, 0, 1, 4)  # its own row: progress, ETA and errors always have room
        buttons = QHBoxLayout()
        for w in (self.jobs.run_btn, self.jobs.cancel_btn):
            buttons.addWidget(w)
        buttons.addWidget(self.jobs.progress, 1)
        form.addLayout(buttons, 2, 2, 1, 2)
        form.setColumnStretch(3, 1)

        self.plot = pg.PlotWidget(background="w")
        # its size hint grows with a colour bar or wider tick labels: never let that take room
        # from the docks (the plot fills what the tab has anyway)
        self.plot.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Expanding)
        style_plot(self.plot.getPlotItem())  # no SI prefix: a hit rate read "(x0.001)" 610…800
        self.bar = None
        self.legend = None  # added on the first multi-series sweep
        self.sliders_box = QGridLayout()  # one slider per axis beyond the second
        self.sliders: list[tuple[QSlider, QLabel]] = []
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addLayout(self.sliders_box)
        lay.addWidget(self.plot, 1)
        self.info = info_label()  # the point or cell under the mouse
        lay.addWidget(self.info)
        self.plot.scene().sigMouseMoved.connect(self._on_move)
        self._shown = None  # the (sliced) sweep drawn now, for hover
        self.data: dict | None = None
        self.source = "<scenario>"
        self.result = None
        self._metrics: dict = {}
        self._axes: tuple = ()
        self.grid = StreamedGrid(self, self._draw_partial)  # the running sweep's values so far
        self._metric = ""
        self._before: tuple | None = None  # (axes, metric, drawn) before the running sweep
        self._values_shown(False)

    def _values_shown(self, on: bool) -> None:
        """The plot's tick values: none before a sweep is drawn (an empty plot read 0.1…0.9 on
        both axes, numbers of nothing)."""
        pi = self.plot.getPlotItem()
        for side in ("bottom", "left"):
            pi.getAxis(side).setStyle(showValues=on)

    @property
    def job(self):
        return self.jobs.job

    def set_scenario(self, data: dict, source: str, model: type[BaseModel], metrics: dict, new: bool = False):
        """Offer the scenario's numeric fields and numeric metrics, nested ones by path
        (policies.lru.hit_rate); keep the user's choices. A `new` scenario (another file)
        starts afresh: the plot and the choices were the previous scenario's."""
        self.data, self.source, self._metrics = data, source, metrics
        if new:
            self.clear()
        paths = numeric_paths(model)
        for k, (combo, values) in enumerate(((self.p1, self.v1), (self.p2, self.v2))):
            keep = combo.currentText() if not new else ""
            combo.clear()
            combo.addItems(paths)
            if keep:
                combo.setCurrentText(keep)
            elif k < len(paths):
                combo.setCurrentIndex(k)  # a new scenario: two different parameters to start from
            if new:
                values.clear()
        if new:
            self.use2.setChecked(False)
        names = [k for k, v in metric_paths(metrics).items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        # and the families: policies.*.hit_rate draws one line per policy
        families = {f"{p[0]}.*.{'.'.join(p[2:])}" for p in (n.split(".") for n in names) if len(p) >= 3}
        names += sorted(f for f in families if sum(n.split(".")[0] == f.split(".")[0] for n in names) > 1)
        keep = self.metric_box.currentText() if not new else ""
        self.metric_box.clear()
        self.metric_box.addItems(names)
        if keep:
            self.metric_box.setCurrentText(keep)
        elif names:
            self.metric_box.setCurrentText(default_metric(names))

    def clear(self):
        """Forget the last sweep's plot and result (a running sweep is cancelled)."""
        if self.job is not None:
            self.jobs.cancel()
            self._before = None  # the cancelled run restores nothing
        self.result = self._shown = None
        self.info.setText(" ")
        self._make_sliders(())
        self.more.clear()
        pi = self.plot.getPlotItem()
        pi.clear()
        for side in ("bottom", "left"):  # the last sweep's parameter names and heat-map ticks
            pi.setLabel(side, "")
            pi.getAxis(side).setTicks(None)
        self._values_shown(False)
        if self.legend is not None:
            self.legend.clear()
            self.legend.setVisible(False)
        if self.bar is not None:  # it lives in the plot's layout: hidden, reused by the next heat map
            self.bar.hide()
        self.status.setText(" ")

    def configure(self, params: list[tuple[str, str]], metric: str):
        """Set axes and metric programmatically (CLI screenshots, tests)."""
        self.p1.setCurrentText(params[0][0])
        self.v1.setText(params[0][1])
        self.use2.setChecked(len(params) > 1)
        if len(params) > 1:
            self.p2.setCurrentText(params[1][0])
            self.v2.setText(params[1][1])
        self.more.setText("; ".join(f"{p}={v}" for p, v in params[2:]))
        self.metric_box.setCurrentText(metric)

    def run(self):
        if self.data is None or self.job is not None:
            return
        try:
            axes = [Axis(self.p1.currentText().strip(), parse_values(self.v1.text(), "values"))]
            if self.use2.isChecked():
                axes.append(Axis(self.p2.currentText().strip(), parse_values(self.v2.text(), "values")))
            axes += self._more_axes(len(axes))
        except ScenarioError as e:
            self.status.setText(f"⚠ {e}")
            return
        paths = [a.path for a in axes]
        twice = sorted({p for p in paths if paths.count(p) > 1})
        if twice:  # said here in the tab's words, not the command line's (--param)
            self.status.setText(f"⚠ {', '.join(twice)} is swept twice: choose a different second parameter")
            return
        data, metric, source = self.data, self.metric_box.currentText().strip(), self.source
        executor = self.run_on.spec()
        self.jobs.cancel_note = "" if executor == "local" else " (runs already on the cluster finish there)"
        # what Cancel goes back to: the sweep drawn now (or none) with its axes and sliders
        self._before = (self._axes, self._metric, self._shown is not None)
        self._axes, self._metric = tuple(axes), metric
        self.grid.start(self._axes)
        self._make_sliders(self._axes[2:])
        limit = self.memory_limit()
        self.jobs.start(lambda progress: run_sweep(data, axes, metric, source=source, workers=2, progress=progress,
                                                   executor=executor, on_result=self.grid.point.emit,
                                                   max_memory_gb=limit),
                        "sweep", self._on_done, restore=self._restore)

    def _restore(self):
        """Cancelled or failed: the chart before the run, as it was (or none)."""
        self.grid.stop()
        if self._before is None:  # cleared meanwhile (another scenario)
            return
        axes, metric, drawn = self._before
        self._axes, self._metric = axes, metric
        self._make_sliders(axes[2:])
        if drawn and self.result is not None:
            self._draw(self.result)
        else:
            self.result = self._shown = None
            self.plot.getPlotItem().clear()
            if self.bar is not None:
                self.bar.hide()
            if self.legend is not None:
                self.legend.clear()
                self.legend.setVisible(False)
        if "cancelled" in self.status.text():
            self.status.setText("cancelled: the chart shown is the one before")

    def _draw_partial(self):
        """The chart so far: points not yet run are gaps (NaN)."""
        flat = self.grid.values
        if flat is None or self.job is None:
            return
        values = shaped(self._axes, flat)  # three axes and more stay flat: _draw slices them
        series = ()
        if "*" in self._metric:
            done = next((v for v in flat if isinstance(v, list)), None)
            if done is None:
                return
            # names as the shown run has them (the sweep's own come with its result)
            series = tuple(metric_family(self._metrics, self._metric))
            if len(series) != len(done):
                series = tuple(str(i) for i in range(len(done)))
            values = [v if isinstance(v, list) else [None] * len(done) for v in values]
        self._draw(SweepResult(self._axes, self._metric, values, series))

    def cancel(self):
        self.jobs.cancel()

    def shutdown(self):
        self.jobs.shutdown()
        self.run_on.shutdown()

    def _on_done(self, res):
        self.grid.stop()
        self.result = res
        self.status.setText(f"{grid_size(res.axes)} runs done")
        self._draw(res)
        self.finished.emit(res)

    def _more_axes(self, given: int) -> list[Axis]:
        text = self.more.text().strip()
        if not text:
            return []
        if given < 2:
            raise ScenarioError("more axes need a second parameter (the heat map they slice)", "more axes")
        out = []
        for part in filter(None, (p.strip() for p in text.split(";"))):
            path, eq, values = part.partition("=")
            if not eq or not path.strip():
                raise ScenarioError(f"expected path=values, got {part!r}", "more axes")
            out.append(Axis(path.strip(), parse_values(values, f"more axes: {path.strip()}")))
        return out

    def _make_sliders(self, extra: tuple) -> None:
        for slider, label in self.sliders:
            slider.deleteLater()
            label.deleteLater()
        self.sliders = []
        for row, axis in enumerate(extra):
            slider = QSlider(Qt.Horizontal)
            slider.setRange(0, len(axis.values) - 1)
            label = QLabel()
            slider.valueChanged.connect(self._slice_moved)
            self.sliders_box.addWidget(label, row, 0)
            self.sliders_box.addWidget(slider, row, 1)
            self.sliders.append((slider, label))
        self._label_sliders(extra)

    def _label_sliders(self, extra: tuple) -> None:
        for (slider, label), axis in zip(self.sliders, extra):
            label.setText(f"{axis.path} = {format_value(axis.values[slider.value()])}")

    def _slice_moved(self, *_):
        if self._axes:
            self._label_sliders(self._axes[2:])
        if self.grid.values is not None and self.job is not None:
            self._draw_partial()
        elif self.result is not None:
            self._draw(self.result)

    def _slice(self, res):
        """A grid of three or more axes as the 2-D grid the sliders pick (row-major layout)."""
        a, b, *extra = res.axes
        picks = [slider.value() for slider, _ in self.sliders][:len(extra)] + [0] * (len(extra) - len(self.sliders))
        inner = 0
        for axis, k in zip(extra, picks):
            inner = inner * len(axis.values) + k
        block = grid_size(extra)
        values = [[res.values[(i * len(b.values) + j) * block + inner] for j in range(len(b.values))]
                  for i in range(len(a.values))]
        return SweepResult((a, b), res.metric, values, res.series)

    def _draw(self, res):
        if len(res.axes) > 2:
            res = self._slice(res)
        pi = self.plot.getPlotItem()
        pi.clear()
        self._values_shown(True)
        self._shown = res
        if self.bar is not None:
            self.bar.hide()
        a = res.axes[0]
        if self.legend is not None:
            self.legend.clear()
            self.legend.setVisible(bool(res.series))  # an empty legend box would hide a data point
        if len(res.axes) == 1:
            x = _numeric(a.values)
            # one line, or one per match of a `*` metric (policies.*.hit_rate: one per policy)
            columns = [[row[i] for row in res.values] for i in range(len(res.series))] if res.series else [res.values]
            names = res.series or (res.metric,)
            if res.series and self.legend is None:
                self.legend = pi.addLegend(offset=(-10, 8), brush=pg.mkBrush(255, 255, 255, 230),
                                           pen=pg.mkPen("#cccccc"), labelTextColor="#222222")
            for name, col in zip(names, columns):
                colour = series_colour(name) if res.series else "#0072B2"  # a policy's own colour
                y = np.array([_num(v) for v in col], dtype=float)
                if np.isnan(y).all():  # e.g. recompute has no DRAM share: no line, no legend entry
                    continue
                pi.plot(x, y, pen=pg.mkPen(colour, width=2),
                        symbol="o", symbolSize=7, symbolBrush=colour, symbolPen="w",
                        name=name if res.series else None)
            pi.setLabel("bottom", a.path)
            pi.setLabel("left", res.metric)
            pi.autoRange()
            if res.series:  # room above the lines for the legend in the top-right corner
                lo, hi = pi.getViewBox().viewRange()[1]
                pi.setYRange(lo, hi + 0.08 * len(res.series) * (hi - lo), padding=0)
            return
        b = res.axes[1]
        grid = np.array([[_num(v) for v in row] for row in res.values], dtype=float)  # rows = axis a
        cmap, levels, _ = draw_heat_map(pi, grid, res.metric)
        self._shown = res
        pi.setLabel("bottom", b.path)
        pi.setLabel("left", a.path)
        vb = pi.getViewBox()
        room_x = vb.width() if vb.width() > 50 else self.plot.width() * 0.75
        room_y = vb.height() if vb.height() > 50 else self.plot.height() * 0.75
        for side in ("bottom", "left"):  # the first value's label sits at the edge: never hidden
            pi.getAxis(side).setStyle(hideOverlappingLabels=False)
        pi.getAxis("bottom").setTicks([thinned_ticks(b.values, room_x, MIN_TICK_GAP_PX)])
        pi.getAxis("left").setTicks([thinned_ticks(a.values, room_y, MIN_TICK_GAP_PY)])
        texts = [[_cell(v) for v in row] for row in res.values]
        longest = max(len(t) for row in texts for t in row)
        cell_px = self.plot.width() * 0.8 / len(b.values)  # the image takes most of the plot
        if grid.size <= MAX_CELL_TEXT and cell_px > 7 * longest + 6:  # only when the text fits
            for i in range(grid.shape[0]):
                for j in range(grid.shape[1]):
                    t = pg.TextItem(texts[i][j], color=cell_text_colour(cmap, levels, grid[i, j]), anchor=(0.5, 0.5))
                    t.setPos(j, i)
                    pi.addItem(t)
        if self.bar is None:
            self.bar = vector_colour_bar(values=levels, colorMap=cmap, interactive=False)
            pi.layout.addItem(self.bar, 2, 5)  # right of the plot, as setImageItem(insert_in=) puts it
            pi.layout.setColumnFixedWidth(4, 5)
        self.bar.setColorMap(cmap)
        self.bar.setLevels(levels)
        self.bar.axis.setLabel(res.metric)
        self.bar.show()
        pi.setRange(xRange=(-0.5, len(b.values) - 0.5), yRange=(-0.5, len(a.values) - 0.5), padding=0)

    # --- numbers: hover and the data table --------------------------------------------------
    def _on_move(self, pos):
        show_hover(self.plot, self.info, pos, self.text_at(pos))

    def text_at(self, scene_pos) -> str | None:
        """What the point or cell under `scene_pos` holds, as its hover line."""
        res = self._shown
        at = hover_point(self.plot, scene_pos)
        if res is None or at is None:
            return None
        a = res.axes[0]
        if len(res.axes) == 1:
            names = res.series or (res.metric,)
            x = _numeric(a.values)
            cols = ([[row[k] for row in res.values] for k in range(len(res.series))] if res.series
                    else [res.values])
            hit = nearest_point(self.plot, scene_pos, {n: (x, [_num(v) for v in c]) for n, c in zip(names, cols)})
            if hit is None:
                return None
            name, i = hit
            col = cols[names.index(name)]
            metric = res.metric.replace("*", name) if res.series else res.metric
            return f"{a.path} = {format_value(a.values[i])} · {metric} = {_hover_value(col[i])}"
        b = res.axes[1]
        i, j = round(at.y()), round(at.x())
        if not (0 <= i < len(a.values) and 0 <= j < len(b.values)):
            return None
        extra = "".join(f" · {axis.path} = {format_value(axis.values[slider.value()])}"
                        for (slider, _), axis in zip(self.sliders, self.result_axes[2:]))
        return (f"{a.path} = {format_value(a.values[i])} · {b.path} = {format_value(b.values[j])}{extra} · "
                f"{res.metric} = {_hover_value(res.values[i][j])}")

    @property
    def result_axes(self) -> tuple:
        return self._axes or (self.result.axes if self.result is not None else ())

    def data_rows(self) -> tuple[list[str], list[list]] | None:
        """The whole grid (every slice), one row per point: the axes' values, then the metric
        (or one column per series of a `*` metric). File → Export → Data as CSV."""
        res = self.result
        if res is None:
            return None
        head = [a.path for a in res.axes] + ([res.metric.replace("*", s) for s in res.series] or [res.metric])
        rows = []
        flat = res.values
        for _ in res.axes[1:]:  # shaped (one or two axes) back to one row per grid point
            flat = [v for row in flat for v in row]
        for index, value in enumerate(flat):
            coords, k = [], index
            for axis in reversed(res.axes):  # row-major: the last axis varies fastest
                coords.append(axis.values[k % len(axis.values)])
                k //= len(axis.values)
            rows.append(coords[::-1] + (list(value) if res.series else [value]))
        return head, rows


def cell_text_colour(cmap: pg.ColorMap, levels: tuple, v: float) -> str:
    """Near-black on light cells, white on dark ones: black figures on viridis's dark purple
    could not be read."""
    lo, hi = levels
    if not np.isfinite(v) or hi <= lo:
        return "#111"
    c = cmap.map(min(max((v - lo) / (hi - lo), 0.0), 1.0), mode="qcolor")
    luminance = 0.2126 * c.redF() + 0.7152 * c.greenF() + 0.0722 * c.blueF()  # Rec. 709 weights
    return "#111" if luminance > 0.4 else "#fff"


def _cell(v) -> str:
    """Short text for a heat-map cell: three significant digits."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return format_value(v)
    return f"{v:.3g}"


def _hover_value(v) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return format_value(v)
    return readable_number(v)


def _num(v) -> float:
    if isinstance(v, bool):
        return float(v)
    return float(v) if isinstance(v, (int, float)) else np.nan


def _numeric(values) -> np.ndarray:
    x = np.array([_num(v) for v in values], dtype=float)
    return x if not np.isnan(x).any() else np.arange(len(values), dtype=float)
