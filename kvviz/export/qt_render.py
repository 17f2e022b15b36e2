"""Rasterise an SVG figure (from stdin) to PNG or PDF with Qt's SVG renderer.

The one module of kvviz that imports Qt (tests/test_core.py holds it to that): `kvviz run
--png/--pdf` runs it as a child process (kvviz.export.raster), so the command line never loads
Qt, and the app's Export menu calls `render_svg_bytes` in-process.
PNG pixel size = figure size in inches × dpi. It hands back bytes (on stdout, as a child): where
they are written is kvviz.outputs' to decide.
"""
from __future__ import annotations

import argparse
import os
import re
import sys

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMarginsF, QRectF, QSizeF
from PySide6.QtGui import QColor, QGuiApplication, QImage, QPageLayout, QPageSize, QPainter, QPdfWriter
from PySide6.QtSvg import QSvgRenderer

ROOT = re.compile(rb"<svg\b[^>]*>")
INCHES = re.compile(rb'\b(width|height)="([0-9.]+)in"')


def _inches(svg: bytes) -> tuple[float, float] | None:
    """The root's width and height in inches, when it gives them so (a figure scaled from its
    viewBox, as the app's Current View at a chosen size)."""
    root = ROOT.search(svg)
    sizes = dict(INCHES.findall(root.group(0))) if root else {}
    if b"width" in sizes and b"height" in sizes:
        return float(sizes[b"width"]), float(sizes[b"height"])
    return None


def render_svg_bytes(svg: bytes, fmt: str = "png", dpi: int = 300) -> tuple[bytes, tuple[int, int]]:
    """The figure as PNG or PDF bytes, and its size in pixels."""
    QGuiApplication.instance() or QGuiApplication([])
    renderer = QSvgRenderer(QByteArray(svg))
    if not renderer.isValid():
        raise ValueError("not a valid SVG document")
    box = renderer.viewBoxF()  # CSS px at 96 per inch
    w_in, h_in = _inches(svg) or (box.width() / 96, box.height() / 96)
    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    if fmt == "png":
        img = QImage(round(w_in * dpi), round(h_in * dpi), QImage.Format.Format_ARGB32)
        if img.isNull():
            raise ValueError(f"a {img.width()}×{img.height()} image does not fit in memory")
        img.fill(QColor("white"))
        p = QPainter(img)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setRenderHint(QPainter.RenderHint.TextAntialiasing)
        renderer.render(p, QRectF(0, 0, img.width(), img.height()))
        p.end()
        # The file's DPI, set only now: painting on a 300-dpi image left Qt's shared glyph
        # cache drawing the app's menus at a quarter of their size for the rest of the session.
        img.setDotsPerMeterX(round(dpi / 0.0254))
        img.setDotsPerMeterY(round(dpi / 0.0254))
        # the format is a str at run time (b"PNG" raises ValueError); PySide6 6.10's stub says bytes
        if not img.save(buf, "PNG"):  # type: ignore[call-overload]  # a str at run time, as said above
            raise ValueError("could not encode the PNG")
        size = (img.width(), img.height())
    else:
        writer = QPdfWriter(buf)
        writer.setResolution(dpi)
        writer.setPageLayout(QPageLayout(QPageSize(QSizeF(w_in, h_in), QPageSize.Unit.Inch),
                                         QPageLayout.Orientation.Portrait, QMarginsF(0, 0, 0, 0)))
        p = QPainter(writer)
        renderer.render(p, QRectF(0, 0, w_in * dpi, h_in * dpi))
        p.end()
        del writer  # flushes the PDF into the buffer
        size = (round(w_in * dpi), round(h_in * dpi))
    buf.close()
    return bytes(data.data()), size


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kvviz.export.qt_render")
    ap.add_argument("--format", choices=["png", "pdf"], default="png")
    ap.add_argument("--dpi", type=int, default=300)
    a = ap.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    try:
        sys.stdout.buffer.write(render_svg_bytes(sys.stdin.buffer.read(), a.format, a.dpi)[0])
        sys.stdout.buffer.flush()
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
