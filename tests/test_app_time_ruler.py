"""The time ruler far into a long run (issue 33): ticks counted from the run's start read
"972410 972415 972420 ms", six digits of which four never change; the ruler now counts from a
round time just before the view, said once in the axis title ("from 972.4 s (16 min 12.4 s)"),
and from the run's start again when the view is near it."""
from __future__ import annotations

import pytest

from .conftest import shown_timeline


def test_readable_time_of_a_base():
    from app.views.time_units import readable_time
    assert readable_time(972.4e9, 1e8) == "972.4 s (16 min 12.4 s)"
    assert readable_time(29_040.8e9, 1e8) == "29,040.8 s (8 h 4 min 0.8 s)"
    assert readable_time(12.34e9, 1e7) == "12.34 s"
    assert readable_time(5e9, 1e10) == "5 s"


@pytest.mark.gui
def test_the_ruler_counts_from_a_round_time_before_a_view_far_into_the_run(qtbot, bundled):
    result = bundled["attention_store_mooncake"]
    tl = shown_timeline(qtbot, result)
    axis = tl.plot.getPlotItem().getAxis("bottom")
    tl.viewbox.setXRange(0, result.trace.t_end / tl.scale, padding=0)  # the whole run: from its start
    qtbot.wait(20)
    assert ", from" not in axis.labelText and tl.time_axis.origin == 0
    t0 = 972_408e6 / tl.scale  # 972.408 s in, 30 ms wide
    tl.viewbox.setXRange(t0, t0 + 30e6 / tl.scale, padding=0)
    qtbot.wait(20)
    assert axis.labelText.endswith("time (ms), from 972.4 s (16 min 12.4 s)"), axis.labelText
    ticks = [s for _, vals in axis.tickValues(*tl.viewbox.viewRange()[0], 800)[-1:]
             for s in axis.tickStrings(vals, axis.scale, 1.0)]
    assert ticks and all(len(s.split(".")[0].lstrip("-")) <= 3 for s in ticks), ticks  # 8, 10 … 38: no 972410
    # the hover and cursor still read the time in the run: only the ruler counts from the base
    assert tl.fmt.at(972_410e6).startswith("972410")
    # t = 0 at the cursor wins over the base
    tl.time_cursor.setValue(t0 + 10e6 / tl.scale)
    tl.relative.setChecked(True)
    qtbot.wait(20)
    assert axis.labelText.endswith("from the cursor") and ", from 972" not in axis.labelText
