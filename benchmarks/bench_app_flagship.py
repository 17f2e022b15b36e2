"""The flagship's edit → redraw in the app (issue 24's targets: 2.0 s whole, 1.0 s to the first
policy drawn; attention_store_mooncake 0.5 s), offscreen, the typing debounce excluded.

Run: make bench   (or QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_app_flagship.py [--repeat N]
[--load] [--only NAME] [--ab | --ab-only])
--load keeps one core busy meanwhile (a child process spinning; issue 33, item 8: "with a
background load of one busy core"). A second table times an edit that arrives while the
previous edit's run is still going (after IN_FLIGHT_S): that run is cancelled (its child
stopped) and the new one's first and final Results are timed from the second edit; the
cancelled run's Result must never be drawn (counted: "stale drawn").
Each edit sets a value not used before (so no kept part answers for it) and is timed from the
runner's submit (what the debounced `edited` signal calls) to the final Result drawn (the
window's `result_ready`, then the events that paint it), and to the first partial Result drawn
(the recorded policy's run and the workload: the timeline and the first bar). Beside each: the
parts that ran, the child's simulation time and the window's calibrated estimate of it.
--ab adds a table: the same edits with a run's needed parts (the recorded policy's run and the
workload) run alone first, and with every part at once, alternating (app.worker.cores_short
chooses between them by the load at each run's start; here each is forced); --ab-only prints only it.
Prints figures, asserts nothing about time.
"""
from __future__ import annotations

import os
import subprocess
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


IN_FLIGHT_S = 0.4  # the second edit arrives this long after the first (its run still going)


def _median(xs):
    return sorted(xs)[len(xs) // 2]


def _ms(xs) -> str:
    xs = sorted(xs)
    return f"{_median(xs) * 1000:,.0f} ms" + (f" ({xs[0] * 1000:,.0f}–{xs[-1] * 1000:,.0f})" if len(xs) > 1 else "")


def _one_edit(app, win, edited):
    """(to final drawn, to first drawn, child's seconds, estimate, parts run) of one edit."""
    runner = win.runner
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
    whole = time.perf_counter() - t
    # the first partial: its slot drew the views before the next event; else the final is the first
    first = marks.get("partial", t + whole) - t
    runner.partial.disconnect(mark)
    return whole, first, runner.last_seconds, (est.seconds if est is not None else float("nan")), \
        runner.parts_run - before


def edit_to_redraw(app, win, scenario_name: str, field: str, first, step, repeat: int):
    from kvviz.bundled import resolve_scenario
    win.open(str(resolve_scenario(scenario_name)))
    wait_signal(win.result_ready)
    app.processEvents()
    runner = win.runner
    whole, first_drawn, sims, ests, ran = [], [], [], [], []
    for i in range(repeat):
        w, f, sim, est, n = _one_edit(app, win, _edited(win, field, first + step * (i + 1)))
        whole.append(w)
        first_drawn.append(f)
        sims.append(sim)
        ests.append(est)
        ran.append(n)
    ratio = _median(sims) / _median(ests)
    return whole, first_drawn, sims, ests, (_median(ran), runner.last_parts), ratio


def needed_first_ab(app, win, scenario_name: str, field: str, first, step, repeat: int):
    """The same edits with the needed parts run alone first and with every part at once,
    alternating (so both see the same load): {True/False: (to final, to first drawn)}."""
    from kvviz.bundled import resolve_scenario
    win.open(str(resolve_scenario(scenario_name)))
    wait_signal(win.result_ready)
    app.processEvents()
    out: dict = {True: ([], []), False: ([], [])}
    for i in range(repeat):
        for mode in ((True, False) if i % 2 else (False, True)):
            win.runner.needed_first = mode
            # below the scenario's value (the edits above are the other tables'): values not used before
            w, f, *_ = _one_edit(app, win, _edited(win, field, first - step * (1 + 2 * i + mode)))
            out[mode][0].append(w)
            out[mode][1].append(f)
    win.runner.needed_first = None
    return out


def _edited(win, field: str, value):
    sc = win.panel.scenario()
    section, name = field.split(".")
    return sc.model_copy(update={section: getattr(sc, section).model_copy(update={name: value})})


def edit_during_run(app, win, field: str, first, step, repeat: int):
    """An edit while the previous edit's run is in flight: (to first drawn, to final drawn,
    Results of another value drawn after the second edit) from the second edit, per repeat."""
    from PySide6.QtCore import QEventLoop, QTimer
    runner = win.runner
    whole, first_drawn, stale = [], [], 0
    for i in range(repeat):
        stale_value = first + step * (1000 + 2 * i)  # values never used before: nothing kept answers
        fresh_value = stale_value + step
        marks: dict = {}
        drawn: list = []

        def mark(*_, m=marks):
            m.setdefault("partial", time.perf_counter())

        def final(result, d=drawn):
            d.append(result)
        runner.partial.connect(mark)
        win.result_ready.connect(final)
        win._run(_edited(win, field, stale_value))
        loop = QEventLoop()
        QTimer.singleShot(int(IN_FLIGHT_S * 1000), loop.quit)
        loop.exec()  # the first edit's run goes on meanwhile, the window painting
        busy = runner.busy()
        marks.clear()
        drawn.clear()  # from here on only the second edit's Result may be drawn
        t = time.perf_counter()
        win._run(_edited(win, field, fresh_value))
        wait_signal(win.result_ready)
        app.processEvents()
        whole.append(time.perf_counter() - t)
        first_drawn.append(marks.get("partial", t + whole[-1]) - t)
        runner.partial.disconnect(mark)
        win.result_ready.disconnect(final)
        section, name = field.split(".")
        stale += sum(getattr(getattr(r.scenario, section), name) != fresh_value for r in drawn)
        if not busy:
            print(f"    (repeat {i + 1}: the first run had ended before the second edit: not a cancel)")
    return whole, first_drawn, stale


def busy_core():
    """A child process that keeps one core busy until it is stopped (by this benchmark)."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def main():
    if "--help" in sys.argv or "-h" in sys.argv:  # it takes minutes: never start by mistake
        print(__doc__)
        return
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 3
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    load = busy_core() if "--load" in sys.argv else None
    try:
        run(repeat, only, load)
    finally:
        if load is not None:
            load.terminate()
            load.wait()


def run(repeat: int, only, load):
    print(describe())
    if load is not None:
        print(f"background load: one busy core (pid {load.pid}) for the whole benchmark")
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
        edits = [e for e in EDITS if only is None or e[0] == only]
        for scenario_name, field, first, step, what in ([] if "--ab-only" in sys.argv else edits):
            whole, first_drawn, sims, ests, ran, ratio = edit_to_redraw(app, win, scenario_name, field, first, step, repeat)
            print(f"  {scenario_name} {field} ({what}; {ran[0]} of {ran[1]} parts ran):")
            print(f"    to the final result drawn {_ms(whole)}; to the first policy drawn {_ms(first_drawn)}")
            print(f"    simulation in the child {_ms(sims)}; the window's estimate {_median(ests):.2f} s "
                  f"(took {ratio:.2f}× it)")
        if "--ab" in sys.argv or "--ab-only" in sys.argv:
            print(f"the needed parts (the recorded policy's run, the workload) alone first, or every part at once "
                  f"(alternating; median of {repeat} each, range):")
            for scenario_name, field, first, step, _what in edits:
                if field != "hardware.dram_gb":
                    continue
                ab = needed_first_ab(app, win, scenario_name, field, first, step, repeat)
                for mode, label in ((False, "all at once"), (True, "needed first")):
                    print(f"  {scenario_name} {field}, {label}: to the first policy drawn {_ms(ab[mode][1])}; "
                          f"to the final result drawn {_ms(ab[mode][0])}")
        print(f"an edit while the previous edit's run is in flight ({IN_FLIGHT_S:.1f} s after it; that run "
              f"cancelled; from the second edit; median of {repeat}, range):")
        for scenario_name, field, first, step, _what in ([] if "--ab-only" in sys.argv else edits):
            if field != "hardware.dram_gb":
                continue
            from kvviz.bundled import resolve_scenario
            win.open(str(resolve_scenario(scenario_name)))
            wait_signal(win.result_ready)
            app.processEvents()
            whole, first_drawn, stale = edit_during_run(app, win, field, first, step, repeat)
            print(f"  {scenario_name} {field}: to the first policy drawn {_ms(first_drawn)}; "
                  f"to the final result drawn {_ms(whole)}; stale drawn {stale}")
        win.ask_unsaved = lambda: None
        win.runner.shutdown()
    print(f"load average after: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")


if __name__ == "__main__":
    os.environ.setdefault("KVVIZ_WORKERS", str(os.cpu_count() or 1))  # as kvviz-gui sets it
    main()
