"""App speed: start to first drawn timeline, edit-to-redraw per bundled scenario, and the
repaint time of a 1,000,000-span timeline fully zoomed out and zoomed to 1%.

Run: make bench   (or QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_app.py)
Edit-to-redraw is measured from the panel's (debounced) `edited` signal to the redrawn view:
the debounce (app/params DEBOUNCE_MS) is added on top while someone is typing.
"""
from __future__ import annotations

import os
import tempfile
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402
from machine import wait_signal  # noqa: E402
from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402


def million_span_result():
    from kvviz import load_scenario
    from kvviz.result import Result
    from kvviz.trace import SPAN_DTYPE, TraceBuilder
    tb = TraceBuilder()
    lanes = [tb.lane(f"lane {i}", "bench") for i in range(8)]
    n = 1_000_000
    rng = np.random.default_rng(0)
    block = np.zeros(n, dtype=SPAN_DTYPE)
    block["lane"] = rng.integers(0, len(lanes), n)
    block["start"] = np.sort(rng.integers(0, 10**9, n))
    block["end"] = block["start"] + rng.integers(100, 5_000, n)
    block["kind"] = rng.integers(0, 4, n)
    block["label"] = -1
    tb.add_block("spans", block)
    return Result(scenario=load_scenario("scenarios/rope_prefetch_16.toml"), trace=tb.build(), metrics={})


def million_residency_result(slots=50_000):
    """1,000,000 residency rows over `slots` slots (each resident 8 µs of every 10 µs)."""
    from kvviz import load_scenario
    from kvviz.result import Result
    from kvviz.trace import RESIDENCY_DTYPE, TraceBuilder
    n = 1_000_000
    rng = np.random.default_rng(1)
    b = np.zeros(n, dtype=RESIDENCY_DTYPE)
    b["slot"] = np.arange(n) % slots
    b["start"] = (np.arange(n) // slots) * 10_000 + rng.integers(0, 1000, n)
    b["end"] = b["start"] + 8000
    b["item"] = rng.integers(0, 10**9, n)
    tb = TraceBuilder(slots=slots)
    tb.add_block("residency", b)
    return Result(scenario=load_scenario("scenarios/rope_prefetch_16.toml"), trace=tb.build(), metrics={})


def occupancy_build(app):
    from app.views import OccupancyView
    view = OccupancyView()
    view.resize(1200, 700)
    view.show()
    app.processEvents()
    for slots in (50_000, 512):
        r = million_residency_result(slots)
        best = 1e9
        for _ in range(3):
            t = time.perf_counter()
            view.set_result(r)
            best = min(best, time.perf_counter() - t)
            app.processEvents()
        print(f"occupancy grid of 1,000,000 residency rows, {slots:,} slots: {best * 1000:.0f} ms (best of 3)")


def cold_start_ms() -> float:
    """Process start to a first painted window, as a user launching the app sees it: Python,
    numpy, PySide6 and pyqtgraph imports, the window, the worker process, the first run
    (the screenshot mode paints the window and saves it, then exits)."""
    import subprocess
    import sys
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "app.main", "rope_prefetch_16", "--screenshot",
                        os.path.join(tmp, "s.png")], check=True, capture_output=True)
        return (time.perf_counter() - t) * 1000


def main():
    from machine import describe
    print(describe())
    colds = sorted(cold_start_ms() for _ in range(5))
    print(f"cold start, process start to first painted window and exit: {colds[2]:.0f} ms "
          f"(median of 5; {colds[0]:.0f}–{colds[-1]:.0f})")
    t0 = time.perf_counter()
    app = QApplication.instance() or QApplication([])
    from app.params import DEBOUNCE_MS
    from app.shell.window import MainWindow
    from kvviz.bundled import bundled_scenarios

    with tempfile.TemporaryDirectory() as tmp:
        win = MainWindow(settings=QSettings(os.path.join(tmp, "k.ini"), QSettings.IniFormat))
        win.resize(1600, 900)
        win.show()
        wait_signal(win.result_ready, 120_000)
        app.processEvents()
        print(f"app start to first drawn timeline: {(time.perf_counter() - t0) * 1000:.0f} ms "
              f"(imports, window, worker process start, first run)")

        print(f"edit-to-redraw (from the debounced edit; typing adds {DEBOUNCE_MS} ms of debounce):")
        for path in bundled_scenarios():
            win.open(str(path))
            wait_signal(win.result_ready, 120_000)
            app.processEvents()
            runs = []  # (edit-to-redraw, the simulation's share of it) per edit
            for _ in range(5):
                scenario = win.panel.scenario()
                t = time.perf_counter()
                win._run(scenario.model_copy(update={"name": scenario.name + " "}))
                wait_signal(win.result_ready, 120_000)
                app.processEvents()  # the visible view has redrawn
                runs.append((time.perf_counter() - t, win.runner.last_seconds))
            runs.sort()
            total, sim = runs[2]
            print(f"  {path.stem:<28} {total * 1000:7.0f} ms (median of 5, {runs[0][0] * 1000:.0f}–"
                  f"{runs[-1][0] * 1000:.0f}; simulate {sim * 1000:.0f} ms of that run)")
        win.ask_unsaved = lambda: None
        win.runner.shutdown()

    from kvviz import load_scenario, simulate
    for what, r in (("1,000,000 spans", million_span_result()),
                    ("attention_store_sharegpt", simulate(load_scenario("scenarios/attention_store_sharegpt.toml")))):
        timeline_speed(app, what, r)
    occupancy_build(app)


def timeline_speed(app, what: str, r):
    from app.views.timeline import TimelineView
    view = TimelineView()
    view.resize(1600, 700)
    view.show()
    t = time.perf_counter()
    view.set_result(r)
    app.processEvents()
    print(f"{what} ({len(r.trace.spans):,} spans, {len(r.trace.instants):,} instants): set_result "
          f"{(time.perf_counter() - t) * 1000:.0f} ms")
    vb = view.plot.getPlotItem().getViewBox()

    def repaint_ms():
        """Best of 5 repaints, each after a small pan: a pan or zoom recomputes the visible
        rectangles and the axis, which a repaint of an unchanged range would skip."""
        best = 1e9
        (lo, hi), _ = vb.viewRange()
        for i in range(5):
            shift = (hi - lo) * 0.001 * (1 if i % 2 else -1)  # never the range painted before
            vb.setXRange(lo + shift, hi + shift, padding=0)
            t = time.perf_counter()
            view.plot.viewport().repaint()
            best = min(best, time.perf_counter() - t)
        return best * 1000

    view._thin_marks()  # as the timer does once a zoom settles
    print(f"  repaint fully zoomed out: {repaint_ms():.1f} ms; rectangles drawn: "
          f"{sum(layer.drawn for layer in view.layers):,}")
    end = r.trace.t_end / view.scale
    vb.setXRange(0.5 * end, 0.51 * end, padding=0)
    app.processEvents()
    view._thin_marks()
    print(f"  repaint zoomed to 1%:      {repaint_ms():.1f} ms; rectangles drawn: "
          f"{sum(layer.drawn for layer in view.layers):,}")
    view.close()


if __name__ == "__main__":
    # as `kvviz-gui` does (app.main.entry): a scenario's independent runs use every core
    os.environ.setdefault("KVVIZ_WORKERS", str(os.cpu_count() or 1))
    main()
