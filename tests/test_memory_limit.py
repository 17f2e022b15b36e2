"""The size guard's limit in the app (issue 22, item 8): a refusal names the app's own way to
raise it (never the CLI's --max-memory-gb), the limit is kept in the settings, and raising it
runs the refused scenario again."""
from __future__ import annotations

import pytest

from kvviz.size_guard import DEFAULT_MAX_MEMORY_GB, RAISE_HINT


def test_the_app_rewords_the_clis_hint():
    from app.memory_limit import MENU_ENTRY, for_app, stored_limit
    text = f"sequence.length: too large to simulate: about 5.7 GB of memory, beyond the 4 GB limit; " \
           f"reduce sequence.length, or {RAISE_HINT}"
    out = for_app(text, 4.0)
    assert "--max-memory-gb" not in out and out.endswith(f"raise the memory limit (4 GB now) in {MENU_ENTRY}")
    assert stored_limit(None) == DEFAULT_MAX_MEMORY_GB


@pytest.mark.gui
def test_a_refused_run_offers_the_apps_limit_and_runs_once_it_is_raised(window, qtbot, settings):
    window.set_memory_limit(0.1)
    assert window.runner.max_memory_gb == 0.1 and float(settings.value("runs/maxMemoryGb")) == 0.1
    old = window.result
    window.panel.set_value("sequence.length", 400_000)  # estimated at about 0.1 GB: over 0.1
    window.panel.flush()
    qtbot.waitUntil(lambda: "too large" in window.panel.error_text("sequence.length"), timeout=30_000)
    text = window.panel.error_text("sequence.length")
    assert "--max-memory-gb" not in text and "Memory Limit for Runs" in text and "0.1 GB now" in text
    assert "too large" not in window.status.text()  # said once, at the field
    assert window.result is old
    dialog = window.memory_limit_dialog()
    assert dialog.doubleValue() == pytest.approx(0.1)
    dialog.setDoubleValue(1.0)
    dialog.accept()  # as OK: the limit is kept and the refused run tried again
    qtbot.waitUntil(lambda: window.result is not old, timeout=60_000)
    assert window.result.scenario.sequence.length == 400_000
    assert window.panel.error_text("sequence.length") == "" and window.runner.max_memory_gb == 1.0
