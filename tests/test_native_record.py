"""The compiled engine's recording (native/recorder.pxi): rows packed in C and handed over in bulk
give the reference's Trace (fingerprint), also when the buffers are handed over mid-run (a tiny
buffer: every few rows, around the detail job's layer drawing), and the recorded run makes no
TraceBuilder call per event. The golden cases (test_native_engine) hold the
recorded branches (read priority, sync save, preload none, HBM tiers, preemption) with the default
buffer, which small runs never fill."""
from __future__ import annotations

import pytest

from kvviz import load_scenario
from kvviz.mechanisms.attention_store import native, serving
from kvviz.mechanisms.attention_store import parts as P
from kvviz.mechanisms.attention_store.serving import Run
from kvviz.trace import TraceBuilder

from .test_attention_store_speed import ROOT, VARIANTS

ENGINE = native.engine()
needs_engine = pytest.mark.skipif(ENGINE is None, reason=native.note())
CASES = ["sharegpt_prio", "sharegpt_sync_nopl", "sharegpt_hbm", "sharegpt_preempt", "sharegpt_fifo_detail"]


def _trace_policy_run(name: str, engine: str):
    sc = load_scenario(ROOT / "scenarios" / "attention_store_sharegpt.toml", VARIANTS[name])
    policy = sc.trace_policy
    return Run(sc, P.prepare(sc), policy, sc.serving.truncation, True, engine=engine).run()


@needs_engine
@pytest.mark.parametrize("rows", [1, 3, 64])
@pytest.mark.parametrize("name", CASES)
def test_buffers_handed_over_mid_run_give_the_reference_trace(name, rows):
    want = _trace_policy_run(name, "python")
    old = ENGINE.recorder_rows(rows)
    try:
        got = _trace_policy_run(name, "native")
    finally:
        ENGINE.recorder_rows(old)
    assert got.detail_info == want.detail_info
    assert got.tb.build().fingerprint() == want.tb.build().fingerprint()


class CountingBuilder(TraceBuilder):
    """Counts the builder's calls by name."""

    def __getattribute__(self, name):
        attr = super().__getattribute__(name)
        if callable(attr) and not name.startswith("_"):
            calls = super().__getattribute__("__dict__").setdefault("calls", {})
            calls[name] = calls.get(name, 0) + 1
        return attr


@needs_engine
def test_recorded_run_hands_rows_over_in_bulk(monkeypatch):
    monkeypatch.setattr(serving, "TraceBuilder", CountingBuilder)
    run = _trace_policy_run("sharegpt_prio", "native")
    calls = run.tb.calls
    spans = sum(len(p) for p in run.tb._rows("spans"))
    per_event = {k: v for k, v in calls.items() if k in (
        "add_span_facts", "add_instant_facts", "add_span", "add_instant", "counter_row", "residency")}
    assert not per_event, per_event
    assert spans and calls["add_rows"] <= 3 * 2 + 3  # once per table at the end, and around the layer drawing
    # the detail job's layers: one keyword call per drawn span (Python, once per run)
    assert 0 < calls.get("span", 0) <= 3 * run.L
