"""A run that falls back from the compiled engine to the Python one says why in the app's status
bar, with the run's result: a prefix-cache policy without a compiled twin (run by the app's own
worker, as a user's run is) and an AttentionStore placement without one."""
import pytest

pytest.importorskip("PySide6")
pytestmark = pytest.mark.gui

from kvviz import load_scenario, simulate  # noqa: E402

from .conftest import ROOT, SCENARIOS, wait_new_result  # noqa: E402

MOONCAKE = ROOT / "resources" / "traces" / "mooncake_synthetic_trace.jsonl"


def test_a_prefix_cache_policy_without_a_compiled_twin_is_said_in_the_status_bar(window, qtbot, tmp_path):
    head = tmp_path / "head.jsonl"
    head.write_text("".join(MOONCAKE.read_text().splitlines(keepends=True)[:200]))
    sc = tmp_path / "leaf.toml"
    sc.write_text(f'kind = "prefix_cache"\nname = "leaf"\npolicies = ["lru", "leaf_lru"]\n'
                  f'[workload]\ntrace_file = "{head}"\n[[tiers]]\nname = "hbm"\ncapacity_blocks = 100\n')
    old = window.result
    assert window.open(str(sc))
    r = wait_new_result(qtbot, window, old)
    assert r.metrics["notes"] == ("eviction policy leaf_lru has no compiled twin: the Python block cache runs",)
    status = window.status.text()
    assert status.startswith("leaf: ") and "; ⚠ eviction policy leaf_lru has no compiled twin: the Python block cache runs" in status
    window.grab().save(str(tmp_path / "status.png"))


def test_an_attention_store_placement_without_a_compiled_twin_is_said_in_the_status_bar(window, monkeypatch):
    from kvviz.mechanisms.attention_store import native
    from kvviz.mechanisms.attention_store.placement import PLACEMENTS, register
    from kvviz.mechanisms.attention_store.placement.lru import LRU
    if native.engine() is None:
        pytest.skip(f"the compiled engine does not run here, for every policy: {native.note()}")
    monkeypatch.setenv("KVVIZ_WORKERS", "1")  # this process runs the toy: a worker would not know it
    register("toy_lru")(type("ToyLru", (LRU,), {}))  # a placement the compiled engine has no twin of
    try:
        sc = load_scenario(SCENARIOS / "attention_store_sharegpt.toml",
                           ["workload.conversations=20", 'policies=["lru","toy_lru"]', "trace_policy=lru"])
        r = simulate(sc)
    finally:
        PLACEMENTS.pop("toy_lru")
    why = "placement 'toy_lru' has no compiled twin: the Python reference engine runs it, several times slower"
    assert r.metrics["notes"] == (why,)
    assert "engine_note" not in r.metrics["policies"]["toy_lru"]  # said once, in the notes
    assert r.metrics["policies"]["toy_lru"]["hit_rate"] == r.metrics["policies"]["lru"]["hit_rate"]  # the same policy
    window._show(r)
    assert f"; ⚠ {why}" in window.status.text()
    without = simulate(load_scenario(SCENARIOS / "attention_store_sharegpt.toml", ["workload.conversations=20"]))
    assert "notes" not in without.metrics  # every placement compiled: nothing to say
    window._show(without)
    assert "compiled twin" not in window.status.text()
