"""The window keeps what the user made: rung overrides across a Ladder edit, the timeline's
zoom across re-runs, the docks' widths under a long hover line; and it never shows one
scenario's leftovers beside another's parameters (issue 12, "data loss and broken layout")."""
import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402

from .conftest import SCENARIOS  # noqa: E402
from .test_app import _wait_new_result, settings, window  # noqa: E402,F401  (fixtures)

SMALL_STORE = ('kind = "attention_store"\npolicies = ["recompute", "scheduler_aware"]\n'
               '[workload]\nconversations = {n}\n[serving]\ncompare_truncation = false\n')


def _open(window, qtbot, path):
    old = window.result
    assert window.open(str(path))
    return _wait_new_result(qtbot, window, old)


def test_ladder_drag_keeps_every_rungs_overrides(window, qtbot, tmp_path):
    first = _open(window, qtbot, SCENARIOS / "ladder_simulated.toml")
    overrides = [r["overrides"] for r in window.panel.data()["rungs"]]
    assert any(overrides)
    window.show_view("ladder")
    window.ladder.drag_rung(0, 52.5, finish=True)
    r = _wait_new_result(qtbot, window, first)
    rungs = window.panel.data()["rungs"]
    assert [x["overrides"] for x in rungs] == overrides
    assert rungs[0]["hbm_hit_pct"] == 52.5 and [x["hbm_hit_pct"] for x in rungs[1:]] == [80, 87, 93, 97]
    # the simulated rungs still differ from each other (they collapsed to one value before)
    assert len({m["simulated"]["hbm_hit_pct"] for m in r.metrics["rungs"]}) == 5
    window.panel.save(str(tmp_path / "saved.toml"))
    assert (tmp_path / "saved.toml").read_text().count("overrides = [") == 5
