"""Hit-rate ladder (seed 000): each rung's HBM hit rate, and what it is worth in access time.

Left chart: the ladder itself, one bar per rung (rung 1 on top), labelled with its hit rate
and its increment over the previous rung; drag a bar sideways to change that rung's hit rate
(0.5-point steps). Right chart: each rung's mean access latency, stacked by the tier that
serves it (HBM, CXL, flash, in the tiers' colours of kvviz.palette), labelled at the bar end. With
a simulated ladder, pale bars beside the modeled ones show the measured rates and latencies,
and the disagreement in points. Below: the rungs as an editable table.

Edits recompute at once with the ladder model's own `ladder_figures` (exact fractions; no
simulation) and are announced with `rungs_edited`, so the window can put them into the
scenario's parameters. The charts are drawn by ladder_charts.py (mixed into the view), the
table by rung_table.py; this module holds the rungs, recomputes their figures and wires the two.
"""
from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QSplitter, QTableWidgetItem, QVBoxLayout, QWidget

from kvviz.mechanisms.ladder import TIERS, ladder_figures
from kvviz.result import Result

from ._common import NoteStack, caption_label, carries, info_label, kinds_carrying, stack_vertically
from .ladder_charts import TIER_LABEL, LadderCharts, tier_colour
from .rung_table import LABEL_COL, PCT_COL, STEP, RungTable

DATA_HEAD = (["rung", "label", "hbm_hit_pct", "increment_pts", "mean_latency_ns", "speedup_vs_first",
              "flash_share_of_latency"] + [f"{t}_access_pct" for t in TIERS] + [f"{t}_latency_ns" for t in TIERS])
SIM_HEAD = ["simulated_hbm_hit_pct", "simulated_mean_latency_ns"]


class LadderView(LadderCharts, QWidget):
    """Ladder chart + editable rung table for `ladder` results."""

    rungs_edited = Signal(list)  # [{"label": str, "hbm_hit_pct": float | None}, …]

    def __init__(self, parent=None):
        super().__init__(parent)
        self.headline = caption_label()
        self.legend = caption_label()
        self._make_charts()

        self.table = RungTable()
        self.table.itemChanged.connect(self._on_item_changed)
        self.status = info_label()

        lower = QWidget()
        ll = QVBoxLayout(lower)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.setSpacing(0)
        ll.addWidget(self.table, 1)
        ll.addWidget(self.status)
        split = QSplitter(Qt.Vertical)
        split.addWidget(self.charts)
        split.addWidget(lower)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        split.setChildrenCollapsible(False)
        self.splitter = split
        self.stack = NoteStack(stack_vertically(self.headline, self.legend, split, stretch=split))
        stack_vertically(self.stack, stretch=self.stack, into=self)

        self.result: Result | None = None
        self.labels: list[str] = []
        self.pcts: list[float | None] = []
        self.figures: list[dict] = []
        self.simulated: list[dict | None] | None = None
        self._tiers = None
        self._updating = False
        self._items: list = []
        self.hit_texts: list[pg.TextItem] = []
        self.latency_texts: list[pg.TextItem] = []

    # --- public API ---------------------------------------------------------------------

    def set_result(self, result: Result) -> None:
        self.result = result
        rungs = result.metrics.get("rungs") if carries(result, "ladder") else None
        if not rungs:
            self.stack.show_note(f"The ladder view applies to {kinds_carrying('ladder')} scenarios\n"
                                 "(a modeled or simulated HBM hit-rate ladder).")
            return
        self.stack.show_content()
        self._tiers = result.scenario.tiers
        self.labels = [str(r["label"]) for r in rungs]
        self.pcts = [None if r["hbm_hit_pct"] is None else float(r["hbm_hit_pct"]) for r in rungs]
        sims = [r.get("simulated") for r in rungs]
        self.simulated = sims if any(s is not None for s in sims) else None
        self._build_items()
        self._build_table()
        self._refresh()

    def rungs(self) -> list[dict]:
        """The rungs as edited: [{label, hbm_hit_pct}, …]."""
        return [{"label": lab, "hbm_hit_pct": p} for lab, p in zip(self.labels, self.pcts)]

    def set_hit_pct(self, i: int, pct: float | None, emit: bool = True) -> None:
        """Set rung i's modeled hit rate (clamped to 0–100) and recompute everything shown."""
        if pct is not None:
            pct = min(100.0, max(0.0, float(pct)))
        if pct == self.pcts[i]:
            return
        self.pcts[i] = pct
        self._refresh()
        if emit:
            self.rungs_edited.emit(self.rungs())

    def drag_rung(self, i: int, x: float, finish: bool = False) -> None:
        """A drag on rung i's row reached x (%): snap to 0.5 points; announce on release."""
        if not math.isfinite(x):
            return
        pct = min(100.0, max(0.0, round(x / STEP) * STEP))
        if pct != self.pcts[i]:
            self.pcts[i] = pct
            self._refresh()
        if finish:
            self.rungs_edited.emit(self.rungs())

    def data_rows(self) -> tuple[list[str], list[list]] | None:
        """The rungs as edited and their figures (File → Export → Data as CSV): the table's
        numbers unrounded, with each tier's share of accesses and of the mean latency."""
        if not self.figures:
            return None
        rows = []
        for i, (f, p) in enumerate(zip(self.figures, self.pcts)):
            row = [i + 1, self.labels[i], p, f["increment_pts"], f["mean_latency_ns"], f["speedup_vs_first"],
                   f["flash_share_of_latency"]]
            row += [f["access_pct"][t] if f["access_pct"] else None for t in TIERS]
            row += [f["contrib_ns"][t] if f["contrib_ns"] else None for t in TIERS]
            if self.simulated is not None:
                s = self.simulated[i]
                row += [None, None] if s is None else [s["hbm_hit_pct"], s["mean_latency_ns"]]
            rows.append(row)
        return DATA_HEAD + (SIM_HEAD if self.simulated is not None else []), rows

    def rung_at(self, y: float) -> int | None:
        i = int(round(y))
        return i if 0 <= i < len(self.pcts) and abs(y - i) <= 0.45 else None

    # --- building -------------------------------------------------------------------------

    def _build_table(self) -> None:
        self._updating = True
        try:
            self.table.build(len(self.pcts), self.simulated is not None)
        finally:
            self._updating = False

    # --- recomputing ------------------------------------------------------------------------

    def _refresh(self) -> None:
        """Recompute every figure from the current rungs and update bars, labels and table."""
        self.figures = ladder_figures(self.pcts, self._tiers)
        self._draw_charts()
        self._update_headline()
        self._fill_table()

    def _update_headline(self) -> None:
        figs = self.figures
        valid = [i for i, f in enumerate(figs) if f["mean_latency_ns"] is not None]
        tiers = self._tiers
        swatches = "&nbsp;&nbsp;&nbsp;".join(
            f'<span style="color:{tier_colour(t)}; font-size:13pt">■</span>&nbsp;{TIER_LABEL[t]} '
            f'{getattr(tiers, t + "_ns"):,} ns' for t in TIERS)
        share = tiers.flash_share_of_misses
        sim = ("&nbsp;&nbsp;·&nbsp;&nbsp;solid = modeled, pale = simulated "
               "(attention mass on cache-resident positions at query arrival)"
               if self.simulated is not None else "")
        self.legend.setText(f'<span style="color:#333">{swatches}&nbsp;&nbsp;·&nbsp;&nbsp;'
                            f'{share:.3g} of misses fall through to flash{sim}</span>')
        if not valid:
            self.headline.setText("<b>No rung has a modeled hit rate.</b>")
            return
        i = valid[-1]
        f = figs[i]
        first = figs[valid[0]]["mean_latency_ns"]
        speed = (f"&nbsp;&nbsp;·&nbsp;&nbsp;rung {valid[0] + 1} → {i + 1}: {first:,.1f} → "
                 f"{f['mean_latency_ns']:,.1f} ns ({first / f['mean_latency_ns']:.2f}× faster)"
                 if len(valid) > 1 and f["mean_latency_ns"] else "")
        flash_ns = f["contrib_ns"]["flash"]
        share_lat = f["flash_share_of_latency"]
        self.headline.setText(
            f'<span style="font-size:12pt">flash tail: <b>{f["access_pct"]["flash"]:.3g}% of accesses, '
            f'{100 * (share_lat or 0):.3g}% of mean latency</b></span>'
            f'<span style="color:#333">&nbsp;&nbsp;at rung {i + 1} ({self.pcts[i]:.4g}% HBM hits), flash is '
            f'{flash_ns:,.1f} of its {f["mean_latency_ns"]:,.1f} ns{speed}</span>')

    def _fill_table(self) -> None:
        self._updating = True
        try:
            self.table.fill(self.labels, self.pcts, self.figures, self.simulated)
        finally:
            self._updating = False
        self.table.fit_label_column()

    # --- events -------------------------------------------------------------------------------

    def _on_item_changed(self, item: QTableWidgetItem) -> None:
        if self._updating:
            return
        r, c = item.row(), item.column()
        if c == LABEL_COL:
            text = item.text().strip()
            if not text:
                self.status.setText(f"rung {r + 1}: a label cannot be empty")
                self._fill_table()
                return
            if text != self.labels[r]:
                self.labels[r] = text
                self.axis.names[r] = f"{r + 1}. {text}"
                self.axis.picture = None
                self.axis.update()
                self.status.setText(" ")
                self.rungs_edited.emit(self.rungs())
        elif c == PCT_COL:
            raw = item.text().strip().rstrip("%").strip()
            try:
                pct = None if raw == "" else float(raw)
                if pct is not None and not (0 <= pct <= 100 and math.isfinite(pct)):
                    raise ValueError
            except ValueError:
                self.status.setText(f"rung {r + 1}: HBM hit % must be a number from 0 to 100 (got {raw!r})")
                self._fill_table()
                return
            self.status.setText(" ")
            if pct == self.pcts[r]:
                self._fill_table()
                return
            self.set_hit_pct(r, pct)
