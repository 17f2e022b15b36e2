"""Opening another scenario leaves nothing of the previous one on screen (issue 33, item 3):
the capacity surface's axes, grid and `kvviz sweep` command, the timeline's search count,
selection, second cursor and hover line; and the tab on screen is never an empty one."""
from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF

from .conftest import SCENARIOS, wait_new_result

pytestmark = pytest.mark.gui

TIERED = """kind = "prefix_cache"
name = "{name}"
policies = ["lru", "fifo"]
[workload]
requests = 80
documents = 8
seed = 5
block_tokens = 256
{tiers}"""
THREE = "".join(f'[[tiers]]\nname = "{n}"\ncapacity_blocks = {c}\n' for n, c in (("hbm", 6), ("dram", 16), ("ssd", 40)))
TWO = "".join(f'[[tiers]]\nname = "{n}"\ncapacity_blocks = {c}\n' for n, c in (("hbm", 4), ("cxl", 30)))


def _open(qtbot, window, path):
    old = window.result
    assert window.open(str(path))
    wait_new_result(qtbot, window, old)
    qtbot.waitUntil(lambda: not window.runner.busy(), timeout=60_000)
    return window.result


def test_the_capacity_surface_of_the_previous_scenario_goes(window, qtbot, tmp_path):
    first, second = tmp_path / "three_tiers.toml", tmp_path / "two_tiers.toml"
    first.write_text(TIERED.format(name="three", tiers=THREE), encoding="utf-8")
    second.write_text(TIERED.format(name="two", tiers=TWO), encoding="utf-8")
    _open(qtbot, window, first)
    window.show_view("tiers")
    tiers = window.tab("tiers")
    tiers.show_page("surface")
    surface = tiers.surface
    surface.configure("hbm", "2,6", "ssd", "10,40", "policies.lru.token_hit_rate")
    with qtbot.waitSignal(surface.finished, timeout=120_000):
        surface.run()
    assert "three_tiers.toml" in surface.command() and "kvviz sweep" in surface.status.text()
    pi = surface.plot.getPlotItem()
    assert pi.getAxis("left").labelText == "HBM capacity (blocks)"

    _open(qtbot, window, second)  # two other tiers: the old grid, axes and command mean nothing
    assert surface.command() == "" and "kvviz sweep" not in surface.status.text()
    assert surface.result is None and surface.data_rows() is None
    assert pi.getAxis("left").labelText == "" and pi.getAxis("bottom").labelText == ""
    assert pi.getAxis("left")._tickLevels is None
    assert [surface.y_tier.itemText(i) for i in range(surface.y_tier.count())] == ["HBM", "CXL"]
    assert surface.source == str(second)
    assert "two_tiers.toml" in _surface_command_after_a_run(qtbot, surface)

    _open(qtbot, window, SCENARIOS / "engram_qwen3_32b_cxl.toml")  # no tiers at all: said, not the last grid
    assert surface.result is None and surface.command() == "" and surface.y_tier.count() == 0
    assert not surface.jobs.run_btn.isEnabled() and "applies to" in surface.status.text()
    assert not window.tabs.isTabEnabled(window.tab_list.index(tiers))


def _surface_command_after_a_run(qtbot, surface) -> str:
    surface.configure("hbm", "2", "cxl", "10,30", "policies.lru.token_hit_rate")
    with qtbot.waitSignal(surface.finished, timeout=120_000):
        surface.run()
    return surface.command()


def test_search_count_selection_cursors_and_hover_do_not_carry_over(window, qtbot):
    from PySide6.QtCore import Qt
    tl = window.view("timeline")
    window.show_view("timeline")
    tl.search.setText("pos 1")
    qtbot.keyClick(tl.search, Qt.Key_Return)
    assert tl.matches and tl.match_label.text().startswith("1 of")
    assert tl.selection is not None
    tl.place_second_cursor(60_000)
    assert tl.cursor_b.isVisible()
    tl.info.setText("naive · serial demand fetch: pos 3 …")  # as a hover leaves it
    _open(qtbot, window, SCENARIOS / "engram_qwen3_32b_cxl.toml")
    assert tl.match_label.text() == "" and not tl.matches  # no count of the previous run's events
    assert tl.search.text() == "pos 1"  # kept: Enter searches the new run
    assert tl.selection is None and not tl.cursor_b.isVisible() and tl.range_ns is None
    assert tl.info.text().strip() == ""
    qtbot.keyClick(tl.search, Qt.Key_Return)  # counted again, in the run now open
    assert tl.match_label.text() in ("no match", "") or tl.match_label.text().startswith("1 of")


def test_a_re_run_counts_its_own_matches(window, qtbot):
    from PySide6.QtCore import Qt
    tl = window.view("timeline")
    tl.search.setText("pos 1")
    qtbot.keyClick(tl.search, Qt.Key_Return)
    assert tl.match_label.text().startswith("1 of")
    old = window.result
    window.panel.set_value("storage.latency_us", 30)
    wait_new_result(qtbot, window, old)
    assert tl.match_label.text() == ""


@pytest.mark.parametrize("start, tab", [("ladder_seed", "ladder"), ("attention_store_mooncake", "policies")])
def test_opening_from_a_tab_the_new_scenario_lacks_never_lands_on_an_empty_tab(window, qtbot, start, tab):
    _open(qtbot, window, SCENARIOS / f"{start}.toml")
    window.show_view("ladder")
    assert window.tabs.tabText(window.tabs.currentIndex()).lower() == tab
    assert window.tabs.isTabEnabled(window.tabs.currentIndex())
    result = _open(qtbot, window, SCENARIOS / "rope_prefetch_16.toml")  # no ladder, no policies
    current = window.current_tab()
    assert current.name == "timeline", current.name  # not Compare (with nothing pinned, empty)
    assert window.tabs.isTabEnabled(window.tabs.currentIndex())
    assert not window.tabs.isTabEnabled(window.tab_list.index(window.tab("ladder")))
    assert current.unavailable(result) is None
    vb = window.view("timeline").plot.getPlotItem().getViewBox()
    assert vb.mapViewToScene(QPointF(0, 0)) is not None  # drawn (the timeline has the run)
    assert window.view("timeline").result is result
