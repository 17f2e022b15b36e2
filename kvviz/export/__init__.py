"""Exporters that need no Qt: they read a finished Result and write files.

Every export format is one record in a registry (registry.ExportFormat), the one list the app's
File → Export menu, its writer (app/export_render.py) and `kvviz run`'s flags are built from:
adding a format is one file here that calls `register`, and its import line below
(docs/extend/exporter.md)."""
from __future__ import annotations

from .registry import EXPORT_FORMATS, ExportFormat, Files, export_format, register

__all__ = ["EXPORT_FORMATS", "ExportFormat", "Files", "export_format", "register"]

# Importing a format's file registers it (this order = the order of the menu and of --help).
# isort: off
from . import known  # noqa: E402,F401
# isort: on
