"""Simulations run in a warm child process; the finished Result comes back through a signal.

A child process, not a thread, because a pure-Python simulation cannot be interrupted:
Cancel (or a newer edit while a run is still going) terminates the child and starts a fresh
one. Graphics items are never touched here: the window builds them when `finished` arrives.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
import time
import traceback

from PySide6.QtCore import QObject, Signal

from .gui_gc import collect_on_gui_thread


def _child(conn):
    """Child process: simulate each scenario received, send back the Result or a message."""
    import os
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C belongs to the app
    if hasattr(os, "setpgrp"):
        os.setpgrp()  # its own process group: stopping it stops the pool it may start too
    from kvviz import ScenarioError, simulate
    while True:
        try:
            request, scenario, max_memory_gb = conn.recv()
        except (EOFError, OSError):
            return
        t = time.perf_counter()
        try:
            result = simulate(scenario, max_memory_gb)
            conn.send((request, "ok", result, time.perf_counter() - t))
        except ScenarioError as e:  # the field too, so the window can mark it where it is edited
            conn.send((request, "error", (str(e), e.field or "", e.message), 0.0))
        except Exception as e:  # a bug: say so in one line; the details go to the terminal
            traceback.print_exc()
            text = f"internal error while simulating: {e!r}"
            conn.send((request, "error", (text, "", text), 0.0))


def _context():
    """Never fork a process that holds Qt. Where it exists, a fork server (started once, without
    Qt, with the simulator already imported) forks each child in milliseconds; a spawned child
    starts a fresh interpreter and imports kvviz again (~0.5-1 s at every window and Cancel)."""
    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    # only the simulator: not __main__ (the default), which may be the app and import Qt
    from kvviz.mechanisms import PACKAGES
    ctx.set_forkserver_preload(["kvviz.simulation", *(f"kvviz.mechanisms.{p}" for p in PACKAGES)])
    return ctx


class SimulationRunner(QObject):
    """One run at a time; only the newest request's result is delivered."""

    finished = Signal(object)   # Result
    failed = Signal(str)
    refused = Signal(str, str)  # (field path, message): the simulation refused a field's value
    busy_changed = Signal(bool)
    _arrived = Signal(int, str, object, float)  # from the reader thread to the GUI thread

    def __init__(self, parent=None):
        super().__init__(parent)
        self._ctx = _context()
        self._latest = 0
        self._running = 0           # request id in the child, 0 when idle
        self._proc = self._conn = self._reader = None
        self.last_seconds = 0.0     # simulate() time of the last delivered run
        self.max_memory_gb: float | None = None  # the size guard's limit (None: kvviz's default)
        self._arrived.connect(self._on_arrived)
        collect_on_gui_thread()  # the reader thread unpickles Results: no collection may start there
        self._start()

    def _start(self):
        parent, child = self._ctx.Pipe()
        # Not a daemon: a daemonic process may not start processes, and a scenario's independent
        # runs (AttentionStore's policies) go to a pool of their own. shutdown() and cancel end
        # it and its process group; if the app dies, its pipe closes and the child's loop returns.
        self._proc = self._ctx.Process(target=_child, args=(child,), daemon=False, name="kvviz-sim")
        self._proc.start()
        child.close()
        self._conn = parent
        self._reader = threading.Thread(target=self._read, args=(parent,), daemon=True)
        self._reader.start()

    def _read(self, conn):
        while True:
            try:
                request, status, payload, secs = conn.recv()
            except (EOFError, OSError):
                return  # the child was stopped (cancel or shutdown)
            self._arrived.emit(request, status, payload, secs)

    def _stop_child(self):
        if self._proc is None:
            return
        try:
            os.killpg(self._proc.pid, signal.SIGTERM)  # the child and any pool it started
        except (AttributeError, OSError):
            self._proc.terminate()
        self._proc.join(5)
        self._conn.close()
        self._reader.join(5)
        self._proc = self._conn = self._reader = None

    def submit(self, scenario) -> int:
        self._latest += 1
        if self._running:  # a stale run is in progress: stop it rather than wait for it
            self._stop_child()
            self._start()
        self._running = self._latest
        self._conn.send((self._latest, scenario, self.max_memory_gb))
        self.busy_changed.emit(True)
        return self._latest

    def cancel(self):
        if self._running:
            self._stop_child()
            self._start()
            self._running = 0
            # a result the child sent just before it was stopped may still be queued for the GUI
            # thread: a new id makes _on_arrived drop it (a cancelled run never arrives)
            self._latest += 1
            self.busy_changed.emit(False)

    def busy(self) -> bool:
        return bool(self._running)

    def shutdown(self):
        """Stop the child and the reader thread (window close, test teardown)."""
        self._running = 0
        self._stop_child()

    def _on_arrived(self, request: int, status: str, payload, secs: float):
        if request != self._latest:
            return
        self._running = 0
        self.busy_changed.emit(False)
        if status == "ok":
            self.last_seconds = secs
            self.finished.emit(payload)
        else:
            text, field, message = payload
            if field:  # said once, at its field (the window marks it)
                self.refused.emit(field, message)
            else:
                self.failed.emit(text)
