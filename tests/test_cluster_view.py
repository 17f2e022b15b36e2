"""The Cluster tab (issue 32, build item 6): instance lanes grouped in the Gantt, per-instance
queue and cache occupancy over time, and a router comparison run in the background, on the
bundled Mooncake routing scenario cut to a few hundred requests over 4 instances."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kvviz import load_scenario, simulate
from kvviz.scenario_data import apply_override, read_toml

from .conftest import shown

ROUTING = Path(__file__).resolve().parents[1] / "scenarios" / "cluster_mooncake_routing.toml"
SETS = ["workload.max_requests=400", "cluster.instances=4", "cluster.prefill_instances=2",
        "instance.hbm_cache_tokens=100000", "instance.dram_cache_tokens=300000"]


@pytest.fixture(scope="module")
def small():
    data = read_toml(ROUTING)
    for s in SETS:
        data = apply_override(data, s, str(ROUTING))
    return data, simulate(load_scenario(ROUTING, SETS))


# --- what the view derives from the trace (no Qt) --------------------------------------------

def test_ttft_from_the_trace_equals_the_runs_metrics(small):
    from app import cluster_runs as cr
    _, result = small
    t = cr.ttft_ms(result)
    m = result.metrics
    assert len(t) == m["served"] == 400
    assert t.mean() == pytest.approx(m["mean_ttft_ms"], rel=1e-12)
    assert np.percentile(t, 90) == pytest.approx(m["ttft_p90_ms"], rel=1e-12)


def test_each_request_goes_to_a_prefill_instance(small):
    from app import cluster_runs as cr
    _, result = small
    _, _, where = cr.first_tokens(result)
    assert set(where.tolist()) == {0, 1}  # the two prefill instances; decode instances never prefill a prompt
    per = {r["index"]: r["requests"] for r in result.metrics["per_instance"]}
    assert np.bincount(where).tolist() == [per[0], per[1]]


def test_step_means_and_peaks_of_a_hand_made_step_function():
    from app import cluster_runs as cr
    t = np.array([0, 10, 30], dtype=np.int64)
    v = np.array([2.0, 4.0, 0.0])
    edges = np.array([0.0, 20.0, 40.0])
    # 0–20: 2 for 10, 4 for 10 → 3; 20–40: 4 for 10, 0 for 10 → 2
    assert cr.step_means(t, v, edges).tolist() == [3.0, 2.0]
    assert cr.step_peaks(t, v, edges).tolist() == [4.0, 4.0]


def test_paper_means_come_from_the_scenarios_claims(small):
    from app import cluster_runs as cr
    _, result = small
    assert cr.paper_means(result.scenario) == {"random": 19650.0, "least_loaded": 5270.0,
                                               "prefix_affinity": 3580.0, "global_cache_aware": 3070.0}


# --- the tab and its pages -------------------------------------------------------------------

@pytest.mark.gui
def test_the_tab_applies_only_to_cluster_runs(qtbot, small, seed16):
    from app.tabs import TABS
    from app.tabs.base import TabContext
    from app.tabs.cluster import ClusterTab
    assert ClusterTab in TABS
    tab = ClusterTab(TabContext())
    qtbot.addWidget(tab.widget)
    assert tab.unavailable(small[1]) is None
    reason = tab.unavailable(simulate(seed16))
    assert reason is not None and "cluster" in reason and "\n" not in reason
    tab.shutdown()


@pytest.mark.gui
def test_one_lane_group_per_instance_and_heat_rows(qtbot, small):
    from app.views.cluster import ALL, ClusterView
    _, result = small
    view = shown(qtbot, ClusterView(), 1100, 700, result)
    view.pick.setCurrentText(ALL)
    groups = view.gantt.result.trace.lanes["group"].tolist()
    assert [g for g in dict.fromkeys(groups) if g.startswith("instance")] == [f"instance {k}" for k in range(4)]
    assert groups[0] == "router"  # the arrivals lane on top
    assert view.queue.rows == [0, 1, 2, 3]
    assert view.cache.rows == [0, 1]  # decode instances hold no cache
    assert view.routes is not None  # the routing decisions drawn as lines
    view.show_instance(1)
    shown_groups = set(view.gantt.result.trace.lanes["group"].tolist())
    assert shown_groups == {"router", "instance 1"}
    head, rows = view.data_rows()
    assert head == ["instance", "role", "t_start_s", "t_end_s", "queue_peak_requests", "cache_occupancy_mean"]
    assert len(rows) == 4 * len(view.queue.edges[:-1])
    assert all(0.0 <= r[5] <= 1.0 + 1e-9 for r in rows if r[5] != "")  # a mean of blocks over capacity
    assert max(r[5] for r in rows if r[5] != "") > 0.99  # the small caches fill
    assert max(r[4] for r in rows) >= 1  # some request waited


@pytest.mark.gui
def test_router_comparison_fills_in(qtbot, small):
    from app import cluster_runs as cr
    from app.views.cluster_routers import RoutersView
    data, result = small
    view = shown(qtbot, RoutersView(), 1000, 700)
    view.set_scenario(data, str(ROUTING), result, new=True)
    assert view.data_rows() is None
    with qtbot.waitSignal(view.finished, timeout=180_000) as got:
        view.run()
    rows = got.args[0]
    names = cr.policies(type(result.scenario))
    assert [r["policy"] for r in rows] == list(names)
    head, table = view.data_rows()
    assert head[:3] == ["router", "mean_ttft_ms", "paper_mean_ttft_ms"]
    assert [r[0] for r in table] == list(names)
    # the shown run's router is its own row, not run again: the same numbers
    shown_row = table[names.index(result.metrics["routing_policy"])]
    assert shown_row[1] == result.metrics["mean_ttft_ms"]
    assert table[names.index("random")][2] == 19650.0 and table[names.index("round_robin")][2] == ""
    assert view.table.rowCount() == len(names)
    view.shutdown()


@pytest.mark.gui
def test_router_comparison_can_be_cancelled(qtbot, small):
    from app.views.cluster_routers import RoutersView
    data, result = small
    view = shown(qtbot, RoutersView(), 1000, 700)
    view.set_scenario(data, str(ROUTING), result, new=True)
    with qtbot.waitSignal(view.stopped, timeout=60_000):
        view.run()
        assert view.job is not None
        view.cancel()
    assert view.job is None and not view.jobs.succeeded
    assert "cancelled" in view.status.text()
    assert view.jobs.run_btn.isEnabled()
    rows = view.data_rows()
    assert rows is None or len(rows[1]) < 7  # what arrived before the cancel, never the whole comparison


@pytest.mark.gui
def test_screenshot_of_the_cluster_view(tmp_path, qtbot):
    from app.main import screenshot
    out = tmp_path / "cluster.png"
    assert screenshot(str(ROUTING), str(out), "cluster", (1366, 768), SETS) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.gui
def test_a_shared_pool_is_a_row_of_the_cache_map(qtbot):
    from app.views.cluster import ClusterView
    sets = [*SETS, "pool.shared=true"]
    result = simulate(load_scenario(ROUTING, sets))
    view = shown(qtbot, ClusterView(), 1100, 700, result)
    assert view.cache.rows == [0, 1, None]  # the prefill instances' HBM, then the pool
    pool = [r for r in view.data_rows()[1] if r[0] == "pool"]
    assert len(pool) == len(view.cache.edges) - 1 and pool[-1][5] > 0  # blocks entered the pool
    assert all(0.0 <= r[5] <= 1.0 + 1e-9 for r in pool)


@pytest.mark.gui
def test_the_heat_maps_columns_follow_the_zoom(qtbot, small):
    from app.views.cluster import COLUMNS, ClusterView
    _, result = small
    view = shown(qtbot, ClusterView(), 1100, 700, result)
    end = result.trace.t_end
    assert view.queue.edges[0] == 0 and view.queue.edges[-1] == pytest.approx(end)
    s = view.gantt.scale
    view.gantt.viewbox.setXRange(0.25 * end / s, 0.5 * end / s, padding=0)
    qtbot.waitUntil(lambda: view.queue.edges[0] > 0, timeout=5_000)
    assert view.queue.edges[0] == pytest.approx(0.25 * end, rel=1e-6)
    assert view.queue.edges[-1] == pytest.approx(0.5 * end, rel=1e-6)
    assert len(view.data_rows()[1]) == 4 * COLUMNS  # the CSV is what is shown


@pytest.mark.gui
def test_in_the_window_the_tab_follows_the_kind_and_exports_csv(window, qtbot, tmp_path):
    import csv

    from .conftest import SCENARIOS, exported
    text = ROUTING.read_text(encoding="utf-8")
    trace = (ROUTING.parent / "../resources/traces/mooncake_conversation_trace.jsonl").resolve()
    text = text.replace('trace_file = "../resources/traces/mooncake_conversation_trace.jsonl"',
                        f'trace_file = "{trace}"\nmax_requests = 300')
    text = text.replace("instances = 16", "instances = 4").replace("prefill_instances = 8", "prefill_instances = 2")
    path = tmp_path / "small_cluster.toml"
    path.write_text(text, encoding="utf-8")
    tab = window.tab("cluster")
    index = window.tab_list.index(tab)
    assert not window.tabs.isTabEnabled(index)  # the window opened on a rope_window scenario
    assert not tab.routers.jobs.run_btn.isEnabled()
    old = window.result
    assert window.open(str(path))
    qtbot.waitUntil(lambda: window.result is not old and window.result.metrics.get("instances") == 4, timeout=60_000)
    assert window.tabs.isTabEnabled(index) and tab.routers.jobs.run_btn.isEnabled()
    window.show_view("cluster")
    qtbot.waitUntil(lambda: tab.instances.data_rows() is not None, timeout=10_000)
    out = tmp_path / "cells.csv"
    assert exported(qtbot, window, lambda: window.export_data(str(out)))
    rows = list(csv.reader(out.open(encoding="utf-8")))
    assert rows[0] == ["instance", "role", "t_start_s", "t_end_s", "queue_peak_requests", "cache_occupancy_mean"]
    assert {r[0] for r in rows[1:]} == {"0", "1", "2", "3"}
    old = window.result
    assert window.open(str(SCENARIOS / "rope_prefetch_16.toml"))
    qtbot.waitUntil(lambda: window.result is not old, timeout=30_000)
    assert not window.tabs.isTabEnabled(index)
