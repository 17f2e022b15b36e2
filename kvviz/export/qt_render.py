"""Rasterise an SVG figure (from stdin) to PNG or PDF with Qt's SVG renderer.

The one module of kvviz that imports Qt (tests/test_core.py holds it to that): `kvviz run
--png/--pdf` runs it as a child process (kvviz.export.raster), so the command line never loads
Qt, and the app's Export menu calls `render_svg` in-process.
PNG pixel size = figure size in inches × dpi; the file is written atomically.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from PySide6.QtCore import QByteArray, QMarginsF, QRectF, QSizeF
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


def render_svg(svg: bytes, out: str, fmt: str = "png", dpi: int = 300) -> tuple[int, int]:
    QGuiApplication.instance() or QGuiApplication([])
    renderer = QSvgRenderer(QByteArray(svg))
    if not renderer.isValid():
        raise ValueError("not a valid SVG document")
    box = renderer.viewBoxF()  # CSS px at 96 per inch
    w_in, h_in = _inches(svg) or (box.width() / 96, box.height() / 96)
    tmp = Path(out).with_name(f".{Path(out).name}.tmp")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    if fmt == "png":
        img = QImage(round(w_in * dpi), round(h_in * dpi), QImage.Format_ARGB32)
        img.fill(QColor("white"))
        p = QPainter(img)
        p.setRenderHint(QPainter.Antialiasing)
        p.setRenderHint(QPainter.TextAntialiasing)
        renderer.render(p, QRectF(0, 0, img.width(), img.height()))
        p.end()
        # The file's DPI, set only now: painting on a 300-dpi image left Qt's shared glyph
        # cache drawing the app's menus at a quarter of their size for the rest of the session.
        img.setDotsPerMeterX(round(dpi / 0.0254))
        img.setDotsPerMeterY(round(dpi / 0.0254))
        if not img.save(str(tmp), "PNG"):
            raise OSError(f"cannot write {out}")
        size = (img.width(), img.height())
    else:
        writer = QPdfWriter(str(tmp))
        writer.setResolution(dpi)
        writer.setPageLayout(QPageLayout(QPageSize(QSizeF(w_in, h_in), QPageSize.Inch),
                                         QPageLayout.Portrait, QMarginsF(0, 0, 0, 0)))
        p = QPainter(writer)
        renderer.render(p, QRectF(0, 0, w_in * dpi, h_in * dpi))
        p.end()
        size = (round(w_in * dpi), round(h_in * dpi))
    os.replace(tmp, out)
    return size


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kvviz.export.qt_render")
    ap.add_argument("--format", choices=["png", "pdf"], default="png")
    ap.add_argument("--dpi", type=int, default=300)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    try:
        render_svg(sys.stdin.buffer.read(), a.out, a.format, a.dpi)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
