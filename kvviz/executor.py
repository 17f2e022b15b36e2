"""One seam for independent work: map a pure function over inputs, results keyed by index.

By default a local process pool (spawned, so no Qt or thread state is forked into workers);
any `concurrent.futures.Executor` can be passed instead. `open_executor("tcp://HOST:PORT")`
connects to a running Dask scheduler (`kvviz[cluster]`, imported only then) and gives its
`client.get_executor()`, after checking that every worker runs what this process runs (kvviz,
Python, numpy, pydantic: a run's result is only comparable if they do). KVVIZ_EXECUTOR sets the
default. Results stream to `on_result(index, value)` as they arrive, and `on_result` may raise
(a Cancel button) to stop: pending calls are cancelled and the pool ends.
"""
from __future__ import annotations

import multiprocessing
import os
import platform
from concurrent.futures import FIRST_COMPLETED, Executor, ProcessPoolExecutor, wait
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

from .errors import ScenarioError


def workers() -> int:
    """Processes for independent runs: KVVIZ_WORKERS (the kvviz and kvviz-gui commands set it
    to the number of cores; a library caller opts in, since spawned processes re-import the
    caller's main module), and one inside a pool worker."""
    env = os.environ.get("KVVIZ_WORKERS", "")
    if multiprocessing.current_process().daemon or not env.isdigit():
        return 1
    return max(1, int(env))


def _ignore_sigint():
    """Workers leave Ctrl-C to the parent, which cancels and exits cleanly."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def local_pool(n: int) -> ProcessPoolExecutor:
    return ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"), initializer=_ignore_sigint)


def map_indexed(fn: Callable, items: Sequence, executor: Executor | None = None, n_workers: int | None = None,
                on_result: Callable[[int, Any], None] | None = None) -> list:
    """[fn(x) for x in items], computed by `executor` (or a local pool of `n_workers`, default
    `workers()`; in this process when that is 1). `on_result(i, fn(items[i]))` is called in
    completion order, in this thread."""
    items = list(items)
    out: list = [None] * len(items)
    n = n_workers if n_workers is not None else workers()
    if executor is None and (n <= 1 or len(items) <= 1):
        for i, x in enumerate(items):
            out[i] = fn(x)
            if on_result:
                on_result(i, out[i])
        return out
    own = executor is None
    pool = local_pool(min(n, len(items))) if own else executor
    futures = {pool.submit(fn, x): i for i, x in enumerate(items)}
    try:
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in sorted(done, key=futures.get):
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
    return out


def is_remote(executor: Executor | None) -> bool:
    """Whether calls may run on other machines (anything but a local process pool or none), so
    that their inputs must carry their data rather than name a local file."""
    return executor is not None and not isinstance(executor, ProcessPoolExecutor)


def share(executor: Executor | None, value):
    """`value` as an argument of many calls on `executor`: a Dask cluster gets it once per worker
    (scattered; the calls then name it), any other executor with each call."""
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
    with _dask_client(spec, timeout_s) as client:
        yield client.get_executor()


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
    with _dask_client(spec, timeout_s) as client:
        n = len(client.scheduler_info().get("workers", {}))
    return f"{spec}: {n} worker{'s' * (n != 1)}, same kvviz, Python, numpy and pydantic"


@contextmanager
def _dask_client(address: str, timeout_s: float | None):
    if "://" not in address:
        raise ScenarioError(f"unknown executor {address!r}: give local or a Dask scheduler address "
                            f"such as tcp://10.0.0.5:8786", "--executor")
    if timeout_s is None:
        try:
            timeout_s = float(os.environ.get("KVVIZ_CONNECT_TIMEOUT_S", CONNECT_TIMEOUT_S))
        except ValueError:
            timeout_s = CONNECT_TIMEOUT_S
    try:
        import distributed
    except ImportError:
        raise ScenarioError(f"{address} is a Dask scheduler, and Dask is not installed: "
                            f"pip install 'kvviz[cluster]'", "--executor") from None
    try:
        client = distributed.Client(address, timeout=f"{timeout_s}s", set_as_default=False)
    except (OSError, TimeoutError) as e:
        raise ScenarioError(f"cannot connect to the Dask scheduler at {address} within {timeout_s:g} s "
                            f"({type(e).__name__}: {e})", "--executor") from None
    try:
        check_workers(client, address)
        yield client
    finally:
        client.close()


def check_workers(client, address: str) -> None:
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

