"""The Replay tab's log axis: labels never overlap, whatever the range (issue 12)."""
import pytest

pytest.importorskip("PySide6")
pytestmark = pytest.mark.gui

from PySide6.QtGui import QFont, QFontMetrics  # noqa: E402

from app.views.log_axis import LogAxis, power_text  # noqa: E402


def _labels(axis, lo, hi, size):
    out = []
    for _, values in axis.tickValues(lo, hi, size):
        for v, text in zip(values, axis.tickStrings(values, 1, 1)):
            if text:
                out.append(((v - lo) / (hi - lo) * size, text))
    return sorted(out)


@pytest.mark.parametrize("lo, hi, size", [(2.0, 4.8, 500), (1.9, 8.1, 400), (3.0, 3.9, 600), (5.0, 5.3, 700),
                                          (2.0, 4.8, 1500)])
def test_labels_never_overlap(qtbot, lo, hi, size):
    axis = LogAxis()
    axis.setLogMode(True)
    fm = QFontMetrics(QFont())
    labels = _labels(axis, lo, hi, size)
    assert len(labels) >= 2  # something to read, even inside one decade
    for (x0, a), (x1, b) in zip(labels, labels[1:]):
        assert x0 + fm.horizontalAdvance(a) / 2 < x1 - fm.horizontalAdvance(b) / 2, (a, b)
    decades = [power_text(float(k)) for k in range(int(lo) + 1, int(hi) + 1)]
    assert all(d in [t for _, t in labels] for d in decades)  # every decade named


def test_power_text():
    assert power_text(3.0) == "10³" and power_text(3 + 0.30103) == "2·10³" and power_text(-2.0) == "10⁻²"
