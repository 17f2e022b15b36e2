"""The form's layout pieces: the two-column form layout, and the collapsible group that holds a
nested section's fields."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFormLayout, QVBoxLayout, QWidget
from superqt import QCollapsible

from .error_label import ErrorLabel
from .values import INDENT


class _Group:
    """A nested section: a superqt QCollapsible titled by the field name, expanded."""

    def __init__(self, title: str, path: tuple, tip: str, chain: list):
        self.path, self.chain = path, chain
        self.coll = QCollapsible(title, expandedIcon="▼", collapsedIcon="▶")
        self.coll.setDuration(120)
        self.coll.layout().setContentsMargins(0, 2, 0, 2)
        self.coll.layout().setSpacing(0)
        self.coll.content().layout().setContentsMargins(INDENT, 0, 0, 0)
        btn = self.coll.toggleButton()
        # a section header takes keyboard focus (Space folds it): it must show that it has it
        btn.setStyleSheet("QPushButton { text-align: left; border: none; outline: none; font-weight: 600; "
                          "padding: 3px 0px; } QPushButton:focus { color: #0b57d0; text-decoration: underline; }")
        btn.setToolTip(tip)
        self.body = QWidget()
        lay = QVBoxLayout(self.body)
        lay.setContentsMargins(0, 0, 0, 4)
        lay.setSpacing(2)
        self.message = ErrorLabel()
        lay.addWidget(self.message)
        self.form = _form()
        lay.addLayout(self.form)
        self.coll.addWidget(self.body)
        self.coll.expand(animate=False)
        self._error = ""

    def set_error(self, text: str):
        if text != self._error:
            self._error = text
            self.message.set_message(text)


def _form() -> QFormLayout:
    form = QFormLayout()
    form.setContentsMargins(0, 0, 0, 0)
    form.setHorizontalSpacing(8)
    form.setVerticalSpacing(1)
    # Never wrap a row (label above field): QCollapsible caps a group at its content's size
    # hint, which is the unwrapped height, so in a narrow dock the wrapped rows were squashed
    # to half height. Unwrapped, a narrow field shrinks instead.
    form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.DontWrapRows)
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
    return form
