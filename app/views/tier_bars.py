"""Tier bars: each eviction policy's token hit rate as one horizontal bar, split by the tier
that served the hit (HBM, CXL, DRAM, SSD, remote, top to bottom), with the trace's ceiling
(infinite capacity) and Belady's hit rate at the same capacities marked across all bars.
It reads only the Result's metrics (metrics.policies.<p>.tiers.<t>.token_hit_rate), so any
mechanism whose record lists the "tiers" analysis can be drawn."""
from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from kvviz.format import readable_bytes, readable_number
from kvviz.palette import tier_color
from kvviz.result import Result

from ._common import (
    TEXT,
    NoteStack,
    caption_label,
    hover_point,
    info_label,
    legend_key,
    show_hover,
    stack_vertically,
    style_plot,
)

CEILING_COLOUR = "#222222"
BELADY_COLOUR = "#009E73"  # Belady's own colour (kvviz.export.colours.POLICY_COLOURS)
BAR_HEIGHT = 0.62


def tier_rows(metrics: dict) -> tuple[list[str], list[dict]]:
    """(tier names top to bottom, one row per policy): each row its name, token hit rate and the
    part of it each tier served (`parts`, by tier), its share of the hits and bytes read there."""
    policies = metrics.get("policies")
    tiers = metrics.get("tiers")
    if not isinstance(policies, dict) or not isinstance(tiers, dict):
        return [], []
    names = list(tiers)
    rows = []
    for name, m in policies.items():
        per = m.get("tiers") if isinstance(m, dict) else None
        if not isinstance(per, dict) or m.get("token_hit_rate") is None:
            continue
        rows.append({"name": name, "rate": float(m["token_hit_rate"]),
                     "request_rate": m.get("request_hit_rate"), "gap": m.get("belady_gap"),
                     "parts": {t: float(per.get(t, {}).get("token_hit_rate") or 0.0) for t in names},
                     "shares": {t: float(per.get(t, {}).get("hit_share") or 0.0) for t in names},
                     "read": {t: per.get(t, {}).get("bytes_read") for t in names},
                     "evictions": {t: per.get(t, {}).get("evictions") for t in names}})
    return names, rows


def _pct(v: float) -> str:
    return f"{100 * v:.1f}%"


class TierBarsView(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.caption = caption_label()
        self.plot = pg.PlotWidget(background="w")
        self.pi = self.plot.getPlotItem()
        style_plot(self.pi, bottom="token hit rate: prompt tokens served from the cache, by the tier that held "
                                   "them", grid=(True, False))
        self.pi.setMouseEnabled(x=False, y=False)
        self.pi.getViewBox().invertY(True)  # the first policy on top, as the scenario lists them
        self.pi.getAxis("left").setWidth(90)
        self.info = info_label()
        self.plot.scene().sigMouseMoved.connect(self._on_move)
        self.stack = NoteStack(stack_vertically(self.caption, self.plot, self.info, stretch=self.plot))
        stack_vertically(self.stack, stretch=self.stack, into=self)
        self.tiers: list[str] = []
        self.rows: list[dict] = []
        self.ceiling: float | None = None
        self.belady: float | None = None

    def set_result(self, result: Result) -> None:
        self.info.setText(" ")  # the hover line described the previous run (seen in a real window)
        m = result.metrics_dict()
        self.tiers, self.rows = tier_rows(m)
        self.ceiling, self.belady = m.get("hit_rate_ceiling"), m.get("belady_token_hit_rate")
        if not self.rows:
            self.stack.show_note("This run reports no hits per tier\n(metrics.policies.<policy>.tiers, as "
                                 "prefix_cache reports them).")
            return
        self.stack.show_content()
        keys = " ".join(legend_key(tier_color(t), t.upper()) for t in self.tiers)
        marks = []
        if self.ceiling is not None:
            marks.append(legend_key(CEILING_COLOUR, f"ceiling (infinite capacity) {_pct(self.ceiling)}", "┆"))
        if self.belady is not None:
            marks.append(legend_key(BELADY_COLOUR, f"Belady on every tier {_pct(self.belady)}", "┆"))
        names = {r["name"] for r in self.rows}
        n = len([x for x in names if not (x.endswith("_prefetch") and x.removesuffix("_prefetch") in names)])
        runs = f"{n} eviction {'policy' if n == 1 else 'policies'}"
        if n < len(names):  # the timed engine's store.prefetch runs each policy again as <policy>_prefetch
            runs += " without and with scheduler-aware prefetch (_prefetch)"
        self.caption.setText(f"<b>Hits per tier</b> · {runs} on the identical workload · {keys} · "
                             + " · ".join(marks))
        self._draw()

    def _draw(self):
        pi, rows = self.pi, self.rows
        pi.clear()
        pi.getAxis("left").setTicks([[(i, r["name"]) for i, r in enumerate(rows)]])
        starts = [0.0] * len(rows)
        for t in self.tiers:
            widths = [r["parts"][t] for r in rows]
            pi.addItem(pg.BarGraphItem(x0=list(starts), y=list(range(len(rows))), height=BAR_HEIGHT, width=widths,
                                       brush=pg.mkBrush(tier_color(t)), pen=pg.mkPen("#ffffff", width=1)))
            starts = [s + w for s, w in zip(starts, widths)]
        top = max([r["rate"] for r in rows] + [self.ceiling or 0.0, self.belady or 0.0]) or 1.0
        n = len(rows)
        for value, colour, style, label, at in ((self.ceiling, CEILING_COLOUR, Qt.DashLine, "ceiling", -0.5),
                                                (self.belady, BELADY_COLOUR, Qt.DotLine, "Belady", n - 0.5)):
            if value is None:
                continue
            pi.addItem(pg.PlotCurveItem([value, value], [-0.5, n - 0.5], pen=pg.mkPen(colour, width=2, style=style)))
            text = pg.TextItem(f"{label} {_pct(value)}", color=colour, anchor=(0, 0 if at < 0 else 1))
            text.setPos(value, at)
            pi.addItem(text)
        for i, r in enumerate(rows):
            gap = f" · {100 * r['gap']:.1f} pts below Belady" if r["gap"] is not None and r["gap"] > 5e-4 else ""
            text = pg.TextItem(f" {_pct(r['rate'])}{gap}", color=TEXT, anchor=(0, 0.5))
            text.setPos(max(r["rate"], self.ceiling or 0.0, self.belady or 0.0), i)
            pi.addItem(text)
        xmax = min(1.0, top) * 1.55  # room right of the marks for "62.7% · 2.4 pts below Belady"
        step = 0.1 if xmax <= 1.2 else 0.2
        pi.getAxis("bottom").setTicks([[(k * step, f"{round(100 * k * step)}%")
                                        for k in range(int(min(1.0, xmax) / step + 1e-9) + 1)]])
        pi.getAxis("bottom").setStyle(hideOverlappingLabels=False)  # 0% sits on the edge: keep it
        pi.setXRange(0, xmax, padding=0)
        pi.setYRange(-0.9, n - 0.1, padding=0)

    # --- hover and the data table -------------------------------------------------------------
    def _on_move(self, pos):
        show_hover(self.plot, self.info, pos, self.text_at(pos))

    def text_at(self, scene_pos) -> str | None:
        """The tier segment (or the whole bar, right of it) under `scene_pos`, as its hover line."""
        at = hover_point(self.plot, scene_pos)
        if at is None or not self.rows:
            return None
        i = round(at.y())
        if not (0 <= i < len(self.rows)) or abs(at.y() - i) > BAR_HEIGHT / 2 or at.x() < 0:
            return None
        r, start = self.rows[i], 0.0
        for t in self.tiers:
            end = start + r["parts"][t]
            if start <= at.x() < end:
                read = r["read"][t]
                more = f" · {readable_bytes(read)} read" if read is not None else ""
                ev = r["evictions"][t]
                more += f" · {readable_number(ev)} evictions" if ev is not None else ""
                return (f"{r['name']} · {t.upper()}: {_pct(r['parts'][t])} of prompt tokens hit here "
                        f"({_pct(r['shares'][t])} of {r['name']}'s hits){more}")
            start = end
        marks = [f"{label} {_pct(v)}" for label, v in (("ceiling", self.ceiling), ("Belady", self.belady))
                 if v is not None]
        return f"{r['name']}: token hit rate {_pct(r['rate'])}" + (f" ({', '.join(marks)})" if marks else "")

    def data_rows(self) -> tuple[list[str], list[list]] | None:
        """One row per policy: its token hit rate, each tier's part of it and share of the hits,
        and the two marks (File → Export → Data as CSV)."""
        if not self.rows:
            return None
        head = (["policy", "token_hit_rate"] + [f"{t}_token_hit_rate" for t in self.tiers]
                + [f"{t}_hit_share" for t in self.tiers]
                + ["request_hit_rate", "belady_gap", "hit_rate_ceiling", "belady_token_hit_rate"])
        rows = [[r["name"], r["rate"], *(r["parts"][t] for t in self.tiers), *(r["shares"][t] for t in self.tiers),
                 r["request_rate"], r["gap"], self.ceiling, self.belady] for r in self.rows]
        return head, rows
