"""Bake scale-and-translate transforms into the coordinates of an SVG's simple shapes, and cut
shapes to their view box's clip in the geometry itself.

pyqtgraph's exporter writes a plot's items in data coordinates under a group transform such as
matrix(3141.55,0,0,79.66,194,48.8), with vector-effect="non-scaling-stroke" to keep the 0.8-px
outlines thin. Renderers without SVG Tiny's vector-effect (ImageMagick's) scaled the outline
by 3,141 and painted every bar over in white. With the transform baked into each rect, path and
polyline, the numbers are pixels and every renderer draws the same picture. Qt's own renderer
(SVG Tiny) ignores clip-path: cut_to_clips trims what lies outside a view box so it draws the
same picture too."""
from __future__ import annotations

import re
from xml.dom import minidom

MATRIX = re.compile(r"^\s*matrix\(([^)]*)\)\s*$")
NUMBER = re.compile(r"-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|-?\.\d+(?:[eE][-+]?\d+)?")
SIMPLE_PATH = re.compile(r"^[MLCZ0-9eE.,\s+-]*$")  # absolute moves, lines, curves: pairs of numbers
SHAPES = ("rect", "path", "polyline", "polygon")


def _f(v: float) -> str:
    return f"{v:.3f}".rstrip("0").rstrip(".")


def _map_pairs(text: str, a: float, d: float, e: float, f: float) -> str:
    k = [0]

    def sub(m):
        v = float(m.group(0))
        k[0] += 1
        return _f(a * v + e) if k[0] % 2 == 1 else _f(d * v + f)
    return NUMBER.sub(sub, text)


def _elements(node):
    return [n for n in node.childNodes if n.nodeType == n.ELEMENT_NODE]


def _flatten_group(g, a: float, d: float, e: float, f: float) -> bool:
    """Bake matrix(a,0,0,d,e,f) into g's children, if all of them can take it: shapes always,
    text only under a translation (a scaled text would need its font scaled too)."""
    kids = _elements(g)
    for n in kids:
        if n.tagName == "path" and not SIMPLE_PATH.match(n.getAttribute("d")):
            return False  # relative commands or arcs: left as they are
        if n.tagName == "text" and not (a == 1 and d == 1 and not _elements(n)):
            return False
        if n.tagName not in SHAPES + ("text",):
            return False
    for n in kids:
        if n.tagName == "rect":
            x, y = float(n.getAttribute("x") or 0), float(n.getAttribute("y") or 0)
            w, h = float(n.getAttribute("width") or 0), float(n.getAttribute("height") or 0)
            x0, x1 = sorted((a * x + e, a * (x + w) + e))
            y0, y1 = sorted((d * y + f, d * (y + h) + f))
            for key, v in (("x", x0), ("y", y0), ("width", x1 - x0), ("height", y1 - y0)):
                n.setAttribute(key, _f(v))
        elif n.tagName == "text":
            n.setAttribute("x", _f(float(n.getAttribute("x") or 0) + e))
            n.setAttribute("y", _f(float(n.getAttribute("y") or 0) + f))
        elif n.tagName == "path":
            n.setAttribute("d", _map_pairs(n.getAttribute("d"), a, d, e, f))
        else:
            n.setAttribute("points", _map_pairs(n.getAttribute("points"), a, d, e, f))
        if n.getAttribute("vector-effect") == "non-scaling-stroke":
            n.removeAttribute("vector-effect")  # the stroke is in pixels now
    g.removeAttribute("transform")
    return True


def flatten_transforms(svg: str) -> str:
    """`svg` with every group of simple shapes (or of text, under a translation) with a
    matrix(a,0,0,d,e,f) transform rewritten in the parent's coordinates; anything else is left
    as it was."""
    doc = minidom.parseString(svg)
    for g in doc.getElementsByTagName("g"):
        m = MATRIX.match(g.getAttribute("transform"))
        if not m:
            continue
        a, b, c, d, e, f = (float(v) for v in m.group(1).split(","))
        if b == 0 and c == 0:
            _flatten_group(g, a, d, e, f)
    return doc.documentElement.toxml()


def _pairs(text: str) -> list[tuple[float, float]]:
    nums = [float(v) for v in NUMBER.findall(text)]
    return list(zip(nums[0::2], nums[1::2]))


def _bounds(text: str) -> tuple[float, float, float, float] | None:
    pts = _pairs(text)
    if len(pts) < 2:
        return None
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    return min(xs), min(ys), max(xs), max(ys)


def _in_frame(node) -> list:
    """The shapes and text under `node` in its coordinates: not below another transform."""
    out = []
    for n in _elements(node):
        if n.tagName == "g":
            if not n.getAttribute("transform"):
                out.extend(_in_frame(n))
        elif n.tagName in SHAPES + ("text",):
            out.append(n)
    return out


def _cut_rect(x: float, y: float, w: float, h: float, clip) -> tuple[float, float, float, float] | None:
    x0, y0, x1, y1 = clip
    a, b, c, d = max(x, x0), min(x + w, x1), max(y, y0), min(y + h, y1)
    return None if a >= b or c >= d else (a, c, b - a, d - c)


def _is_box(pts) -> bool:
    """Points of an axis-aligned rectangle (4 corners, maybe closed by a fifth)."""
    if len(pts) == 5 and pts[0] == pts[4]:
        pts = pts[:4]
    if len(pts) != 4:
        return False
    return all(p == q or p[0] == q[0] or p[1] == q[1] for p, q in zip(pts, pts[1:] + pts[:1]))


def _cut(n, clip) -> None:
    """Cut one element to `clip` (x0, y0, x1, y1): removed when wholly outside, trimmed where the
    cut is exact (rectangles, boxes drawn as paths, straight axis-aligned lines), else kept."""
    x0, y0, x1, y1 = clip
    if n.tagName == "text":
        x, y = float(n.getAttribute("x") or 0), float(n.getAttribute("y") or 0)
        if x < x0 - 0.5 or x >= x1 or y < y0 or y > y1 + 12:
            n.parentNode.removeChild(n)  # a label starting outside the plot (over the lane names)
        return
    if n.tagName == "rect":
        box = (float(n.getAttribute(k) or 0) for k in ("x", "y", "width", "height"))
        if (cut := _cut_rect(*box, clip)) is None:
            n.parentNode.removeChild(n)
        else:
            for key, v in zip(("x", "y", "width", "height"), cut):
                n.setAttribute(key, _f(v))
        return
    key = "d" if n.tagName == "path" else "points"
    text = n.getAttribute(key)
    if n.tagName == "path" and not SIMPLE_PATH.match(text):
        return
    pts, b = _pairs(text), _bounds(text)
    if b is None:
        return
    if b[2] < x0 or b[0] > x1 or b[3] < y0 or b[1] > y1:
        n.parentNode.removeChild(n)
        return
    straight = n.tagName == "polyline" and len(pts) == 2 and (b[0] == b[2] or b[1] == b[3])
    is_box = n.tagName != "polyline" and not re.search(r"C", text) and _is_box(pts)
    if not (straight or is_box):
        return  # a marker partly outside: a few pixels, drawn as it is
    if straight:
        (a, c), (bb, d) = (max(b[0], x0), max(b[1], y0)), (min(b[2], x1), min(b[3], y1))
        n.setAttribute(key, f"{_f(a)},{_f(c)} {_f(bb)},{_f(d)}")
        return
    if (cut := _cut_rect(b[0], b[1], b[2] - b[0], b[3] - b[1], clip)) is None:
        n.parentNode.removeChild(n)
        return
    x, y, w, h = cut
    corners = [(x, y), (x + w, y), (x + w, y + h), (x, y + h), (x, y)]
    if n.tagName == "path":
        n.setAttribute(key, "M" + " L".join(f"{_f(p)},{_f(q)}" for p, q in corners))
    else:
        n.setAttribute(key, " ".join(f"{_f(p)},{_f(q)}" for p, q in corners))


def cut_to_clips(svg: str) -> str:
    """Shapes and text under a rectangular clip path cut to it, in the geometry itself: a
    renderer that ignores clip-path (Qt's draws SVG Tiny) still shows nothing outside the plot.
    Run after flatten_transforms (the shapes' numbers are then in the clip's coordinates); what
    is still under a transform of its own is left to the clip path."""
    doc = minidom.parseString(svg)
    clips = {}
    for c in doc.getElementsByTagName("clipPath"):
        paths = c.getElementsByTagName("path")
        if paths and (b := _bounds(paths[0].getAttribute("d"))) is not None:
            clips[c.getAttribute("id")] = b
        for p in paths:
            # Qt's renderer draws a clip path's outline as a shape, in the stroke it inherits
            p.setAttribute("stroke", "none")
            p.setAttribute("fill", "none")
    for g in doc.getElementsByTagName("g"):
        m = re.match(r"url\(#([^)]+)\)", g.getAttribute("clip-path"))
        if m and m.group(1) in clips:
            for n in _in_frame(g):
                _cut(n, clips[m.group(1)])
    return doc.documentElement.toxml()
