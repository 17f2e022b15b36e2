"""What the figures were measured on (printed with them, so a reader can compare), and how
repeated timings are summarised."""
import os
import platform
import time


def describe() -> str:
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return f"machine: {os.cpu_count()} cores, {cpu}; Python {platform.python_version()} ({platform.system()})"


def spread(times: list[float]) -> str:
    """Median and range of repeated timings, in seconds."""
    t = sorted(times)
    return f"{t[len(t) // 2]:.2f} s (median of {len(t)}; {t[0]:.2f}–{t[-1]:.2f})"


def median_of(fn, repeat: int = 3):
    """(median seconds of `repeat` calls, the last call's result)."""
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2], out


def wait_signal(signal, timeout_ms: int = 300_000) -> None:
    """Run Qt's event loop until `signal` fires (or the timeout): a benchmark waits for the app
    as a user would, with the window painting meanwhile."""
    from PySide6.QtCore import QEventLoop, QTimer
    loop = QEventLoop()
    signal.connect(loop.quit)
    QTimer.singleShot(timeout_ms, loop.quit)
    loop.exec()
    signal.disconnect(loop.quit)
