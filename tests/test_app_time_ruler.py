"""The time ruler far into a long run (issue 33): ticks counted from the run's start read
"972410 972415 972420 ms", six digits of which four never change; the ruler now counts from a
round time just before the view, said once in the axis title ("from 972.4 s (16 min 12.4 s)"),
and from the run's start again when the view is near it."""
from __future__ import annotations

import numpy as np
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
    # the hover, cursor and details read from the same base as the ticks, in the view's unit
    assert tl.fmt.at(972_410e6) == f"{10:.{tl.fmt.places}f} ms from 972.4 s (16 min 12.4 s)", tl.fmt.at(972_410e6)
    assert tl.fmt.exact().at(972_410_000_123) == "10.000123 ms from 972.4 s (16 min 12.4 s)"
    # t = 0 at the cursor wins over the base
    tl.time_cursor.setValue(t0 + 10e6 / tl.scale)
    tl.relative.setChecked(True)
    qtbot.wait(20)
    assert axis.labelText.endswith("from the cursor") and ", from 972" not in axis.labelText


def _readout_time(text: str) -> str:
    """The "t = …" part of a hover line."""
    return text.split("t = ", 1)[1].split(" · ")[0].split(", ")[0]


@pytest.mark.gui
def test_hover_times_read_from_the_rulers_base_alike_in_every_time_view(qtbot, bundled_small):
    """Zoomed far into a run, the Timeline, Counters and Occupancy hovers write a time the same
    way: a few digits in the visible span's unit from the base the ruler states, never the time
    since the run's start in that unit (8 digits of µs or ms); near the start, from the start."""
    from app.views.counters import CountersView
    from app.views.occupancy import OccupancyView

    from .conftest import shown
    r = bundled_small["attention_store_sharegpt"]
    tl = shown_timeline(qtbot, r)
    counters = shown(qtbot, CountersView(), 900, 500, r)
    occ = shown(qtbot, OccupancyView(), 900, 500, r)
    res = r.trace.residency
    t = int(np.median(res["start"]))  # a time with sessions resident, far into the run
    assert t > 1e9
    for view, vb in ((tl, tl.viewbox), (counters, counters.plots[0].getViewBox()),
                     (occ, occ.plot.getPlotItem().getViewBox())):
        vb.setXRange((t - 5e6) / view.scale, (t + 5e6) / view.scale, padding=0)  # 10 ms wide
    qtbot.wait(20)
    texts = [f"t = {tl.fmt.at(t)}", counters.hover_text(0, t), occ.describe(t / occ.scale, 0)]
    got = {_readout_time(x) for x in texts}
    assert len(got) == 1, texts  # one reading in every view
    (reading,) = got
    number, unit, _, since = reading.split(" ", 3)
    assert unit == tl.fmt.unit and len(number.split(".")[0]) <= 4, reading  # less than the base's step
    axis = tl.plot.getPlotItem().getAxis("bottom")
    assert axis.labelText.endswith(f", from {since}"), (axis.labelText, reading)  # the ruler's own base
    base_s = float(since.split(" s")[0].replace(",", ""))
    assert float(number) * tl.fmt.ns + base_s * 1e9 == pytest.approx(t, abs=tl.ns_per_pixel())  # the same instant
    tl.viewbox.setXRange(0, 10e6 / tl.scale, padding=0)  # near the start: from the start, no base said
    qtbot.wait(20)
    assert tl.fmt.at(5e6) == f"{5:.{tl.fmt.places}f} ms"


def test_a_duration_below_the_views_last_digit_reads_in_its_own_unit():
    """Zoomed out to seconds, a 5 ms save read "(0.0 s)" in the hover: a duration the view's
    digits round to nothing is said in its own unit; one they can show keeps the view's unit."""
    from app.views.timeline_details import TimeFormat
    zoomed_out = TimeFormat("s", 1e9, 1)
    assert zoomed_out.dur(5_123_000) == "5.12 ms"
    assert zoomed_out.dur(1_234) == "1.23 µs"
    assert zoomed_out.dur(2.5e9) == "2.5 s"
    assert zoomed_out.dur(0) == "0.0 s"
