"""The Occupancy view's tier field: it lists the open run's tiers in the palette's colours, shows
the grid for the tier the run's slots are in, says so for a tier it has no slot record of, and
follows a switch of scenario (the tier chosen kept where the new run has it)."""
from __future__ import annotations

import pytest

from kvviz.palette import tier_color

from .conftest import shown

pytestmark = pytest.mark.gui


def _items(view) -> list[tuple[str, str]]:
    box = view.tier_box
    return [(box.itemText(i), box.itemIcon(i).pixmap(12, 12).toImage().pixelColor(6, 6).name())
            for i in range(box.count())]


def test_the_tier_field_lists_the_runs_tiers_in_their_colours_and_follows_a_switch(qtbot, bundled, bundled_small):
    from app.views.occupancy import OccupancyView
    store, rope = bundled_small["attention_store_sharegpt"], bundled["rope_prefetch_16"]
    occ = shown(qtbot, OccupancyView(), 900, 420, store)
    assert store.trace.slot_tier == "DRAM"
    assert _items(occ) == [(lab, tier_color(k).lower()) for lab, k in (("HBM", "hbm"), ("DRAM", "dram"), ("SSD", "ssd"))]
    assert occ.tier == "dram" and not occ.stack.showing_note and occ.tier_box.isEnabled()

    occ.tier_box.setCurrentIndex(2)  # SSD: the run keeps no slot-by-slot record of it
    assert occ.tier == "ssd" and occ.stack.showing_note
    note = occ.stack.note.text()
    assert "only for DRAM, not for SSD" in note and "session" in note

    occ.tier_box.setCurrentIndex(0)  # HBM: the same, and back to DRAM shows the grid again
    assert occ.stack.showing_note and "not for HBM" in occ.stack.note.text()
    occ.tier_box.setCurrentIndex(1)
    assert not occ.stack.showing_note

    occ.tier_box.setCurrentIndex(2)  # SSD chosen, then a run whose slots are HBM's and which has SSD (flash)
    occ.set_result(rope)
    qtbot.wait(20)
    assert [t for t, _ in _items(occ)] == ["HBM", "SSD"]
    assert occ.tier == "ssd" and occ.stack.showing_note  # the choice kept, said to have no slot record
    occ.tier_box.setCurrentIndex(0)
    assert occ.tier == "hbm" and not occ.stack.showing_note and occ.grid is not None

    occ.set_result(store)  # DRAM is not rope's: back on a run with it, the run's slot tier again
    qtbot.wait(20)
    assert occ.tier == "hbm" and occ.stack.showing_note  # hbm was the last choice, and the store has it
    occ.tier_box.setCurrentIndex(1)
    assert occ.tier == "dram" and not occ.stack.showing_note


def test_a_run_without_slot_records_lists_its_tiers_and_says_it_has_none(qtbot, bundled_small):
    from app.views.occupancy import OccupancyView
    r = bundled_small["prefix_cache_tiers"]
    occ = shown(qtbot, OccupancyView(), 900, 420, r)
    assert [t for t, _ in _items(occ)] == ["HBM", "CXL", "DRAM", "SSD", "remote"]
    assert occ.stack.showing_note and "no residency records" in occ.stack.note.text()
    occ.tier_box.setCurrentIndex(3)
    assert occ.stack.showing_note and "no residency records" in occ.stack.note.text()

