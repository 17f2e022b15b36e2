"""Engine ordering, Trace invariants, and the rule that kvviz never imports Qt."""
import subprocess
import sys

import numpy as np
import pytest

from kvviz.engine import EventLoop
from kvviz.trace import TraceBuilder

from .conftest import SCENARIOS

QT_RENDER = "kvviz.export.qt_render"  # the one kvviz module that imports Qt (run as a child process)
QT_PACKAGES = ("PySide6", "pyqtgraph", "shiboken6")


def test_kvviz_never_imports_qt():
    code = ("import sys, pkgutil, importlib, kvviz\n"
            "for m in pkgutil.walk_packages(kvviz.__path__, 'kvviz.'):\n"
            f"    if not m.name.endswith('__main__') and m.name != {QT_RENDER!r}:\n"
            "        importlib.import_module(m.name)\n"
            "from kvviz import load_scenario, simulate\n"
            f"simulate(load_scenario({str(SCENARIOS / 'rope_prefetch_16.toml')!r}))\n"
            f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {QT_PACKAGES!r})\n"
            "print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_only_the_renderer_names_qt_in_kvviz():
    # read, not run: an import of Qt anywhere else in kvviz (even inside a function) is refused
    import ast
    from pathlib import Path

    import kvviz
    root = Path(kvviz.__file__).parent
    naming = []
    for f in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            if any(n.split(".")[0] in QT_PACKAGES for n in names):
                naming.append(".".join(("kvviz",) + f.relative_to(root).with_suffix("").parts))
    assert sorted(set(naming)) == [QT_RENDER]


def test_engine_orders_by_time_priority_then_sequence():
    loop, log = EventLoop(), []
    loop.at(10, log.append, "t10-p1", priority=1)
    loop.at(10, log.append, "t10-p0-first", priority=0)
    loop.at(5, log.append, "t5")
    loop.at(10, log.append, "t10-p0-second", priority=0)
    loop.run()
    assert log == ["t5", "t10-p0-first", "t10-p0-second", "t10-p1"]
    assert loop.now == 10 and loop.processed == 4


def test_engine_refuses_the_past():
    loop = EventLoop()
    loop.at(10, lambda: loop.at(5, print))
    with pytest.raises(ValueError):
        loop.run()


def test_engine_state_is_per_run():
    a, b = EventLoop(), EventLoop()
    a.at(1, lambda: None)
    a.run()
    assert b.processed == 0 and b._seq == 0


def test_trace_is_immutable_and_sorted():
    tb = TraceBuilder()
    lane = tb.lane("x", "g")
    tb.span(lane, 50, 60, "fetch")
    tb.span(lane, 10, 20, "compute", "first")
    tr = tb.build()
    assert tr.spans["start"].tolist() == [10, 50]
    assert tr.label(tr.spans["label"][0]) == "first"
    with pytest.raises(ValueError):
        tr.spans["start"][0] = 3
    with pytest.raises(ValueError):
        tb.span(lane, 5, 4, "fetch")


def test_result_metrics_are_read_only(seed16):
    from kvviz import simulate
    r = simulate(seed16)
    with pytest.raises(TypeError):
        r.metrics["speedup"] = 1
    assert isinstance(r.metrics_dict()["queries"], list)


@pytest.mark.slow  # the AttentionStore ShareGPT run as shipped (shared with the other bundled-run tests)
def test_every_bundled_scenario_runs(bundled):
    files = sorted(SCENARIOS.glob("*.toml"))
    assert files
    for f in files:
        r = bundled[f.stem]
        assert len(r.trace.lanes) and r.metrics, f


def test_million_spans_are_compact():
    from kvviz.trace import SPAN_DTYPE
    assert SPAN_DTYPE.itemsize * 1_000_000 < 40e6
    tb = TraceBuilder()
    block = np.zeros(1000, dtype=SPAN_DTYPE)
    block["label"] = -1
    tb.add_block("spans", block)
    assert len(tb.build().spans) == 1000
