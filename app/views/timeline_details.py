"""The timeline's instrument parts that are not the plot: a ViewBox whose Shift-drag selects a
time range, the time formatter (unit from the visible span, digits for one pixel, an optional
relative origin), and the details pane's text for an event or a selected range."""
from __future__ import annotations

import html
from dataclasses import dataclass

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal

from kvviz.export.axis import tick_decimals, time_unit
from kvviz.trace import Trace

from .timeline_query import Event, LaneStats, fields, flow_partners


class TimelineViewBox(pg.ViewBox):
    """A ViewBox where Shift-drag selects a time range instead of panning."""

    range_dragged = Signal(float, float, bool)  # (x0, x1, finished) in data units

    def mouseDragEvent(self, ev, axis=None):  # noqa: N802 (pyqtgraph's name)
        if ev.button() == Qt.LeftButton and ev.modifiers() & Qt.ShiftModifier:
            ev.accept()
            x0 = self.mapSceneToView(ev.buttonDownScenePos()).x()
            x1 = self.mapSceneToView(ev.scenePos()).x()
            self.range_dragged.emit(x0, x1, bool(ev.isFinish()))
            return
        super().mouseDragEvent(ev, axis)


class CursorText:
    """A cursor label's `format`: pyqtgraph calls format(value=x); the text is the view's."""

    def __init__(self, text):
        self.text = text

    def format(self, value):
        return self.text(value)


@dataclass
class TimeFormat:
    """How the view writes a time: `unit` and `ns` per unit from the visible span (the rule of
    exported figures, kvviz.export.axis.time_unit), `places` for one pixel, from `origin_ns`."""
    unit: str = "µs"
    ns: float = 1e3
    places: int = 3
    origin_ns: float = 0.0
    least: int | None = None  # exact(): trailing zeros cut down to this many places
    # the ruler's base when the view is far into a long run ("38.0 s"): times read from it, as
    # its ticks do ("79.46 ms from 38.0 s", not "38079.46 ms"); "" = from the run's start or the cursor
    since: str = ""


    @classmethod
    def for_view(cls, span_ns: float, ns_per_pixel: float, origin_ns: float = 0.0) -> TimeFormat:
        unit, ns = time_unit(max(span_ns, 1.0))
        return cls(unit, ns, tick_decimals(ns_per_pixel / ns), origin_ns)

    def exact(self) -> TimeFormat:
        """The same unit with the digits of one ns (event times are whole ns): for the details
        pane and Δt, where 1.839 µs must not read as 1.8 µs; zeros beyond the view's digits cut."""
        return TimeFormat(self.unit, self.ns, max(self.places, tick_decimals(1.0 / self.ns)), self.origin_ns,
                          self.places, self.since)

    def _num(self, v: float) -> str:
        text = f"{v:.{self.places}f}"
        if self.least is not None and "." in text:
            keep = text.index(".") + 1 + self.least  # cut zeros, never below `least` places
            text = text[:keep] + text[keep:].rstrip("0")
            text = text.rstrip(".")
        return text

    def at(self, t_ns: float) -> str:
        """A point in time (from the origin, which names itself when it is the ruler's base)."""
        return f"{self.value(t_ns)} {self.unit}" + (f" from {self.since}" if self.since else "")

    def value(self, t_ns: float) -> str:
        return self._num((t_ns - self.origin_ns) / self.ns)

    def dur(self, d_ns: float) -> str:
        """A duration (no origin); one shorter than the view's last digit reads in its own unit
        (a 5 ms save zoomed out to minutes: "5.12 ms", not "0.0 s")."""
        text = self._num(d_ns / self.ns)
        if d_ns > 0 and not text.strip("0."):
            unit, ns = next(((u, k) for u, k in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)) if d_ns >= k), ("ns", 1.0))
            return f"{d_ns / ns:.3g} {unit}"
        return f"{text} {self.unit}"


def nbytes(n: int) -> str:
    """1,234,567 B (1.23 MB): exact, and readable at a glance."""
    for unit, k in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= k:
            return f"{n:,} B ({n / k:.3g} {unit})"
    return f"{n:,} B"


ROW = '<tr><td style="color:#555; padding-right:8px">{}</td><td>{}</td></tr>'


def _rows(pairs) -> str:
    return "".join(ROW.format(html.escape(k), html.escape(str(v))) for k, v in pairs)


def event_html(tr: Trace, ev: Event, fmt: TimeFormat) -> str:
    """Every field of an event, for the details pane (times to the ns)."""
    f = fields(tr, ev)
    fmt = fmt.exact()
    span = ev.table == "spans"
    pairs = [("lane", f["lane"]), ("group", f["group"]), ("kind", f["kind"] + ("" if span else " (mark)"))]
    if span:
        pairs += [("start", fmt.at(f["start_ns"])), ("end", fmt.at(f["end_ns"])), ("duration", fmt.dur(f["duration_ns"])),
                  ("label", f.get("label") or "–")]
    else:
        pairs.append(("time", fmt.at(f["start_ns"])))
    if "bytes" in f:
        pairs.append(("bytes", nbytes(int(f["bytes"]))))
    if "items" in f:
        pairs.append(("items moved", f"{f['items']:,}"))
    if "src" in f or "dst" in f:
        pairs.append(("tiers", f"{f.get('src', '?')} → {f.get('dst', '?')}"))
    for key, name in (("job", "job (session)"), ("turn", "turn / step"), ("pos", "position"), ("layer", "layer")):
        if key in f:
            pairs.append((name, f"{f[key]:,}" if key == "job" else f[key]))
    pairs.append(("ref", f["ref"]))
    out = f"<b>{html.escape(f['kind'])}</b> on {html.escape(f['lane'])}<table>{_rows(pairs)}</table>"
    partners = flow_partners(tr, ev)
    if partners:
        lines = []
        for role, p in partners[:6]:
            pf = fields(tr, p)
            lines.append(f"{role} {pf['kind']} on {pf['lane']} at {fmt.at(pf['start_ns'])}")
        more = f"<br>… and {len(partners) - 6} more" if len(partners) > 6 else ""
        out += "<p style='margin-top:6px'><b>flow</b><br>" + "<br>".join(map(html.escape, lines)) + more + "</p>"
    return out


def range_html(stats: list[LaneStats], t0: float, t1: float, fmt: TimeFormat) -> str:
    """A selected time range: its length, then per lane the spans, marks, busy time and bytes."""
    t0, t1 = sorted((t0, t1))
    head = (f"<b>Range</b> {html.escape(fmt.at(t0))} – {html.escape(fmt.at(t1))}"
            f"<br>Δt = {html.escape(fmt.dur(t1 - t0))}")
    if not stats:
        return head + "<p>nothing in this range</p>"
    cells = "".join(
        f"<tr><td>{html.escape(s.lane)}</td><td align=right>{s.spans:,}</td><td align=right>{s.marks:,}</td>"
        f"<td align=right>{html.escape(fmt.dur(s.busy_ns))} ({100 * s.busy_ns / max(t1 - t0, 1):.0f}%)</td>"
        f"<td align=right>{html.escape(nbytes(s.bytes)) if s.bytes >= 0 else '–'}</td></tr>" for s in stats)
    return (head + "<table cellspacing=3><tr style='color:#555'><td>lane</td><td>spans</td><td>marks</td>"
            f"<td>busy</td><td>bytes</td></tr>{cells}</table>")
