"""Simulations run in a warm child process; the finished Result comes back through a signal.

A child process, not a thread, because a pure-Python simulation cannot be interrupted:
Cancel (or a newer edit while a run is still going) terminates the child (and the worker
processes it keeps for a run's parts) and starts a fresh one, whose workers start at once.
Graphics items are never touched here: the window builds them when `finished` arrives.

A run made of independent parts (Mechanism.plan: AttentionStore's policies) comes back part by
part: this side keeps each part's output (by its key: the inputs it reads) in memory, combines
what has arrived into a partial Result (`partial`) and the last into the final one (`finished`),
and sends the child only the parts it does not already hold, so an edit re-runs what it changed.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import threading
import time
import traceback

from PySide6.QtCore import QObject, QTimer, Signal

from kvviz.calibration import REFERENCE_PROBE_US_PER_TURN as REFERENCE
from kvviz.calibration import WORTH_CALIBRATING_S, calibrated, calibration_from, machine
from kvviz.errors import ScenarioError
from kvviz.executor import workers
from kvviz.mechanisms import mechanisms
from kvviz.runs import MemoryCache, keep
from kvviz.size_guard import DEFAULT_MAX_MEMORY_GB

from .gui_gc import collect_on_gui_thread

# Parts kept for reuse: at most a quarter of the size guard's limit for one run (the flagship's
# recorded run, its trace included, measures about 22 MB).
KEEP_BYTES = DEFAULT_MAX_MEMORY_GB * 1e9 / 4


def keeps_pool(n_workers: int) -> bool:
    """Whether the child keeps its workers from its start (a run's parts find them started): only
    where stopping the child's process group stops them too (not on Windows: a run there starts
    a pool of its own, as the CLI's does, rather than leave idle workers behind)."""
    return n_workers > 1 and hasattr(os, "killpg")


def cores_short(n_workers: int) -> bool:
    """Whether `n_workers` busy workers would share the cores with what else runs now (another
    program, another run): then a run's needed parts (the recorded policy's run, the workload)
    go first and alone, and its first result is drawn sooner; on idle cores all parts go together
    (the recorded run is no slower for it, and the whole run ends sooner)."""
    from kvviz.calibration import others_running
    return n_workers > 1 and others_running() + n_workers > (os.cpu_count() or 1)


def _child(conn, n_workers: int = 1):
    """Child process: simulate each scenario received, send back the Result or a message. A
    run's independent parts go to `n_workers` processes it keeps from its start to its end
    (forked from it where that is safe: it holds no Qt), so no edit waits for a pool to start."""
    import os
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C belongs to the app
    if hasattr(os, "setpgrp"):
        os.setpgrp()  # its own process group: stopping it stops its workers too
    from kvviz.executor import WarmPool
    pool = WarmPool(n_workers, inherited=(conn,)) if keeps_pool(n_workers) else None
    try:
        _serve(conn, pool)
    finally:
        if pool is not None:
            pool.close()


def _serve(conn, pool):
    from kvviz import ScenarioError, simulate
    from kvviz.runs import run_parts
    from kvviz.simulation import check_run_size, representable
    while True:
        try:
            request, scenario, parts, max_memory_gb, needed_first = conn.recv()
        except (EOFError, OSError):
            return
        t = time.perf_counter()
        try:
            if parts is None:  # one piece
                result = simulate(scenario, max_memory_gb)
                conn.send((request, "ok", result, time.perf_counter() - t))
                continue
            check_run_size(scenario, max_memory_gb)
            try:
                with representable():
                    run_parts(mechanisms()[scenario.kind].plan(scenario), scenario, parts,
                              lambda name, out, r=request, t=t: conn.send((r, "part", (name, out), time.perf_counter() - t)),
                              pool=pool.executor if pool is not None else None,
                              pool_workers=pool.n if pool is not None else None,
                              needed_first=cores_short(pool.n if pool is not None else 1) if needed_first is None
                              else needed_first)
            except BaseException:
                if pool is not None:  # parts of the failed run may still be running there
                    pool.discard()
                raise
        except ScenarioError as e:  # the field too, so the window can mark it where it is edited
            conn.send((request, "error", (str(e), e.field or "", e.message), 0.0))
        except Exception as e:  # a bug: say so in one line; the details go to the terminal
            traceback.print_exc()
            text = f"internal error while simulating: {e!r}"
            conn.send((request, "error", (text, "", text), 0.0))
        else:
            if parts is not None:
                conn.send((request, "done", None, time.perf_counter() - t))


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


def _stop(proc, starter) -> None:
    """End a child and its process group (its workers), once its start has returned."""
    starter.join()  # (its pid exists once it has started)
    if proc.pid is not None:  # (None: its start failed)
        try:
            os.killpg(proc.pid, signal.SIGTERM)  # the child and any pool it started
        except (AttributeError, OSError):
            proc.terminate()
        proc.join(5)


def warm_up(ctx) -> None:
    """Start the fork server (it imports the simulator) without waiting for it; nothing where
    children are spawned."""
    if ctx.get_start_method() == "forkserver":
        from multiprocessing import forkserver
        forkserver.ensure_running()


def child_context():
    """The context children of the window start from (the simulator's, and an export's)."""
    return _context()


class _Job:
    """The newest request: its scenario, its plan (None: one piece) and the parts' outputs so far."""

    def __init__(self, request: int, scenario, plan, outputs: dict):
        self.request, self.scenario, self.plan, self.outputs = request, scenario, plan, outputs
        self.reused = len(outputs)  # parts taken from memory, not run
        self.delivered = False      # the whole Result has been emitted (or the run cancelled)
        self.shown = 0              # parts in the last partial Result emitted

    def missing(self) -> list[str]:
        return [p.name for p in self.plan.parts if p.name not in self.outputs]


class SimulationRunner(QObject):
    """One run at a time; only the newest request's result is delivered."""

    finished = Signal(object)   # Result
    partial = Signal(object, int, int)  # a Result of some parts, (parts done, parts in all)
    failed = Signal(str)
    refused = Signal(str, str)  # (field path, message): the simulation refused a field's value
    busy_changed = Signal(bool)
    _arrived = Signal(int, str, object, float)  # from the reader thread to the GUI thread

    def __init__(self, parent=None):
        super().__init__(parent)
        self._ctx = _context()
        self._latest = 0
        self._running = 0           # request id in the child, 0 when idle
        self.last_seconds = 0.0     # simulate() time of the last delivered run
        self.kept = MemoryCache(KEEP_BYTES)  # parts' outputs by key
        self.parts_run = 0          # parts sent to the child to run, ever (tests count them)
        self.last_reused = 0        # parts of the last delivered run taken from `kept`
        self.last_parts = 0         # parts in the last delivered run (0: one piece)
        # the running request's time (kvviz.calibration: this machine, its parts over the worker
        # processes, the parts kept left out) and (parts sent, parts in all); None / (0, 0)
        self.estimate = None
        self.sending = (0, 0)
        self._job: _Job | None = None
        self.max_memory_gb: float | None = None  # the size guard's limit (None: kvviz's default)
        # a run's needed parts alone first (kvviz.runs.run_parts): True, False, or None: when the
        # cores are short at the run's start (cores_short)
        self.needed_first: bool | None = None
        self._proc = self._conn = self._reader = self._starter = None
        self._spare = None  # (process, pipe end, starter) of a child started ahead, or None
        self._closed = False
        self._arrived.connect(self._on_arrived)
        self.busy_changed.connect(lambda busy: busy or self._spare_when_idle())
        collect_on_gui_thread()  # the reader thread unpickles Results: no collection may start there
        warm_up(self._ctx)  # the fork server imports the simulator meanwhile; the child starts at the first run

    def _start(self):
        """A fresh child: the spare one when there is one (started while the app was idle: its
        workers are already up), else one started now in the background: the GUI thread never
        waits for it (with a fork server, the server's first import of the simulator takes
        0.4-1.2 s on a busy machine). A request sent meanwhile waits in the pipe; the child reads
        it once it runs."""
        spare, self._spare = self._spare, None
        if spare is not None and not spare[2].is_alive() and spare[0].pid is None:  # its start failed
            spare[1].close()
            spare = None  # (a fresh start says why, if it fails too)
        if spare is not None:
            self._proc, self._conn, self._starter = spare
        else:
            self._proc, self._conn, self._starter = self._spawn()
        self._reader = threading.Thread(target=self._read, args=(self._conn,), daemon=True)
        self._reader.start()

    def _spare_when_idle(self):
        """A spare child for the next cancel, started as a run ends (forks from the fork server:
        milliseconds of CPU): a run cancelled by a newer edit then goes on in a child whose
        workers are already up instead of one that starts then."""
        if self._spare is None and not self._running and self._proc is not None and not self._closed:
            self._spare = self._spawn()

    def _spawn(self):
        """(process, pipe end, starter thread) of a child starting in the background."""
        parent, child = self._ctx.Pipe()
        # Not a daemon: a daemonic process may not start processes, and a scenario's independent
        # runs (AttentionStore's policies) go to the child's pool of workers (as many as the
        # estimate counts). shutdown() and cancel end it and its process group, workers
        # included; if the app dies, its pipe closes and the child's loop returns.
        proc = self._ctx.Process(target=_child, args=(child, workers()), daemon=False, name="kvviz-sim")

        def start():
            try:
                proc.start()
            except Exception as e:  # (a run sent meanwhile would wait forever: say why it cannot)
                if proc is self._proc:  # a spare says so when it is taken (_start)
                    text = f"could not start the simulation process: {e}"
                    self._arrived.emit(self._latest, "error", (text, "", text), 0.0)
            finally:
                child.close()  # (a failed start: the reader sees EOF, the run never arrives)
        starter = threading.Thread(target=start, daemon=True, name="kvviz-sim-start")
        starter.start()
        return proc, parent, starter

    def _ensure_started(self):
        """The child, started at the first request (not at the window's construction: the window
        is drawn first)."""
        if self._proc is None:
            self._start()

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
        _stop(self._proc, self._starter)
        self._conn.close()
        self._reader.join(5)
        self._proc = self._conn = self._reader = self._starter = None

    def _stop_spare(self):
        if self._spare is not None:
            proc, conn, starter = self._spare
            self._spare = None
            _stop(proc, starter)
            conn.close()

    def _plan(self, scenario):
        """The scenario's plan and the outputs already kept for it, or (None, {})."""
        make = mechanisms()[scenario.kind].plan
        if make is None:
            return None, {}
        try:
            plan = make(scenario)
        except OSError:  # a trace file that went away: the child says so in one line
            return None, {}
        outputs = {p.name: out for p in plan.parts if (out := self.kept.get(p.key)) is not None}
        return plan, outputs

    def submit(self, scenario) -> int:
        self._latest += 1
        if self._running:  # a stale run is in progress: stop it rather than wait for it
            self._stop_child()
            self._start()
            self._running = 0
        plan, outputs = self._plan(scenario)
        job = self._job = _Job(self._latest, scenario, plan, outputs)
        missing = job.missing() if plan is not None else None
        self.estimate = self._estimate(scenario, outputs)
        self.sending = (len(missing), len(plan.parts)) if plan is not None else (0, 0)
        if missing == []:  # every part kept: combined here, delivered as a run would be
            request = self._latest
            QTimer.singleShot(0, self, lambda: self._on_arrived(request, "done", None, 0.0))
            return request
        self._running = self._latest
        self.parts_run += len(missing or ())
        self._ensure_started()
        self._conn.send((self._latest, scenario, missing, self.max_memory_gb, self.needed_first))
        self.busy_changed.emit(True)
        return self._latest

    def _estimate(self, scenario, kept: dict):
        """The run's calibrated estimate, the parts in `kept` left out, no pool start charged where
        the child keeps its workers; this machine's probe is run (once) only for a run long
        enough to be worth it. None where it cannot be told."""
        try:
            est = mechanisms()[scenario.kind].estimate(scenario)
        except (ScenarioError, OSError):  # a trace file that cannot be read: the child says so
            return None
        if est is None:
            return None
        cal = machine() if est.seconds >= WORTH_CALIBRATING_S else calibration_from(REFERENCE)
        n = workers()  # the child's workers (its start gave it workers() too)
        return calibrated(est, cal, n, skip=kept, warm=keeps_pool(n))

    def cancel(self):
        if self._running:
            self._stop_child()
            self._start()  # in the background: its workers start at once, ready for the next run
            self._running = 0
            # a result the child sent just before it was stopped may still be queued for the GUI
            # thread: a new id makes _on_arrived drop it (a cancelled run never arrives)
            self._latest += 1
            self.busy_changed.emit(False)
            job = self._job
            if job is not None:
                job.delivered = True  # what it sent before it stopped is kept, never shown
            if job is not None and job.plan is not None and job.shown:  # say what the views now show
                self.failed.emit(f"cancelled: the {job.shown} of {len(job.plan.parts)} parts that had ended are shown")

    def job_scenario(self):
        """The scenario of the newest request (None before the first)."""
        return self._job.scenario if self._job is not None else None

    def busy(self) -> bool:
        return bool(self._running)

    def shutdown(self):
        """Stop the child, the spare and the reader thread (window close, test teardown)."""
        self._running = 0
        self._closed = True
        self._stop_child()
        self._stop_spare()

    def _on_arrived(self, request: int, status: str, payload, secs: float):
        job = self._job if self._job is not None and self._job.request == request else None
        if status == "part" and job is not None:
            name, output = payload
            job.outputs[name] = output
            keep(self.kept, job.plan, job.plan.part(name), output)  # kept even if cancelled: it is valid
            if job.delivered:
                return
            if job.missing():
                self._combine(job, partial=True)
                return
            status = "done"  # the last part: the run is whole
        if request != self._latest or status == "part" or (job is not None and job.delivered) \
                or (status == "done" and job is None):
            return
        if status == "done" and job.missing():  # the child ended without them: a bug
            status, payload = "error", ("internal error: runs missing: " + ", ".join(job.missing()), "", "")
        if status == "done":
            result = self._combine(job, partial=False)
            if result is None:
                return
            job.delivered = True
            status, payload = "ok", result
        self.last_reused = job.reused if job is not None else 0
        self.last_parts = len(job.plan.parts) if job is not None and job.plan is not None else 0
        if self._running:
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

    def _combine(self, job: _Job, partial: bool):
        """The parts so far as a Result: `partial` emitted (when the parts combine can do
        without are missing) or returned whole, its checks evaluated; None on failure."""
        from kvviz.simulation import representable, with_checks
        try:
            with representable():
                result = job.plan.combine(job.scenario, job.outputs)
                if result is None or partial:
                    if result is not None:
                        job.shown = len(job.outputs)
                        self.partial.emit(result, len(job.outputs), len(job.plan.parts))
                    return None
                return with_checks(result)
        except Exception as e:  # a bug: one line here, the details in the terminal
            traceback.print_exc()
            job.delivered = True
            if self._running:
                self._running = 0
                self.busy_changed.emit(False)
            self.failed.emit(f"internal error while combining the runs: {e!r}")
            return None
