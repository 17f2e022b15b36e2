"""One seam for independent work: map a pure function over inputs, results keyed by index.

By default a local process pool (spawned, so no Qt or thread state is forked into workers);
any `concurrent.futures.Executor` can be passed instead, such as a `WarmPool`'s (kept across
calls: the app's simulation child, which holds no Qt, forks its workers once).
`open_executor("tcp://HOST:PORT")` connects to a running Dask scheduler (`kvviz[cluster]`, imported only then) and gives its
`client.get_executor()`, after checking that every worker runs what this process runs (kvviz,
Python, numpy, pydantic: a run's result is only comparable if they do). KVVIZ_EXECUTOR sets the
default. Results stream to `on_result(index, value)` as they arrive, and `on_result` may raise
(a Cancel button) to stop: pending calls are cancelled and the pool ends.
"""
from __future__ import annotations

import heapq
import logging
import multiprocessing
import os
import platform
import threading
import time
from concurrent.futures import FIRST_COMPLETED, CancelledError, Executor, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, ParamSpec, Sequence, TypeVar

from .errors import ScenarioError

if TYPE_CHECKING:  # imported where a cluster is asked for (kvviz[cluster])
    from multiprocessing.connection import Connection

    from distributed import Client

T = TypeVar("T")
R = TypeVar("R")
P = ParamSpec("P")


def workers() -> int:
    """Processes for independent runs: KVVIZ_WORKERS (the kvviz and kvviz-gui commands set it
    to the number of cores; a library caller opts in, since spawned processes re-import the
    caller's main module), and one inside a pool worker."""
    env = os.environ.get("KVVIZ_WORKERS", "")
    if multiprocessing.current_process().daemon or not env.isdigit():
        return 1
    return max(1, int(env))


# What a local pool adds to a run of independent parts, in seconds of the machine kvviz.calibration's
# reference was measured on (it scales them by this machine's factor). Measured with
# benchmarks/bench_estimate.py --constants (the flagship's parts, their runs left out: a pool of
# 2 spawned for them, median 0.67 and 1.17 s in two sessions; a warm one 0.25 and 0.24 s: the
# difference, 0.42 and 0.94 s, is the start): starting a pool of this call's own (the CLI's: two
# spawned interpreters importing numpy, pydantic and kvviz side by side). A pool kept across calls
# and already started (the app's WarmPool) costs none of it; the parts' inputs and outputs sent
# through it cost both (the mechanism's plan says how much: Plan.dispatch).
POOL_START_S = 0.68
# A pool is used when its wall time (start, sending, the parts' makespan over its workers) times
# this is at most the parts' serial time. ASSUMPTION (ours), from the figures: on this shared
# 2-core machine (load average 1-2.3 from other sessions) `kvviz run` of the flagship took
# 2.5-3.05 s on one process, 3.8-4.05 s with a pool of 2 (compiled engine, ~1.9 s of parts);
# with KVVIZ_ENGINE=python 14.2-14.7 s vs 13.4-15.0 s (~13.5 s of parts), and at 3,000
# conversations 5.3 vs 6.5 s: the other processes took most of what a second worker gives, so
# the pool must promise a saving of a fifth, not merely any.
POOL_MARGIN = 1.25


def makespan(seconds: Sequence[float], workers: int) -> float:
    """When the last of `seconds` ends if each, in the order given, goes to the first worker
    free (as a process pool takes its queued tasks)."""
    free = [0.0] * max(1, min(workers, len(seconds)))
    for s in seconds:
        heapq.heappush(free, heapq.heappop(free) + s)
    return max(free)


def pool_seconds(seconds: Sequence[float], workers: int, warm: bool, dispatch_s: float) -> float:
    """Wall seconds of parts taking `seconds` (in the order they go) on a pool of `workers`:
    its start unless `warm`, sending them (`dispatch_s`), and their makespan."""
    return (0.0 if warm else POOL_START_S) + dispatch_s + makespan(seconds, workers)


def worth_a_pool(seconds: Sequence[float], workers: int, warm: bool, dispatch_s: float) -> bool:
    """Whether parts taking `seconds` in one process go to a pool of `workers` (one already
    started when `warm`): more than one of each, and the pool saves enough (POOL_MARGIN)."""
    n = min(workers, len(seconds))
    return n > 1 and POOL_MARGIN * pool_seconds(seconds, n, warm, dispatch_s) < sum(seconds)


def _ignore_sigint() -> None:
    """Workers leave Ctrl-C to the parent, which cancels and exits cleanly."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def local_pool(n: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"), initializer=_ignore_sigint)


def _forked_worker(inherited: tuple[Connection, ...]) -> None:
    """A forked worker: Ctrl-C left to the parent, and the parent's pipe ends it inherited closed
    (only the parent talks on them; a copy held here would keep the other end from seeing EOF)."""
    _ignore_sigint()
    for end in inherited:
        end.close()


def _ready() -> None:
    """A no-op task: submitting one per worker starts the processes now, not at the first call."""


class WarmPool:
    """A local pool of `n` processes kept for many calls (the app's simulation child serves edit
    after edit with it, rather than starting a pool for each). Its workers are forked where
    that is safe (Linux): they start in milliseconds with every module the caller imported; a
    spawned pool (elsewhere; macOS's system libraries are not fork-safe) starts interpreters
    that import kvviz again, 0.4-1.1 s, once. Fork only from a process that holds no threads
    and no Qt, before anything it started holds a lock. `inherited`: the caller's pipe ends
    (multiprocessing Connections) its workers must not keep open, closed in each forked one."""

    def __init__(self, n: int, inherited: tuple[Connection, ...] = ()) -> None:
        self.n = n
        self._inherited = inherited
        self._pool: ProcessPoolExecutor | None = None
        self._start()

    def _start(self) -> None:
        if "fork" in multiprocessing.get_all_start_methods() and platform.system() == "Linux":
            self._pool = ProcessPoolExecutor(self.n, mp_context=multiprocessing.get_context("fork"),
                                             initializer=_forked_worker, initargs=(self._inherited,))
        else:
            self._pool = ProcessPoolExecutor(self.n, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_ignore_sigint)
        for _ in range(self.n):  # start the workers now, while the caller waits for its first request
            self._pool.submit(_ready)

    @property
    def executor(self) -> ProcessPoolExecutor | None:
        """The pool, or None once closed."""
        return self._pool

    def discard(self) -> None:
        """After a call that failed: its other calls may still be running, or the pool broke.
        Its workers are stopped and a fresh pool started, so the next call waits for none."""
        self.close()
        self._start()

    def close(self) -> None:
        if self._pool is None:
            return
        # the executor has no public way to stop a busy worker (Python 3.14 adds one)
        for proc in list((getattr(self._pool, "_processes", None) or {}).values()):
            proc.terminate()
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool = None


def map_indexed(fn: Callable[[T], R], items: Iterable[T], executor: Executor | None = None,
                n_workers: int | None = None, on_result: Callable[[int, R], None] | None = None) -> list[R]:
    """[fn(x) for x in items], computed by `executor` (or a local pool of `n_workers`, default
    `workers()`; in this process when that is 1). `on_result(i, fn(items[i]))` is called in
    completion order, in this thread."""
    items = list(items)
    n = n_workers if n_workers is not None else workers()
    if executor is None and (n <= 1 or len(items) <= 1):
        here: list[R] = []
        for i, x in enumerate(items):
            here.append(fn(x))
            if on_result:
                on_result(i, here[i])
        return here
    out: dict[int, R] = {}  # by index, as they arrive
    own = executor is None
    pool = local_pool(min(n, len(items))) if executor is None else executor
    futures = {pool.submit(fn, x): i for i, x in enumerate(items)}
    try:
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in sorted(done, key=futures.__getitem__):
                i = futures[f]
                out[i] = f.result()
                if on_result:
                    on_result(i, out[i])
    except BaseException:
        for f in futures:
            f.cancel()
        if own:
            pool.shutdown(wait=False, cancel_futures=True)
            own = False
        raise
    finally:
        if own:
            pool.shutdown()
    return [out[i] for i in range(len(items))]


def is_remote(executor: Executor | None) -> bool:
    """Whether calls may run on other machines (anything but a local process pool or none), so
    that their inputs must carry their data rather than name a local file."""
    return executor is not None and not isinstance(executor, ProcessPoolExecutor)


def share(executor: Executor | None, value: object) -> Any:
    """`value` as an argument of many calls on `executor`: a Dask cluster gets it once per worker
    (scattered; the calls then name it: a distributed Future, hence Any), any other executor with
    each call."""
    client = getattr(executor, "_client", None)  # distributed's ClientExecutor keeps its client here
    if client is not None and hasattr(client, "scatter"):
        return client.scatter(value, broadcast=True, hash=False)
    return value


# --- where a sweep runs: this computer, or a Dask cluster ----------------------------------------

CONNECT_TIMEOUT_S = 10.0  # KVVIZ_CONNECT_TIMEOUT_S overrides it


def versions() -> dict[str, str]:
    """What must match between this process and every worker."""
    import numpy
    import pydantic

    from . import __version__
    return {"kvviz": __version__, "python": platform.python_version(), "numpy": numpy.__version__,
            "pydantic": pydantic.__version__}


def pool_size() -> int:
    """Processes of a local pool by default: one per core, at most 8."""
    return min(os.cpu_count() or 1, 8)


def default_spec() -> str:
    return os.environ.get("KVVIZ_EXECUTOR", "").strip() or "local"


@contextmanager
def open_executor(spec: str | None = None, workers: int | None = None,
                  timeout_s: float | None = None) -> Iterator[Executor]:
    """An executor for `spec` ("local" or a Dask scheduler address), closed on exit."""
    spec = (spec or default_spec()).strip()
    if spec == "local":
        with local_pool(workers or pool_size()) as pool:
            yield pool
        return
    with _dask_client(spec, timeout_s) as executor:
        yield executor


@contextmanager
def cluster_executor(spec: str | None = None) -> Iterator[Executor | None]:
    """A Dask cluster's executor for a scheduler address, connected and checked now (before any
    long work), or None for `local`: the caller's own local pool then decides."""
    spec = (spec or default_spec()).strip()
    if spec == "local":
        yield None
        return
    with open_executor(spec) as executor:
        yield executor


def describe_executor(spec: str | None = None, timeout_s: float | None = None) -> str:
    """One line on where runs would go (the app's "Test connection"): the local pool's size, or
    the cluster's workers once connected and checked; a failure raises ScenarioError."""
    spec = (spec or default_spec()).strip()
    if spec == "local":
        return f"this computer: {pool_size()} worker processes"
    with _dask_client(spec, timeout_s) as executor:
        n = len(executor._client.scheduler_info().get("workers", {}))
    return f"{spec}: {n} worker{'s' * (n != 1)}, same kvviz, Python, numpy and pydantic"


def connect_timeout_s() -> float:
    """KVVIZ_CONNECT_TIMEOUT_S, or the default when it is unset or no positive number."""
    try:
        t = float(os.environ.get("KVVIZ_CONNECT_TIMEOUT_S", CONNECT_TIMEOUT_S))
    except ValueError:
        return CONNECT_TIMEOUT_S
    return t if 0 < t <= 3600 else CONNECT_TIMEOUT_S


@contextmanager
def _dask_client(address: str, timeout_s: float | None) -> Iterator[_CountingExecutor]:
    """A connected, checked Client: the address parsed, the greeting read by us (tcp://), then
    Dask's connect, handshake and the version check in a daemon thread, all within `timeout_s`.
    A thread, because Dask bounds only its connect: one stuck later is left behind (daemon: it
    never holds the process) rather than waited for. Failures while the caller works with the
    cluster (the scheduler lost) become one ScenarioError naming how many results had arrived."""
    from .dask_handshake import parse_address, probe, probe_tls, tls_context
    timeout_s = connect_timeout_s() if timeout_s is None else timeout_s
    deadline = time.monotonic() + timeout_s
    scheme, host, port = parse_address(address)
    try:
        import distributed
    except ImportError:
        raise ScenarioError(f"{address} is a Dask scheduler, and Dask is not installed: "
                            f"pip install 'kvviz[cluster]'", "--executor") from None
    if scheme == "tcp":
        probe(address, host, port, deadline)
    elif scheme == "tls":  # the handshake bounded here too: Dask's connect then redoes it
        context = tls_context()
        if context is None:
            raise ScenarioError(f"{address} is a TLS address, and Dask has no TLS settings here: set "
                                f"distributed.comm.tls.ca-file, .client.cert and .client.key (e.g. "
                                f"DASK_DISTRIBUTED__COMM__TLS__CA_FILE=...)", "--executor")
        probe_tls(address, host, port, deadline, context)
    with _quiet_dask():
        client = _bounded(lambda: _connect(distributed, address, deadline), address, deadline, timeout_s)
        counted = _CountingExecutor(client)
        try:
            yield counted
        except (ScenarioError, KeyboardInterrupt, GeneratorExit):
            raise
        except BaseException as e:
            if isinstance(e, CancelledError) or getattr(client, "status", "running") != "running":
                raise ScenarioError(f"lost the Dask scheduler at {address} mid-run ({type(e).__name__}): "
                                    f"{counted.done} of {counted.submitted} tasks had returned their results, "
                                    f"none written; the run can be repeated", "--executor") from None
            raise
        finally:
            threading.Thread(target=_close_quietly, args=(client,), daemon=True).start()


def _connect(distributed: ModuleType, address: str, deadline: float) -> Client:
    # Dask applies its timeout to each step (the connect and handshake, then the scheduler's
    # reply to the client): two steps in 80% of the time left, so Dask gives up by the deadline
    # itself and its connect thread ends with the failure instead of lingering a timeout more
    left = max(deadline - time.monotonic(), 0.1)
    client: Client = distributed.Client(address, timeout=f"{left * 0.4}s", set_as_default=False)
    try:
        check_workers(client, address)
    except BaseException:
        _close_quietly(client)
        raise
    return client


def _bounded(fn: Callable[[], T], address: str, deadline: float, timeout_s: float) -> T:
    """fn() in a daemon thread, its result or its exception as a ScenarioError, by `deadline`."""
    box: dict[str, T] = {}
    failed: list[BaseException] = []

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller below
            failed.append(e)

    t = threading.Thread(target=run, name="kvviz-dask-connect", daemon=True)
    t.start()
    t.join(max(deadline - time.monotonic(), 0))
    if t.is_alive():
        raise ScenarioError(f"cannot connect to the Dask scheduler at {address} within {timeout_s:g} s "
                            f"(it accepted the connection but did not finish Dask's handshake)", "--executor")
    e = failed[0] if failed else None
    if e is None:
        return box["value"]
    if isinstance(e, ScenarioError):
        raise e
    if isinstance(e, TimeoutError):  # Dask's own timeout (see _connect)
        raise ScenarioError(f"cannot connect to the Dask scheduler at {address} within {timeout_s:g} s "
                            f"(it accepted the connection but did not finish Dask's handshake)", "--executor")
    raise ScenarioError(f"cannot connect to the Dask scheduler at {address} within {timeout_s:g} s "
                        f"({type(e).__name__}: {_one_line(e)})", "--executor") from None


def _one_line(e: BaseException, limit: int = 200) -> str:
    text = " ".join(str(e).split()) or "no message"
    return text if len(text) <= limit else text[:limit] + "…"


def _close_quietly(client: Client) -> None:
    try:
        client.close(timeout=2)
    except BaseException:  # noqa: BLE001 - a lost scheduler cannot be told goodbye
        pass


@contextmanager
def _quiet_dask() -> Iterator[None]:
    """Dask logs its reconnect attempts and their tracebacks on stderr; kvviz says in one line
    what went wrong, so they are silenced while a cluster is in use."""
    loggers = [logging.getLogger(n) for n in ("distributed", "tornado")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


class _CountingExecutor(Executor):
    """The cluster's executor, counting the tasks sent and those whose results came back, so a
    lost scheduler can say how far the run got."""

    def __init__(self, client: Client) -> None:
        self._client = client  # share() scatters through it, as through distributed's own executor
        self._inner = client.get_executor()
        self.submitted = self.done = 0
        self._lock = threading.Lock()

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = self._inner.submit(fn, *args, **kwargs)
        self.submitted += 1
        future.add_done_callback(self._arrived)
        return future

    def _arrived(self, future: Future[Any]) -> None:
        if not future.cancelled() and future.exception() is None:
            with self._lock:
                self.done += 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._inner.shutdown(wait=wait)


def check_workers(client: Client, address: str) -> None:
    """Refuse a cluster whose workers run other versions than this process (or none at all)."""
    theirs = client.run(versions)
    if not theirs:
        raise ScenarioError(f"the Dask scheduler at {address} has no workers", "--executor")
    mine = versions()
    for worker, v in sorted(theirs.items()):
        differ = [f"{k} {v.get(k)} (here {mine[k]})" for k in mine if v.get(k) != mine[k]]
        if differ:
            raise ScenarioError(f"worker {worker} runs {', '.join(differ)}: install the same versions "
                                f"on every worker", "--executor")

