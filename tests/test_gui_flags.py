"""kvviz-gui's --select LANE@TIME and --measure T1,T2 as read before any window exists
(app.main.marks_of; issue 23): every time in range with a unit, or one line naming the flag."""
import pytest

from app.main import marks_of
from kvviz import ScenarioError


@pytest.mark.parametrize("select, measure, want", [
    ("GPU@1µs", None, (("GPU", 1e3), None)),      # µs is listed as a unit: it was refused
    ("GPU@1μs", None, (("GPU", 1e3), None)),      # the Greek mu, as keyboards type it
    ("GPU@1 US", None, (("GPU", 1e3), None)),
    ("a@b@2ms", None, (("a@b", 2e6), None)),      # a lane name may hold an @: the last one splits
    (None, "2us,1us", (None, (2e3, 1e3))),         # either order: the Δt says which
])
def test_times_with_any_listed_unit_are_read(select, measure, want):
    assert marks_of(select, measure, "timeline") == want


@pytest.mark.parametrize("select, measure, flag", [
    ("GPU@1e400us", None, "--select"),    # inf: the cursor or the search went to infinity
    ("GPU@1e300s", None, "--select"),     # finite text, infinite ns
    (None, "inf s,1us", "--measure"),
    (None, "0us,99999999999999999999999999s", "--measure"),  # beyond the simulator's time range
    ("GPU@-1us", None, "--select"),
    ("GPU@nan us", None, "--select"),
    ("GPU@10", None, "--select"),         # a unit is required
    (None, "1us,2us,3us", "--measure"),
    (None, "1us,2us", "--measure"),       # right times, wrong view (below)
])
def test_bad_times_are_one_line_naming_the_flag(select, measure, flag):
    view = "occupancy" if measure == "1us,2us" else "timeline"
    with pytest.raises(ScenarioError) as e:
        marks_of(select, measure, view)
    assert e.value.field == flag and "\n" not in str(e.value)
