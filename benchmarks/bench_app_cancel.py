"""A/B of the runner's spare child (issue 33, item 8): an edit arriving 0.15 s into a run (that
run cancelled), timed from the second edit to the final Result; with the spare child (adopted at
the cancel, its workers already up) and without (a child started then). Alternating, so both
see the same machine load. Prints figures, asserts nothing about time.

Run: QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/bench_app_cancel.py [SCENARIO [N]]
(default attention_store_mooncake, 6 pairs)."""
from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("KVVIZ_WORKERS", "2")

from machine import describe, wait_signal  # noqa: E402

EDIT_AFTER_S = 0.15  # the second edit arrives this long into the first one's run


def _pause(seconds: float) -> None:
    from PySide6.QtCore import QEventLoop, QTimer
    loop = QEventLoop()
    QTimer.singleShot(int(seconds * 1000), loop.quit)
    loop.exec()


def ab(runner, edited, pairs: int) -> dict[str, list[float]]:
    runner.submit(edited())
    wait_signal(runner.finished)
    spare_on = runner._spare_when_idle
    out: dict[str, list[float]] = {"with the spare": [], "without": []}
    for _ in range(pairs):
        for variant in out:
            if variant == "without":
                runner._stop_spare()
                runner._spare_when_idle = lambda: None
            else:
                runner._spare_when_idle = spare_on
                spare_on()
            _pause(1.0)  # idle, as between a person's edits: the spare (if any) is up
            runner.submit(edited())
            _pause(EDIT_AFTER_S)
            if not runner.busy():
                print(f"  ({variant}: the first run ended within {EDIT_AFTER_S} s: not a cancel, skipped)")
                continue
            t = time.perf_counter()
            runner.submit(edited())
            wait_signal(runner.finished)
            out[variant].append(time.perf_counter() - t)
    return out


def main() -> None:
    from PySide6.QtCore import QCoreApplication
    app = QCoreApplication.instance() or QCoreApplication([])  # noqa: F841 (the event loop's)
    from app.worker import SimulationRunner
    from kvviz import load_scenario
    from kvviz.bundled import resolve_scenario
    name = sys.argv[1] if len(sys.argv) > 1 else "attention_store_mooncake"
    pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    value = [300]

    def edited():
        value[0] += 1  # a value never used before: no kept part answers for it
        return load_scenario(resolve_scenario(name), [f"hardware.dram_gb={value[0]}"])
    print(describe())
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    runner = SimulationRunner()
    try:
        out = ab(runner, edited, pairs)
    finally:
        runner.shutdown()
    print(f"{name}: an edit {EDIT_AFTER_S} s into a run, to the final Result (from the second edit):")
    for variant, xs in out.items():
        xs = sorted(xs)
        if xs:
            print(f"  {variant}: median {xs[len(xs) // 2]:.2f} s, range {xs[0]:.2f}–{xs[-1]:.2f} (n={len(xs)})")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
