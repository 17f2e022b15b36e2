"""Guard against PySide6 6.12 on CPython 3.11 aborting after a few thousand Qt calls
("Fatal Python error: none_dealloc"): make 100,000+ Qt calls, including many returning None,
in a fresh process, and require a clean exit."""
import subprocess
import sys

import pytest

pytestmark = pytest.mark.gui

CODE = r"""
import os
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
from PySide6.QtCore import QObject, QRectF, QPointF
from PySide6.QtWidgets import QApplication, QWidget
app = QApplication([])
o, w = QObject(), QWidget()
n = 0
for i in range(25_000):
    o.setObjectName(f"o{i}")        # returns None: the call the bug mis-counts
    w.setMinimumWidth(i % 100)       # returns None
    r = QRectF(0, 0, i, 1); r.translate(QPointF(1, 1))  # returns None
    n += 4
print("calls", n)
"""


def test_100k_qt_calls_do_not_abort():
    p = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "calls 100000" in p.stdout
