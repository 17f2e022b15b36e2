"""Python's cyclic garbage collector, run on the GUI thread only.

The app runs work on other threads: a sweep or replay job (background.py) and the reader of
the simulation child's results (worker.py). An automatic collection starts on whichever thread
happens to allocate, and when it frees a cycle holding Qt wrapper objects there, their C++
destructors run off the GUI thread. Seen here as a hang of the whole app: a replay job importing
pyarrow triggered a collection that destroyed a QObject, whose shiboken hook then waited for the
GIL held by the GUI thread (py-spy: gc_collect_main → QObject::~QObject →
Shiboken::GilState::acquire). So automatic collection is switched off and a GUI-thread timer
collects the youngest generation at every tick, and an older one when as many younger
collections have passed as CPython's thresholds say. (Not "when the young count passes its
threshold": that count also falls as objects are freed, so a timer that samples it can miss the
moment and leave a cycle uncollected; a test caught exactly that.)
"""
from __future__ import annotations

import gc

from PySide6.QtCore import QCoreApplication, QTimer

INTERVAL_MS = 250  # cycles wait at most this long to be freed

_timer: QTimer | None = None


def collect_on_gui_thread() -> None:
    """Install the collector timer on the running QCoreApplication (once; a no-op without one)."""
    global _timer
    app = QCoreApplication.instance()
    if app is None or (_timer is not None and _timer.parent() is app):
        return
    gc.disable()
    _timer = QTimer(app)
    _timer.timeout.connect(_collect)
    _timer.start(INTERVAL_MS)


def _collect() -> None:
    counts, thresholds = gc.get_count(), gc.get_threshold()
    if counts[0] <= 0:
        return  # nothing allocated since the last collection
    generation = 0  # the oldest generation whose count passed its threshold, as CPython picks
    while generation < 2 and counts[generation + 1] > thresholds[generation + 1]:
        generation += 1
    gc.collect(generation)
