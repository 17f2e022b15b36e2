"""The toolbar's scenario picker: the bundled scenarios by name, plus one entry for an opened
file that is not bundled, always showing the file the window has open (not the last choice,
which a cancelled prompt or File → Open would leave behind)."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox

from kvviz.format import printable

OTHER_FILE = Qt.UserRole + 1  # marks the entry of an opened file that is not bundled


class ScenarioPicker(QComboBox):
    def __init__(self, bundled: list[Path], parent=None):
        super().__init__(parent)
        self.setMinimumWidth(280)
        self.setPlaceholderText("choose a scenario…")  # shown while no file is open
        for p in bundled:
            self.addItem(p.stem, str(p))

    def path_of(self, name: str) -> str | None:
        i = self.findText(name)
        return self.itemData(i) if i >= 0 else None

    def show_file(self, path: str | None) -> None:
        """Select `path`: its bundled entry, or one extra entry named by the file."""
        for i in reversed(range(self.count())):
            if self.itemData(i, OTHER_FILE):
                self.removeItem(i)
        if path is None:  # none open: no entry, not the first one as if it were open
            self.setCurrentIndex(-1)
            return
        want = Path(path).resolve()
        i = next((j for j in range(self.count()) if Path(self.itemData(j)).resolve() == want), -1)
        if i < 0:
            self.addItem(printable(Path(path).name), str(path))
            i = self.count() - 1
            self.setItemData(i, True, OTHER_FILE)
            self.setItemData(i, str(path), Qt.ToolTipRole)
        self.setCurrentIndex(i)
