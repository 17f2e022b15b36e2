"""Where save dialogs open: the folder of the last export, the Documents folder at first; never
the directory the app was started from, which is often a source tree (`make run`)."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, QStandardPaths

KEY = "exportDir"


def start_path(settings: QSettings | None, name: str) -> str:
    folder = settings.value(KEY) if settings is not None else None
    if not folder or not Path(folder).is_dir():
        docs = QStandardPaths.writableLocation(QStandardPaths.DocumentsLocation)
        folder = docs if docs and Path(docs).is_dir() else str(Path.home())
    return str(Path(folder) / name)


def remember(settings: QSettings | None, path: str) -> None:
    if settings is not None:
        settings.setValue(KEY, str(Path(path).parent))
