"""The app's exports on the calling thread (scripts, tests), and a widget as drawn (Current View)."""
from __future__ import annotations

from kvviz.export.figure_size import FigureSize
from kvviz.outputs import check_outputs, write_outputs
from kvviz.result import Result

from .export_render import render_items, said


def export_result(result: Result, fmt: str, path: str, time_range_ns: tuple[int, int] | None = None,
                  size: FigureSize | None = None, inputs: list[tuple[str, str]] = ()) -> list[str]:
    """Write `result` as `fmt` to `path` through kvviz's output guard (never over one of the
    run's `inputs`, as kvviz.outputs.scenario_inputs lists them; CSV's five files as one set);
    returns the files written. A timeline figure has `size` (inches and dpi, as `kvviz run
    --width/--height/--dpi`). Refusals and failures raise ScenarioError. On the calling thread:
    the window's File → Export renders in the background instead (app.export_job)."""
    items = render_items(result, fmt, path, time_range_ns, size)
    check_outputs([(f"the {fmt} export", p, said(fmt)) for p, _ in items], inputs)
    write_outputs(items)
    return [p for p, _ in items]


def render_widget(widget, fmt: str, scale: int = 2) -> bytes:
    """A widget as drawn, as PNG bytes (`scale` × its pixels, on white) or SVG bytes (QtSvg:
    the plots' paths and text stay vectors). Hover and status lines are left out."""

    from PySide6.QtWidgets import QWidget

    from .views._common import SCREEN_ONLY

    # hover and status lines are for the screen: hidden while drawing, for a clean figure
    hidden = [w for w in widget.findChildren(QWidget) if w.property(SCREEN_ONLY) and w.isVisible()]

    def show(on: bool):
        for w in hidden:
            w.setVisible(on)
        for w in {w.parentWidget() for w in hidden}:  # laid out now, not at the next event
            if w is not None and w.layout() is not None:
                w.layout().activate()
    show(False)
    try:
        return _render(widget, fmt, scale)
    finally:
        show(True)


def _render(widget, fmt: str, scale: int) -> bytes:
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QPoint
    from PySide6.QtGui import QColor, QImage, QPainter
    from PySide6.QtSvg import QSvgGenerator

    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.WriteOnly)
    size = widget.size()
    if fmt == "png":
        img = QImage(size * scale, QImage.Format_ARGB32)
        img.setDevicePixelRatio(scale)
        img.fill(QColor("white"))
        p = QPainter(img)
        try:
            widget.render(p, QPoint(0, 0))
        finally:
            p.end()  # a painter left open on a paint device aborts the process when it is freed
        if not img.save(buf, "PNG"):
            raise ValueError("could not encode the PNG")
    elif fmt == "svg":
        gen = QSvgGenerator()
        gen.setOutputDevice(buf)
        gen.setSize(size)
        gen.setViewBox(widget.rect())
        gen.setTitle("kvviz view")
        p = QPainter(gen)
        try:
            widget.render(p, QPoint(0, 0))
        finally:
            p.end()
    else:
        raise ValueError(f"unknown view format {fmt!r} (png or svg)")
    return bytes(data)
