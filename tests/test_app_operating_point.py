"""The app's Operating point tab (issue 31 item 6): `kvviz operating-point` run in the background on
the scenario as edited, the command's own figure per model, its numbers the library's."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from kvviz.loading import load_scenario
from kvviz.operating_point import GPU, SATURATED, evaluate_data, figure_svg
from kvviz.scenario_data import apply_override, read_toml

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
SMALL = "workload.conversations=150"
PRESETS = ["llama-13b", "llama-65b", "llama-70b", "falcon-40b"]


def _tab(path, data):
    from app.tabs.base import TabContext
    from app.tabs.operating_point import OperatingPointTab
    return OperatingPointTab(TabContext(scenario_data=lambda: data, scenario_path=lambda: path))


@pytest.mark.gui
def test_operating_point_tab_runs_shows_each_models_figure_and_the_librarys_numbers(qtbot):
    from PySide6.QtGui import QGuiApplication
    path = str(SCENARIOS / "attention_store_sharegpt.toml")
    data = apply_override(read_toml(path), SMALL, "test")  # the scenario as edited in the app: a reduced workload
    tab = _tab(path, data)
    qtbot.addWidget(tab.widget)
    view = tab.widget
    result = SimpleNamespace(scenario=load_scenario(path, [SMALL]))
    assert tab.unavailable(result) is None and tab.on_demand
    tab.on_new_result(result, True)
    assert [view.model_box.itemText(i) for i in range(view.model_box.count())] == PRESETS
    assert view.models == [] and view.job is None  # nothing runs until asked
    view.rates.setText("0.5")
    with qtbot.waitSignal(view.finished, timeout=300_000):
        view.jobs.run_btn.click()
    assert view.jobs.succeeded
    # the library's computation on the same inputs: the same numbers, the same SVG per model
    expected = evaluate_data(data, path, (), (0.5, SATURATED))
    assert list(view.svgs) == PRESETS
    for mine, lib in zip(view.models, expected):
        assert mine.preset == lib.preset and mine.bound == lib.bound
        assert [(p.rate, p.values, p.verdicts, p.steady, p.holds) for p in mine.points] == \
            [(p.rate, p.values, p.verdicts, p.steady, p.holds) for p in lib.points]
        assert view.svgs[mine.preset] == figure_svg(lib, f"attention_store_sharegpt, {lib.preset}")
    # the chosen model's figure and table: its loads, steady at 0.5, the queue growing flat out
    view.model_box.setCurrentText("llama-70b")
    assert view.svg.renderer().isValid()
    assert view.chosen().preset == "llama-70b" and view.table.rowCount() == 2
    assert [view.table.item(r, 1).text() for r in range(2)] == ["steady", "grows"]
    assert view.table.item(1, 0).text() == "saturated"
    assert view.table.item(1, 1).background().color().name().upper() == "#F3D0D0"
    gpu = view.models[PRESETS.index("llama-70b")].points[1].values[GPU]
    assert view.table.item(1, 7).text().startswith(f"{gpu:.3g} (")
    assert view.note.text().startswith("llama-70b: ")
    header, rows = tab.data_rows()
    assert header[0] == "model" and len(rows) == 8
    # the CLI equivalent (of the file as saved: the edits are said not to be in it)
    assert view.copy_command() == "kvviz operating-point attention_store_sharegpt --model llama-70b --svg-dir ."
    assert QGuiApplication.clipboard().text() == view.command()
    assert "edits are not in it" in view.status.text()
    tab.shutdown()


@pytest.mark.gui
def test_operating_point_run_can_be_cancelled_and_says_where_it_does_not_apply(qtbot):
    path = str(SCENARIOS / "attention_store_sharegpt.toml")
    data = apply_override(read_toml(path), SMALL, "test")
    tab = _tab(path, data)
    qtbot.addWidget(tab.widget)
    view = tab.widget
    tab.on_new_result(SimpleNamespace(scenario=load_scenario(path, [SMALL])), True)
    with qtbot.waitSignal(view.stopped, timeout=300_000):
        view.run()
        view.jobs.cancel_btn.click()
    assert not view.jobs.succeeded and view.models == [] and "cancelled" in view.status.text()
    other = str(SCENARIOS / "engram_qwen3_32b_cxl.toml")
    assert "AttentionStore's" in tab.unavailable(SimpleNamespace(scenario=load_scenario(other)))
    plain = str(SCENARIOS / "attention_store_mooncake.toml")
    tab.ctx.scenario_data = lambda: read_toml(plain)
    assert "no [[claim]]" in tab.unavailable(SimpleNamespace(scenario=load_scenario(plain)))
    tab.shutdown()
