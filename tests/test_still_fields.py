"""No shifting state (issue 22, item 8): an invalid value is said once — at its field — and the
field being typed in stays where it is on screen, whatever else gets marked."""
from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint


def _y(window, widget) -> int:
    return widget.mapTo(window, QPoint(0, 0)).y()


@pytest.mark.gui
def test_an_invalid_value_is_said_once_and_its_field_stays_put(window, qtbot):
    panel = window.panel
    queries = panel.widget_for("sequence.queries")
    queries.setFocus()
    qtbot.wait(20)
    before = _y(window, queries)
    queries.selectAll()
    qtbot.keyClicks(queries, "8, 99")
    qtbot.wait(50)
    message = "position 99 is outside the sequence 0..15"
    assert message in panel.error_text("sequence.queries")  # at the field
    assert not panel.banner.isVisible()  # not a second time above (or below) the form
    assert message not in window.status.text() and "sequence.queries" in window.status.text()
    assert _y(window, queries) == before


@pytest.mark.gui
def test_a_message_appearing_above_the_typed_field_does_not_move_it(window, qtbot):
    panel = window.panel
    slots = panel.widget_for("cache.slots")  # below sequence.queries in the form
    slots.setFocus()
    qtbot.wait(20)
    before = _y(window, slots)
    # a refusal blamed on a field above it, three lines long
    panel.mark_refused("sequence.queries", "a long reason\nthat takes\nthree lines")
    qtbot.wait(50)
    assert panel.error_text("sequence.queries").endswith("three lines")
    assert panel.widget_for("sequence.queries").parentWidget().message.isVisible()
    assert _y(window, slots) == before


@pytest.mark.gui
def test_a_problem_no_field_shows_goes_to_the_banner_below_the_form(window, qtbot):
    panel = window.panel
    panel.mark_refused("no_such_field", "what the simulation said")
    assert panel.banner.isVisible() and "what the simulation said" in panel.banner.text()
    assert panel.banner.geometry().top() >= panel._scroll.geometry().bottom()  # below: nothing moves down
