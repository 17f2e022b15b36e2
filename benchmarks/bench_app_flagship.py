"""The flagship's edit → redraw in the app (issue 24's targets: 2.0 s whole, 1.0 s to the first
policy drawn; attention_store_mooncake 0.5 s), offscreen, the typing debounce excluded.

Run: make bench   (or QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_app_flagship.py [--repeat N])
Each edit sets a value not used before (so no kept part answers for it) and is timed from the
runner's submit (what the debounced `edited` signal calls) to the final Result drawn (the
window's `result_ready`, then the events that paint it), and to the first partial Result drawn
(the recorded policy's run and the workload: the timeline and the first bar). Beside each: the
parts that ran, the child's simulation time and the window's calibrated estimate of it.
Prints figures, asserts nothing about time.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from machine import describe, wait_signal  # noqa: E402
from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

EDITS = (  # (scenario, field, first value, step, what it is)
    ("attention_store_sharegpt", "hardware.dram_gb", 128, 1, "a field every policy's run reads"),
    ("attention_store_sharegpt", "serving.detail_job", 100, 1, "a field one run reads (the recorded one)"),
    ("attention_store_mooncake", "hardware.dram_gb", 128, 1, "a field every policy's run reads"),
)


def _median(xs):
    return sorted(xs)[len(xs) // 2]


def _ms(xs) -> str:
    xs = sorted(xs)
    return f"{_median(xs) * 1000:,.0f} ms" + (f" ({xs[0] * 1000:,.0f}–{xs[-1] * 1000:,.0f})" if len(xs) > 1 else "")


def edit_to_redraw(app, win, scenario_name: str, field: str, first, step, repeat: int):
    from kvviz.bundled import resolve_scenario
    win.open(str(resolve_scenario(scenario_name)))
    wait_signal(win.result_ready)
    app.processEvents()
    runner = win.runner
    whole, first_drawn, sims, ests, ran = [], [], [], [], []
    for i in range(repeat):
        sc = win.panel.scenario()
        section, name = field.split(".")
        edited = sc.model_copy(update={section: getattr(sc, section).model_copy(update={name: first + step * (i + 1)})})
        marks = {}

        def mark(*_, m=marks):  # connected after the window's slot: called once that has drawn
            m.setdefault("partial", time.perf_counter())
        runner.partial.connect(mark)
        before = runner.parts_run
        t = time.perf_counter()
        win._run(edited)
        est = runner.estimate
        wait_signal(win.result_ready)
        app.processEvents()  # the visible view has redrawn
        whole.append(time.perf_counter() - t)
        # the first partial: its slot drew the views before the next event; else the final is the first
        first_drawn.append(marks.get("partial", t + whole[-1]) - t)
        runner.partial.disconnect(mark)
        sims.append(runner.last_seconds)
        ests.append(est.seconds if est is not None else float("nan"))
        ran.append(runner.parts_run - before)
    ratio = _median(sims) / _median(ests)
    return whole, first_drawn, sims, ests, (_median(ran), runner.last_parts), ratio


def main():
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 3
    print(describe())
    print(f"load average before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    app = QApplication.instance() or QApplication([])
    from app.shell.window import MainWindow
    from kvviz.calibration import machine
    print(f"calibration: {machine().describe()}")
    with tempfile.TemporaryDirectory() as tmp:
        win = MainWindow(settings=QSettings(os.path.join(tmp, "k.ini"), QSettings.IniFormat))
        win.resize(1600, 900)
        win.show()
        wait_signal(win.result_ready)
        app.processEvents()
        win.show_view("policies")
        print(f"flagship edit → redraw in the app (Policies tab shown; from submit, the debounce excluded; "
              f"median of {repeat}, range):")
        for scenario_name, field, first, step, what in EDITS:
            whole, first_drawn, sims, ests, ran, ratio = edit_to_redraw(app, win, scenario_name, field, first, step, repeat)
            print(f"  {scenario_name} {field} ({what}; {ran[0]} of {ran[1]} parts ran):")
            print(f"    to the final result drawn {_ms(whole)}; to the first policy drawn {_ms(first_drawn)}")
            print(f"    simulation in the child {_ms(sims)}; the window's estimate {_median(ests):.2f} s "
                  f"(took {ratio:.2f}× it)")
        win.ask_unsaved = lambda: None
        win.runner.shutdown()
    print(f"load average after: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")


if __name__ == "__main__":
    os.environ.setdefault("KVVIZ_WORKERS", str(os.cpu_count() or 1))  # as kvviz-gui sets it
    main()
