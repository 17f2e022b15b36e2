"""A tab's plots as a clean figure ("Current View as SVG/PNG"): only the plots — no combo
boxes, buttons, hover or status lines — each at its place in the tab, under one caption line
naming the scenario and the parameters changed from its file.

SVG: each plot's scene goes through pyqtgraph's SVG exporter, which writes a clip path for
every view box (Qt's own SVG generator drops clipping, so a zoomed timeline's bars spilled over
the lane names) and draws items such as the Sweep heat map's cells as vector rectangles. The
scenes are nested as <svg> elements at their offsets; their ids are prefixed so one plot's clip
path is never another's. PNG: the same plots, painted at the same offsets, `scale` × pixels.
A figure has a physical size, chosen as the CLI's (kvviz.export.figure_size): the view's
pixels are scaled to the chosen width in inches, keeping the view's proportions; the SVG's width
and height attributes are in inches, the PNG has inches × dpi pixels and says its dpi."""
from __future__ import annotations

import re
from html import escape

import pyqtgraph as pg
import pyqtgraph.exporters  # noqa: F401 (pg.exporters.SVGExporter)
from PySide6.QtCore import QPoint, QRect
from PySide6.QtGui import QColor, QFont, QImage, QPainter

from kvviz.export.figure_size import PX_PER_IN
from kvviz.export.svg import FONT

from .figure_flatten import cut_to_clips, flatten_transforms
from .views._common import SCREEN_ONLY

CAPTION_H = 24  # px for the caption line above the plots
CAPTION_PT = 9.5


def figure_plots(widget) -> list[tuple[pg.GraphicsView, QRect]]:
    """The visible plots inside `widget` (pyqtgraph views) and their rectangles in its
    coordinates, top to bottom and left to right."""
    out = []
    for view in widget.findChildren(pg.GraphicsView):
        if not view.isVisibleTo(widget) or view.property(SCREEN_ONLY) or view.width() < 4 or view.height() < 4:
            continue
        out.append((view, QRect(view.mapTo(widget, QPoint(0, 0)), view.size())))
    if widget.isVisible():  # a hidden tab's children report visible to it; one on screen must be drawn
        out = [(v, r) for v, r in out if v.isVisible()]
    return sorted(out, key=lambda vr: (vr[1].top(), vr[1].left()))


def _bounds(plots) -> QRect:
    box = QRect()
    for _, r in plots:
        box = box.united(r)
    return box


def _nested(view: pg.GraphicsView, k: int, x: int, y: int) -> str:
    """One plot's scene as a nested <svg> at (x, y), its ids prefixed `p{k}-`."""
    xml = pg.exporters.SVGExporter(view.scene()).export(toBytes=True).decode("utf-8")
    xml = cut_to_clips(flatten_transforms(xml))  # pixels, not data coordinates: any renderer draws the same
    # one element a line, unindented: an occupancy grid's thousands of rectangles (and those cut
    # away above) left a megabyte of indentation and blank lines
    xml = re.sub(r">\s+<", ">\n<", xml)
    xml = re.sub(r'\bid="([^"]+)"', lambda m: f'id="p{k}-{m.group(1)}"', xml)
    xml = re.sub(r'url\(#([^)]+)\)', lambda m: f'url(#p{k}-{m.group(1)})', xml)
    body = xml[xml.index(">", xml.index("<svg")) + 1:xml.rindex("</svg>")]
    body = re.sub(r"<(title|desc|style)>.*?</\1>", "", body, flags=re.S)
    body = re.sub(r'<rect width="100%" height="100%"[^>]*/>', "", body)  # the figure has one background
    # a group, not a nested <svg>: renderers without nested viewports (ImageMagick's) drew nothing
    # (the view boxes inside carry their own clip paths; the plot's edge needs none)
    return f'<g id="plot-{k}" transform="translate({x},{y})">{body}</g>'


def figure_box(widget, caption: str = "") -> tuple[int, int]:
    """The figure's size in the view's pixels (the plots' bounds and the caption line)."""
    plots = figure_plots(widget)
    if not plots:
        raise ValueError("this view has no plot to export as a figure")
    box = _bounds(plots)
    return box.width(), box.height() + (CAPTION_H if caption else 0)


def figure_svg(widget, caption: str = "", width_px: float | None = None) -> bytes:
    """The figure as SVG, `width_px` CSS px wide (at 96 per inch; None: as on screen)."""
    plots = figure_plots(widget)
    w, h = figure_box(widget, caption)
    box = _bounds(plots)
    top = CAPTION_H if caption else 0
    k = (width_px or w) / w  # the physical size scales the picture, the viewBox keeps the view's pixels
    parts = ['<?xml version="1.0" encoding="UTF-8"?>', f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
             f'width="{w * k / PX_PER_IN:.3f}in" height="{h * k / PX_PER_IN:.3f}in" viewBox="0 0 {w} {h}">',
             f'<rect width="{w}" height="{h}" fill="#ffffff"/>']
    if caption:
        parts.append(f'<text x="8" y="{CAPTION_H - 8}" font-family="{FONT}" font-size="{CAPTION_PT * 4 / 3:.1f}" '
                     f'fill="#222222">{escape(caption)}</text>')
    for k, (view, r) in enumerate(plots):
        parts.append(_nested(view, k, r.left() - box.left(), r.top() - box.top() + top))
    parts.append("</svg>\n")
    return "\n".join(parts).encode("utf-8")


def figure_png(widget, caption: str = "", scale: float = 2.0, dpi: int | None = None) -> QImage:
    """The same figure as an image, `scale` × the screen's pixels, on white; `dpi`, if given, is
    written in the file (a PNG of a figure 10 in wide at 300 dpi: scale = 3,000 px / its width)."""
    plots = figure_plots(widget)
    figure_box(widget, caption)  # refuses a view with no plot
    box = _bounds(plots)
    top = CAPTION_H if caption else 0
    img = QImage(round(box.width() * scale), round((box.height() + top) * scale), QImage.Format_ARGB32)
    img.fill(QColor("white"))
    p = QPainter(img)
    try:
        p.scale(scale, scale)
        p.setRenderHint(QPainter.Antialiasing)
        p.setRenderHint(QPainter.TextAntialiasing)
        if caption:
            f = QFont(FONT.split(",")[0])
            f.setPointSizeF(CAPTION_PT)
            p.setFont(f)
            p.setPen(QColor("#222222"))
            p.drawText(8, CAPTION_H - 8, caption)
        for view, r in plots:
            at = QPoint(r.left() - box.left(), r.top() - box.top() + top)
            view.render(p, QRect(at, view.size()), view.rect())
    finally:
        p.end()  # a painter left open on a paint device aborts the process when it is freed
    if dpi:
        img.setDotsPerMeterX(round(dpi / 0.0254))
        img.setDotsPerMeterY(round(dpi / 0.0254))
    return img
