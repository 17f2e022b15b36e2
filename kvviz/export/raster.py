"""PNG and PDF of an SVG figure, rasterised by Qt's SVG renderer in a child process.

The command line never loads Qt; the child (`python -m kvviz.export.qt_render`, the one kvviz
module that imports it) does, offscreen, so this works with no display. One layout (the SVG)
serves all three formats, so they always agree. The child hands back bytes: what is written,
and where, is the caller's (kvviz.outputs), so a failed render leaves no file at all.
"""
from __future__ import annotations

import os
import subprocess
import sys

from ..errors import ScenarioError


class ExportError(Exception):
    """A figure could not be rendered (not a user input problem)."""


def render(svg: str, fmt: str, dpi: int = 300) -> bytes:
    """The figure as PNG or PDF bytes."""
    if fmt not in ("png", "pdf"):
        raise ScenarioError(f"unknown figure format {fmt!r} (png or pdf)", "export", "format")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    cmd = [sys.executable, "-m", "kvviz.export.qt_render", "--format", fmt, "--dpi", str(dpi)]
    try:
        p = subprocess.run(cmd, input=svg.encode("utf-8"), capture_output=True, env=env, timeout=600)
    except subprocess.TimeoutExpired:
        raise ExportError(f"rendering the {fmt.upper()} took too long") from None
    if p.returncode != 0 or not p.stdout:
        msg = p.stderr.decode("utf-8", "replace").strip().splitlines()
        hint = msg[-1] if msg else f"exit code {p.returncode}"
        if "No module named" in hint:
            hint += " (PNG/PDF export needs the app's packages: pip install 'kvviz[gui]')"
        raise ExportError(f"could not render the {fmt.upper()}: {hint}")
    return p.stdout
