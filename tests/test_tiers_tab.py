"""The Tiers tab (issue 21, item 7): each policy's hits split by tier as stacked bars, and the
capacity surface over two tiers' sizes, on a small generated prefix_cache workload."""
from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from kvviz import load_scenario, simulate
from kvviz.scenario_data import read_toml

from .conftest import shown

SMALL = """kind = "prefix_cache"
name = "small"
policies = ["lru", "fifo", "belady"]
[workload]
requests = 160
documents = 12
seed = 5
block_tokens = 256
[[tiers]]
name = "hbm"
capacity_blocks = 6
[[tiers]]
name = "dram"
capacity_blocks = 16
[[tiers]]
name = "ssd"
capacity_blocks = 40
"""


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text(SMALL, encoding="utf-8")
    return path, simulate(load_scenario(path))


# --- iso-lines (no Qt) ----------------------------------------------------------------------

def test_iso_line_of_a_linear_grid_sits_where_the_values_cross():
    from app.views.iso_lines import iso_segments, nice_levels
    grid = np.array([[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]])  # rises along x (columns) only
    x, y = iso_segments(grid, 1.5)
    assert x.size == 2 and np.allclose(x, 1.5) and sorted(y.tolist()) == [0.0, 1.0]
    grid[1, 2] = np.nan  # a cell not run yet: its square draws nothing
    assert iso_segments(grid, 1.5)[0].size == 0
    assert nice_levels(0.12, 0.65) == [0.2, 0.3, 0.4, 0.5, 0.6]


def test_default_capacities_double_up_to_the_working_set():
    from app.views.capacity_surface import default_values
    assert default_values(40148, 0.16777216, "capacity_gb") == (210.0, 420.0, 840.0, 1700.0, 3400.0, 6700.0)
    assert default_values(64, 1.0, "capacity_blocks") == (2, 4, 8, 16, 32, 64)
    assert min(default_values(3, 0.5, "capacity_gb")) >= 0.5  # never less than one block


# --- bars -----------------------------------------------------------------------------------

@pytest.mark.gui
def test_bars_sum_to_each_policys_token_hit_rate_and_export(qtbot, small):
    from app.tabs.base import TabContext
    from app.tabs.tiers import TiersTab
    from kvviz.export.table import table_csv
    _, result = small
    tab = TiersTab(TabContext())
    qtbot.addWidget(tab.widget)
    assert tab.unavailable(result) is None and tab.opens_first(result)
    tab.set_result(result)
    m = result.metrics_dict()
    head, rows = tab.data_rows()
    assert [r[0] for r in rows] == ["lru", "fifo", "belady"]
    parts = [head.index(f"{t}_token_hit_rate") for t in ("hbm", "dram", "ssd")]
    for r in rows:
        rate = m["policies"][r[0]]["token_hit_rate"]
        assert r[head.index("token_hit_rate")] == rate
        assert sum(r[k] for k in parts) == pytest.approx(rate, abs=1e-12)
        assert r[head.index("hit_rate_ceiling")] == m["hit_rate_ceiling"]
    assert any(r[parts[2]] > 0 for r in rows)  # the SSD serves hits here: a split, not one colour
    text = table_csv(head, rows)
    assert list(csv.reader(io.StringIO(text)))[1][0] == "lru"


@pytest.mark.gui
def test_hover_names_the_tier_and_its_value(qtbot, small):
    from PySide6.QtCore import QPointF

    from app.views.tier_bars import TierBarsView
    _, result = small
    view = shown(qtbot, TierBarsView(), 900, 400, result, 20)
    row = view.rows[0]
    hbm, dram = row["parts"]["hbm"], row["parts"]["dram"]
    vb = view.plot.getPlotItem().getViewBox()
    text = view.text_at(vb.mapViewToScene(QPointF(hbm + dram / 2, 0.0)))  # the middle of lru's DRAM part
    assert text.startswith("lru · DRAM: ") and f"{100 * dram:.1f}% of prompt tokens" in text
    whole = view.text_at(vb.mapViewToScene(QPointF(row["rate"] + 0.05, 0.0)))  # right of the bar
    assert f"token hit rate {100 * row['rate']:.1f}%" in whole and "ceiling" in whole
    view._on_move(vb.mapViewToScene(QPointF(hbm + dram / 2, 0.0)))
    assert view.info.text().startswith("lru · DRAM: ")
    view.set_result(result)  # a re-run: the hover line described the previous one
    assert view.info.text().strip() == ""


@pytest.mark.gui
def test_the_tab_applies_by_the_record_not_the_kind(qtbot, seed16):
    from app.tabs.base import TabContext
    from app.tabs.tiers import TiersTab
    tab = TiersTab(TabContext())
    qtbot.addWidget(tab.widget)
    reason = tab.unavailable(simulate(seed16))
    assert reason is not None and "prefix_cache" in reason


# --- the capacity surface -------------------------------------------------------------------

@pytest.mark.gui
def test_surface_cells_equal_separate_runs_and_export(qtbot, small):
    from app.views.capacity_surface import CapacitySurfaceView
    path, result = small
    view = shown(qtbot, CapacitySurfaceView(), 900, 600)
    view.set_scenario(read_toml(path), str(path), result.metrics_dict(), new=True)
    assert (view.y_tier.currentText(), view.x_tier.currentText()) == ("DRAM", "SSD")  # the two lowest
    view.configure("hbm", "2,6", "ssd", "10,40", "policies.lru.token_hit_rate")
    streamed = []
    view.grid.point.connect(lambda i, v: streamed.append(i))
    with qtbot.waitSignal(view.finished, timeout=60_000) as got:
        view.run()
    res = got.args[0]
    assert sorted(streamed) == [0, 1, 2, 3]  # every point reached the view as it came
    head, rows = view.data_rows()
    assert head == ["tiers.0.capacity_blocks", "tiers.2.capacity_blocks", "policies.lru.token_hit_rate"]
    assert [r[:2] for r in rows] == [[2, 10], [2, 40], [6, 10], [6, 40]]
    for hbm, ssd, value in rows:
        alone = simulate(load_scenario(path, [f"tiers.0.capacity_blocks={hbm}", f"tiers.2.capacity_blocks={ssd}"]))
        assert value == alone.metrics["policies"]["lru"]["token_hit_rate"]
    assert len({r[2] for r in rows}) > 1  # the capacities matter on this workload
    assert res.values[1][1] == rows[3][2]
    assert "--param tiers.0.capacity_blocks --values 2,6" in view.command()
    # the hover reads the cell under the mouse
    from PySide6.QtCore import QPointF
    vb = view.plot.getPlotItem().getViewBox()
    text = view.text_at(vb.mapViewToScene(QPointF(1.0, 0.0)))
    assert "HBM capacity (blocks) = 2" in text and "SSD capacity (blocks) = 40" in text


@pytest.mark.gui
def test_surface_of_a_prefetch_run_runs_its_policy_with_prefetch(qtbot, tmp_path):
    # `<policy>_prefetch` is a run's name, not a policy: the surface runs the policy with
    # store.prefetch on; a plain policy's metric turns prefetch off (its run does not need it)
    from app.views.capacity_surface import CapacitySurfaceView
    from kvviz.mechanisms.prefix_cache.model import PrefixCacheScenario
    path = tmp_path / "timed.toml"
    path.write_text(SMALL.replace("[workload]", "[serving]\ntiming = true\n[store]\nprefetch = true\n[workload]")
                    .replace("requests = 160", "requests = 30"), encoding="utf-8")
    result = simulate(load_scenario(path))
    view = CapacitySurfaceView()
    qtbot.addWidget(view)
    view.set_scenario(read_toml(path), str(path), result.metrics_dict(), new=True)
    assert "policies.fifo_prefetch.ttft_p50_ms" in [view.metric_box.itemText(i) for i in range(view.metric_box.count())]
    pf = view.base_for("policies.fifo_prefetch.ttft_p50_ms")
    assert (pf["policies"], pf["store"]["prefetch"]) == (["fifo"], True)
    PrefixCacheScenario.model_validate(pf)
    plain = view.base_for("policies.fifo.token_hit_rate")
    assert (plain["policies"], plain["store"]["prefetch"]) == (["fifo"], False)
    assert load_scenario(path, ["store.prefetch=false"]).store.prefetch is False  # what command() adds


@pytest.mark.gui
def test_a_timed_runs_timeline_is_not_titled_untimed_replay(qtbot, tmp_path, small):
    # the timed engine draws serving time (GPU iterations, link transfers): its axis said
    # "request arrival · untimed replay" as the replay's does, in the app and the SVG figure
    from app.views.timeline import TimelineView
    from kvviz.export.svg import timeline_svg
    _, untimed = small
    path = tmp_path / "timed.toml"
    path.write_text(SMALL.replace("[workload]", "[serving]\ntiming = true\n[workload]")
                    .replace("requests = 160", "requests = 30"), encoding="utf-8")
    timed = simulate(load_scenario(path))
    view = shown(qtbot, TimelineView(), 900, 500)
    for result, words in ((timed, "time ("), (untimed, "request arrival (")):
        view.set_result(result)
        qtbot.wait(20)
        title = view.plot.getPlotItem().getAxis("bottom").labelText
        assert title.startswith(words) and ("untimed" in title) == (result is untimed)
        assert ("untimed replay</text>" in timeline_svg(result)) == (result is untimed)


@pytest.mark.gui
def test_a_cancelled_surface_exports_the_cells_it_drew(qtbot, small):
    # Data as CSV on a cancelled surface said "the Tiers tab shows no table of numbers now"
    # over 20 drawn cells; and a new run went on exporting the previous grid until it ended
    from app.views.capacity_surface import CapacitySurfaceView
    from kvviz.sweep import Axis, SweepResult, shaped
    path, result = small
    view = shown(qtbot, CapacitySurfaceView(), 900, 600)
    view.set_scenario(read_toml(path), str(path), result.metrics_dict(), new=True)
    axes = (Axis("tiers.0.capacity_blocks", (2, 6)), Axis("tiers.2.capacity_blocks", (10, 40)))
    view._draw(SweepResult(axes, "policies.lru.token_hit_rate", shaped(axes, [0.25, 0.5, None, None])))
    head, rows = view.data_rows()  # what the cancelled run drew: two cells, two not run
    assert head[-1] == "policies.lru.token_hit_rate"
    assert rows == [[2, 10, 0.25], [2, 40, 0.5], [6, 10, None], [6, 40, None]]
    drawn = view.data_rows()
    view.configure("hbm", "2,6", "ssd", "10,40", "policies.lru.token_hit_rate")
    view.run()
    # until the new grid's first run arrives, the drawn grid stays, and it is what Data as CSV writes
    assert view.data_rows() == drawn
    with qtbot.waitSignal(view.stopped, timeout=60_000):
        view.cancel()
    assert view.data_rows() == drawn  # cancelled: the surface before the run, as it was


@pytest.mark.gui
def test_surface_fills_coarse_first_reuses_its_runs_and_cancel_restores(qtbot, small):
    """Issue 33, item 2: the first runs span the grid (its corners), a cell not yet run is
    painted with its nearest run's value; Cancel brings back the surface before the run; Run
    again (or another metric of the same policy) runs only the cells it has not got."""
    from app.surface_runs import coarse_first, nearest_filled
    from app.views.capacity_surface import CapacitySurfaceView
    assert coarse_first(6, 6)[:9] == [0, 4, 5, 24, 28, 29, 30, 34, 35]  # rows and columns 0, 4, 5
    assert sorted(coarse_first(6, 6)) == list(range(36)) and sorted(coarse_first(1, 3)) == [0, 1, 2]
    assert nearest_filled([[1, None, None], [None, None, 2]]) == ([[1, 1, 2], [1, 2, 2]], 4)

    path, result = small
    view = shown(qtbot, CapacitySurfaceView(), 900, 600)
    view.set_scenario(read_toml(path), str(path), result.metrics_dict(), new=True)
    view.configure("hbm", "2,6", "ssd", "10,40", "policies.lru.token_hit_rate")
    with qtbot.waitSignal(view.finished, timeout=60_000):
        view.run()
    first = view.data_rows()
    assert view.runs.ran == 4 and "4 runs done" in view.status.text()
    # another metric of the same policy: the same four runs, none simulated again
    view.metric_box.setCurrentText("policies.lru.request_hit_rate")
    with qtbot.waitSignal(view.finished, timeout=60_000):
        view.run()
    assert view.runs.ran == 4 and "(4 reused)" in view.status.text()
    assert [r[:2] for r in view.data_rows()[1]] == [r[:2] for r in first[1]]
    assert view.data_rows()[0][-1] == "policies.lru.request_hit_rate"
    # one more capacity per axis: only the five new cells run
    view.configure("hbm", "2,4,6", "ssd", "10,20,40", "policies.lru.token_hit_rate")
    with qtbot.waitSignal(view.finished, timeout=60_000):
        view.run()
    assert view.runs.ran == 9
    full = view.data_rows()
    # a run cancelled before it ended: the 3x3 surface comes back, caption and command too
    command, caption = view.command(), view.caption.text()
    view.configure("hbm", "1,3,5,7", "ssd", "5,15,25,35", "policies.fifo.token_hit_rate")
    with qtbot.waitSignal(view.stopped, timeout=60_000):
        view.run()
        view.cancel()
    assert view.data_rows() == full and view.command() == command and view.caption.text() == caption
    assert "cancelled" in view.status.text()


@pytest.mark.gui
def test_a_link_transfers_details_count_its_blocks(qtbot, tmp_path):
    # a batched load labelled "load 593 blocks ssd→hbm" showed "items moved 1" in the details
    # pane (the timed engine put 1, or the batch's request count, where the blocks belong)
    import re

    from app.views.timeline_details import TimeFormat, event_html
    from app.views.timeline_query import Event
    path = tmp_path / "timed.toml"
    path.write_text(SMALL.replace("[workload]", "[serving]\ntiming = true\n[store]\nprefetch = true\n[workload]")
                    .replace("requests = 160", "requests = 40"), encoding="utf-8")
    result = simulate(load_scenario(path))
    tr, bb = result.trace, result.metrics_dict()["workload"]["block_bytes"]
    links = [i for i, name in enumerate(tr.lanes["name"]) if str(name).startswith("link ")]
    rows = np.flatnonzero(np.isin(tr.spans["lane"], links))
    assert len(rows) > 0
    kinds = set()
    for r in rows:
        facts, label = tr.facts_of(tr.spans[r]), tr.label(int(tr.spans[r]["label"]))
        n = int(re.search(r"(\d+) blocks", label).group(1))
        assert facts["items"] == n == facts["bytes"] // bb, label
        kinds.add(label.split()[0])
    assert {"load", "write"} <= kinds  # loads up and writes down both checked
    html = event_html(tr, Event("spans", int(rows[0])), TimeFormat.for_view(1e9, 1e6))
    n = re.search(r"(\d+) blocks", tr.label(int(tr.spans[rows[0]]["label"]))).group(1)
    assert f"items moved</td><td>{n}<" in html, html


@pytest.mark.gui
def test_a_wrapping_caption_keeps_each_swatch_with_its_name(qtbot, small, bundled_small):
    """At 1366 px the caption wrapped between a tier's ■ and its name ("… · ■" / "HBM ■ CXL"):
    every swatch is followed by a non-breaking space, in the Tiers and the Policies captions."""
    import re

    from app.views.policies import PoliciesView
    from app.views.tier_bars import TierBarsView
    _, result = small
    tiers = shown(qtbot, TierBarsView(), 500, 400, result, 20)
    policies = shown(qtbot, PoliciesView(), 500, 500, bundled_small["attention_store_sharegpt"], 30)
    for caption in (tiers.caption.text(), policies.caption.text()):
        swatches = re.findall(r"[■┆]</span>(.{0,6})", caption)
        assert swatches and all(after.startswith("&nbsp;") for after in swatches), caption
