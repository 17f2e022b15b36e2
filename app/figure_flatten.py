"""Bake scale-and-translate transforms into the coordinates of an SVG's simple shapes.

pyqtgraph's exporter writes a plot's items in data coordinates under a group transform such as
matrix(3141.55,0,0,79.66,194,48.8), with vector-effect="non-scaling-stroke" to keep the 0.8-px
outlines thin. Renderers without SVG Tiny's vector-effect (ImageMagick's) scaled the outline
by 3,141 and painted every bar over in white. With the transform baked into each rect, path and
polyline, the numbers are pixels and every renderer draws the same picture."""
from __future__ import annotations

import re
from xml.dom import minidom

MATRIX = re.compile(r"^\s*matrix\(([^)]*)\)\s*$")
NUMBER = re.compile(r"-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|-?\.\d+(?:[eE][-+]?\d+)?")
SIMPLE_PATH = re.compile(r"^[MLCZmlcz0-9eE.,\s+-]*$")


def _f(v: float) -> str:
    return f"{v:.3f}".rstrip("0").rstrip(".")


def _map_pairs(text: str, a: float, d: float, e: float, f: float) -> str:
    nums = iter(NUMBER.findall(text))
    k = [0]

    def sub(m):
        v = float(m.group(0))
        k[0] += 1
        return _f(a * v + e) if k[0] % 2 == 1 else _f(d * v + f)
    del nums
    return NUMBER.sub(sub, text)


def _flatten_group(g, a: float, d: float, e: float, f: float) -> bool:
    kids = [n for n in g.childNodes if n.nodeType == n.ELEMENT_NODE]
    for n in kids:
        if n.tagName == "path":
            if not SIMPLE_PATH.match(n.getAttribute("d")) or re.search(r"[mlcz]", n.getAttribute("d")):
                return False  # relative commands or arcs: left as they are
        elif n.tagName not in ("rect", "polyline"):
            return False
    for n in kids:
        if n.tagName == "rect":
            x, y = float(n.getAttribute("x") or 0), float(n.getAttribute("y") or 0)
            w, h = float(n.getAttribute("width") or 0), float(n.getAttribute("height") or 0)
            x0, x1 = sorted((a * x + e, a * (x + w) + e))
            y0, y1 = sorted((d * y + f, d * (y + h) + f))
            for key, v in (("x", x0), ("y", y0), ("width", x1 - x0), ("height", y1 - y0)):
                n.setAttribute(key, _f(v))
        elif n.tagName == "path":
            n.setAttribute("d", _map_pairs(n.getAttribute("d"), a, d, e, f))
        else:
            n.setAttribute("points", _map_pairs(n.getAttribute("points"), a, d, e, f))
        if n.getAttribute("vector-effect") == "non-scaling-stroke":
            n.removeAttribute("vector-effect")  # the stroke is in pixels now
    g.removeAttribute("transform")
    return True


def flatten_transforms(svg: str) -> str:
    """`svg` with every group of simple shapes under a matrix(a,0,0,d,e,f) transform rewritten
    in the parent's coordinates; anything else is left as it was."""
    doc = minidom.parseString(svg)
    for g in doc.getElementsByTagName("g"):
        m = MATRIX.match(g.getAttribute("transform"))
        if not m:
            continue
        a, b, c, d, e, f = (float(v) for v in m.group(1).split(","))
        if b == 0 and c == 0:
            _flatten_group(g, a, d, e, f)
    return doc.documentElement.toxml()


def _bounds(path_d: str) -> tuple[float, float, float, float] | None:
    nums = [float(v) for v in NUMBER.findall(path_d)]
    if len(nums) < 4:
        return None
    xs, ys = nums[0::2], nums[1::2]
    return min(xs), min(ys), max(xs), max(ys)


def cut_to_clips(svg: str) -> str:
    """Rectangles and text under a rectangular clip path cut to it, in the geometry itself: a
    renderer that ignores clip-path (Qt's draws SVG Tiny) still shows nothing outside the plot.
    Run after flatten_transforms (the shapes' numbers are then in the clip's coordinates)."""
    doc = minidom.parseString(svg)
    clips = {}
    for c in doc.getElementsByTagName("clipPath"):
        paths = c.getElementsByTagName("path")
        if paths and (b := _bounds(paths[0].getAttribute("d"))) is not None:
            clips[c.getAttribute("id")] = b
    for g in doc.getElementsByTagName("g"):
        m = re.match(r"url\(#([^)]+)\)", g.getAttribute("clip-path"))
        if not m or m.group(1) not in clips:
            continue
        x0, y0, x1, y1 = clips[m.group(1)]
        if any(n.getAttribute("transform") for n in g.getElementsByTagName("g")):
            continue  # shapes in another frame: their numbers are not the clip's
        for r in g.getElementsByTagName("rect"):
            x, y = float(r.getAttribute("x") or 0), float(r.getAttribute("y") or 0)
            a, b = max(x, x0), min(x + float(r.getAttribute("width") or 0), x1)
            c, d = max(y, y0), min(y + float(r.getAttribute("height") or 0), y1)
            if a >= b or c >= d:
                r.parentNode.removeChild(r)
                continue
            for key, v in (("x", a), ("y", c), ("width", b - a), ("height", d - c)):
                r.setAttribute(key, _f(v))
        for t in g.getElementsByTagName("text"):
            if t.getAttribute("x") and float(t.getAttribute("x")) < x0:
                t.parentNode.removeChild(t)  # a bar's label starting left of the plot
    return doc.documentElement.toxml()
