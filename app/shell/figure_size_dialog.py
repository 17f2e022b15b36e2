"""File → Export → Figure Size and Resolution…: the width, height and dpi of every figure the app
exports (Timeline as SVG/PNG/PDF, Current View), typed and checked as `kvviz run --width
--height --dpi` takes them (kvviz.export.figure_size), kept in the settings."""
from __future__ import annotations

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QFormLayout, QLabel, QLineEdit, QVBoxLayout

from kvviz.export.figure_size import DEFAULT_DPI, FigureSize, describe_px

KEYS = {"width": "figure/width", "height": "figure/height", "dpi": "figure/dpi"}


def stored_figure_size(settings: QSettings) -> FigureSize:
    """The size kept in the settings; the CLI's defaults when none is (or it no longer parses)."""
    try:
        return FigureSize.parse(*(settings.value(KEYS[k], "") or None for k in ("width", "height", "dpi")))
    except ValueError:
        return FigureSize()


def _text(px: float | None) -> str:
    return "" if px is None else f"{px / 96:g}in"


class FigureSizeDialog(QDialog):
    """Three fields and one line below them for the first wrong value (its height is kept, so
    nothing moves when it appears); OK is enabled while all three parse."""

    def __init__(self, settings: QSettings, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Figure Size and Resolution")
        self.settings = settings
        size = stored_figure_size(settings)
        self.fields = {"width": QLineEdit(_text(size.width_px)), "height": QLineEdit(_text(size.height_px)),
                       "dpi": QLineEdit(str(size.dpi))}
        self.fields["height"].setPlaceholderText("fit (the timeline's lanes; Current View: the view's proportions)")
        self.fields["dpi"].setPlaceholderText(str(DEFAULT_DPI))
        form = QFormLayout()
        form.addRow("Width:", self.fields["width"])
        form.addRow("Height:", self.fields["height"])
        form.addRow("Resolution (dpi):", self.fields["dpi"])
        note = QLabel("Lengths in px at 96 per inch or with a unit (6.5in, 165mm, 16.5cm, 468pt), as "
                      "<tt>kvviz run --width --height --dpi</tt>. PNG pixels = inches × dpi; Current View is "
                      "scaled to the width.")
        note.setWordWrap(True)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setStyleSheet("color: #a40000;")
        self.message.setMinimumHeight(2 * self.message.fontMetrics().lineSpacing() + 4)
        self.buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        lay.addWidget(note)
        lay.addWidget(self.message)
        lay.addWidget(self.buttons)
        for f in self.fields.values():
            f.textChanged.connect(self._check)
        self.resize(520, self.sizeHint().height())
        self._check()

    def size_chosen(self) -> FigureSize | None:
        try:
            return FigureSize.parse(*(self.fields[k].text() for k in ("width", "height", "dpi")))
        except ValueError:
            return None

    def _check(self):
        try:
            size = FigureSize.parse(*(self.fields[k].text() for k in ("width", "height", "dpi")))
        except ValueError as e:
            field, message = e.args
            self.message.setText(f"{field}: {message}")
            ok = False
        else:
            h = "fitted" if size.height_px is None else describe_px(size.height_px)
            self.message.setText(f"<span style='color:#333'>{describe_px(size.width_px)} × {h}, "
                                 f"{size.dpi} dpi</span>")
            ok = True
        self.buttons.button(QDialogButtonBox.Ok).setEnabled(ok)

    def accept(self):
        size = self.size_chosen()
        if size is None:
            return
        self.settings.setValue(KEYS["width"], _text(size.width_px))
        self.settings.setValue(KEYS["height"], _text(size.height_px))
        self.settings.setValue(KEYS["dpi"], str(size.dpi))
        super().accept()
