"""Policies view: a placement-policy comparison (metrics.policies, as AttentionStore reports it)
as two bar charts on the identical workload — the hit rate split by the tier that served the
hit (tier colours, the timeline's), and the prefill time per job against the recompute baseline
(the paper's TTFT measure; each policy's bar in its own colour, as in Replay and Sweep). Hover a
row for its numbers; File → Export → Data as CSV writes them. It reads only the Result's metrics."""
from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QWidget

from kvviz.export.colours import series_colour
from kvviz.palette import tier_color
from kvviz.result import Result

from ._common import TEXT, NoteStack, caption_label, hover_tip, info_label, legend_key, stack_vertically, style_plot

HBM_COLOUR = tier_color("hbm")  # kept in HBM: nothing to load
DRAM_COLOUR = tier_color("dram")  # served from DRAM: loaded layer by layer over PCIe
SSD_COLOUR = tier_color("ssd")   # served from SSD
BASELINE_COLOUR = series_colour("recompute")
DATA_HEAD = ["policy", "hit_rate", "hbm_hit_rate", "dram_hit_rate", "ssd_hit_rate", "mean_prefill_ms",
             "prefill_speedup_vs_recompute"]

# Both charts start a little left of 0: pyqtgraph drops a tick label that would cross the plot's
# edge, and an axis starting at exactly 0 never drew its "0".
LEFT = 0.02


def policy_rows(policies: dict) -> list[dict]:
    """One row per policy that reports a hit rate: its HBM, DRAM and SSD parts of the hit rate
    and its prefill time per job, in the scenario's order."""
    rows = []
    for name, m in policies.items():
        if not isinstance(m, dict) or m.get("hit_rate") is None:
            continue
        hit = float(m["hit_rate"])
        hbm = hit * float(m.get("hbm_hit_share") or 0.0)
        dram = hit * float(m.get("dram_hit_share") or 0.0)
        rows.append({"name": name, "hit": hit, "hbm": hbm, "dram": dram, "ssd": hit - hbm - dram,
                     "prefill_ms": m.get("mean_prefill_ms"), "gpu_speedup": m.get("prefill_speedup_vs_recompute")})
    return rows


def _name_rows(pi: pg.PlotItem, rows: list[dict]) -> None:
    """Policy names on the left axis, one per bar row (setTicks also redraws the axis)."""
    pi.getAxis("left").setTicks([[(i, r["name"]) for i, r in enumerate(rows)]])


class PoliciesView(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.caption = caption_label()
        self.charts = pg.GraphicsLayoutWidget()
        self.charts.setBackground("w")
        self.hit_plot = self.charts.addPlot(row=0, col=0)
        self.time_plot = self.charts.addPlot(row=1, col=0)
        style_plot(self.hit_plot, bottom="hit rate (turns with history): HBM + DRAM + SSD parts", grid=(True, False))
        style_plot(self.time_plot, bottom="prefill per job (ms): admission to first token, no queueing",
                   grid=(True, False))
        for pi in (self.hit_plot, self.time_plot):
            pi.setMouseEnabled(x=False, y=False)
            pi.getViewBox().invertY(True)  # first policy on top, as listed
            pi.getAxis("left").setWidth(120)
        self.time_plot.getViewBox().sigResized.connect(self._fit_time_labels)
        self._time_labels: list[tuple[float, str]] = []  # (bar end, label) of the prefill chart
        self.info = info_label()  # the row under the mouse: its policy's numbers
        self.charts.scene().sigMouseMoved.connect(self._on_move)
        self.stack = NoteStack(stack_vertically(self.caption, self.charts, self.info, stretch=self.charts))
        stack_vertically(self.stack, stretch=self.stack, into=self)
        self.rows: list[dict] = []

    def set_result(self, result: Result) -> None:
        policies = result.metrics_dict().get("policies")
        self.rows = policy_rows(policies) if isinstance(policies, dict) else []
        if not self.rows:
            self.stack.show_note("This run compares no placement policies\n(the policies view shows "
                                 "metrics.policies, as attention_store reports it).")
            return
        self.stack.show_content()
        hbm = any(r["hbm"] > 0 for r in self.rows)
        self.caption.setText(f"<b>Policies</b> · {len(self.rows)} on the identical workload · "
                             + (legend_key(HBM_COLOUR, "HBM hits") + " " if hbm else "")
                             + legend_key(DRAM_COLOUR, "DRAM hits") + " " + legend_key(SSD_COLOUR, "SSD hits")
                             + " · prefill bars in each policy's colour, "
                             + legend_key(BASELINE_COLOUR, "recompute baseline"))
        self.info.setText(" ")
        self._draw_hits()
        self._draw_times()

    def _bars(self, pi, starts, widths, colour):
        y = list(range(len(self.rows)))
        pi.addItem(pg.BarGraphItem(x0=starts, y=y, height=0.62, width=widths,
                                   brush=pg.mkBrush(colour), pen=pg.mkPen("#ffffff", width=1)))

    def _label(self, pi, x, i, text):
        t = pg.TextItem(text, color=TEXT, anchor=(0, 0.5))
        t.setPos(x, i)
        pi.addItem(t)

    def _draw_hits(self):
        pi, rows = self.hit_plot, self.rows
        pi.clear()
        _name_rows(pi, rows)
        self._bars(pi, [0.0] * len(rows), [r["hbm"] for r in rows], HBM_COLOUR)
        self._bars(pi, [r["hbm"] for r in rows], [r["dram"] for r in rows], DRAM_COLOUR)
        self._bars(pi, [r["hbm"] + r["dram"] for r in rows], [r["ssd"] for r in rows], SSD_COLOUR)
        for i, r in enumerate(rows):
            share = f" · {(r['hbm'] + r['dram']) / r['hit']:.0%} HBM/DRAM" if r["hbm"] > 0 else \
                f" · {r['dram'] / r['hit']:.0%} DRAM" if r["hit"] > 0 else ""
            self._label(pi, r["hit"] + 0.01, i, f"{r['hit']:.0%}{share}")
        pi.setXRange(-LEFT * 1.5, 1.5, padding=0)  # room for "100% · 100% DRAM" right of a full bar
        pi.getAxis("bottom").setTicks([[(k / 4, f"{k * 25}%") for k in range(5)]])  # a rate: 0..100% only
        pi.setYRange(-0.6, len(rows) - 0.4, padding=0)

    def _draw_times(self):
        pi, rows = self.time_plot, self.rows
        pi.clear()
        _name_rows(pi, rows)
        times = [float(r["prefill_ms"] or 0.0) for r in rows]
        self._time_labels = []
        base = next((ms for r, ms in zip(rows, times) if r["name"] == "recompute"), None)
        for i, (r, ms) in enumerate(zip(rows, times)):
            colour = series_colour(r["name"])  # the bar is the policy: its colour everywhere
            pi.addItem(pg.BarGraphItem(x0=[0.0], y=[i], height=0.62, width=[ms], brush=pg.mkBrush(colour),
                                       pen=pg.mkPen("#ffffff", width=1)))
            # Two ratios, each named: the bars' (per job), and the Metrics dock's
            # prefill_speedup_vs_recompute (total prefill GPU time), which a batch shares out
            # unevenly between its jobs. One unnamed ratio read as contradicting the dock.
            note = ""
            if r["name"] != "recompute" and base and ms:
                note = f" · {base / ms:.2f}× shorter per job"
                if r.get("gpu_speedup"):
                    note += f", {float(r['gpu_speedup']):.2f}× less GPU time"
            self._label(pi, ms, i, f" {ms:.4g} ms{note}")
            self._time_labels.append((ms, f" {ms:.4g} ms{note}"))
        pi.setYRange(-0.6, len(rows) - 0.4, padding=0)
        self._fit_time_labels()

    def _fit_time_labels(self):
        """An x range with room after each bar for its label, from the chart's pixel width: a
        fixed 2.6× the longest bar cut "1.12× less GPU time" short in a real window."""
        wpx = self.time_plot.getViewBox().width()
        ends = [end for end, _ in self._time_labels]
        top = max(ends, default=1.0) or 1.0
        if wpx <= 80:  # not laid out yet: a guess, redone on the first resize
            xmax = top * 2.6
        else:
            fm = QFontMetrics(QFont())  # a TextItem draws in the application font
            # the range is [-LEFT·xmax, xmax]: a label ending at `end` fits when end + LEFT·xmax is
            # within its share of the width, (1 + LEFT)·xmax·(1 − its pixels / the width)
            need = [end / max((1 + LEFT) * (1.0 - (fm.horizontalAdvance(text) + 12) / wpx) - LEFT, 0.2)
                    for end, text in self._time_labels]
            xmax = max(need + [top * 1.05])
        self.time_plot.setXRange(-LEFT * xmax, xmax, padding=0)


    def row_text(self, i: int) -> str:
        """The hover line of policy row i: every number both charts show for it."""
        r = self.rows[i]
        parts = [f"{r['name']} · hit rate {r['hit']:.2%} (HBM {r['hbm']:.2%}, DRAM {r['dram']:.2%}, "
                 f"SSD {r['ssd']:.2%})"]
        if r["prefill_ms"] is not None:
            parts.append(f"prefill {float(r['prefill_ms']):,.4g} ms per job")
        base = next((x["prefill_ms"] for x in self.rows if x["name"] == "recompute"), None)
        if r["name"] != "recompute" and base and r["prefill_ms"]:
            parts.append(f"{float(base) / float(r['prefill_ms']):.2f}× shorter than recompute")
        if r.get("gpu_speedup"):
            parts.append(f"{float(r['gpu_speedup']):.2f}× less GPU time")
        return " · ".join(parts)

    def _on_move(self, pos) -> None:
        for pi in (self.hit_plot, self.time_plot):
            vb = pi.getViewBox()
            if self.rows and vb.sceneBoundingRect().contains(pos):
                y = vb.mapSceneToView(pos).y()
                i = int(round(y))
                if 0 <= i < len(self.rows) and abs(y - i) <= 0.45:
                    text = self.row_text(i)
                    self.info.setText(text)
                    hover_tip(self.charts, pos, text)
                    return
        hover_tip(self.charts, pos, None)

    def data_rows(self) -> tuple[list[str], list[list]] | None:
        """The bars as a table (File → Export → Data as CSV): one row per policy, rates as
        fractions of turns with history, as metrics.policies holds them."""
        if not self.rows:
            return None
        return DATA_HEAD, [[r["name"], r["hit"], r["hbm"], r["dram"], r["ssd"], r["prefill_ms"], r["gpu_speedup"]]
                           for r in self.rows]
