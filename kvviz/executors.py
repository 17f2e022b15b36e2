"""Where independent runs execute: a local process pool, or a Dask cluster (`kvviz[cluster]`).

Both are `concurrent.futures.Executor`s, so a caller submits pure functions and streams the
results as they complete, whichever ran them. `open_executor("local")` is the default;
`tcp://HOST:PORT` connects to a running Dask scheduler (imported only then). Workers must run
what this process runs (kvviz, Python, numpy, pydantic): a run's result is only comparable if
they do, so a mismatch is refused on connect. KVVIZ_EXECUTOR sets the default.
"""
from __future__ import annotations

import multiprocessing
import os
import platform
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import contextmanager
from typing import Iterator

from .errors import ScenarioError

CONNECT_TIMEOUT_S = 10.0  # KVVIZ_CONNECT_TIMEOUT_S overrides it


def _ignore_sigint():
    """Workers leave Ctrl-C to the parent, which cancels the grid and exits cleanly."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def versions() -> dict[str, str]:
    """What must match between this process and every worker."""
    import numpy
    import pydantic

    from . import __version__
    return {"kvviz": __version__, "python": platform.python_version(), "numpy": numpy.__version__,
            "pydantic": pydantic.__version__}


def default_spec() -> str:
    return os.environ.get("KVVIZ_EXECUTOR", "").strip() or "local"


@contextmanager
def open_executor(spec: str | None = None, workers: int | None = None,
                  timeout_s: float | None = None) -> Iterator[Executor]:
    """An executor for `spec` ("local" or a Dask scheduler address), closed on exit."""
    spec = (spec or default_spec()).strip()
    if timeout_s is None:
        try:
            timeout_s = float(os.environ.get("KVVIZ_CONNECT_TIMEOUT_S", CONNECT_TIMEOUT_S))
        except ValueError:
            timeout_s = CONNECT_TIMEOUT_S
    if spec == "local":
        n = workers or min(os.cpu_count() or 1, 8)
        with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=_ignore_sigint) as pool:
            yield pool
        return
    if "://" not in spec:
        raise ScenarioError(f"unknown executor {spec!r}: give local or a Dask scheduler address "
                            f"such as tcp://10.0.0.5:8786", "--executor")
    with _dask_client(spec, timeout_s) as client:
        yield client.get_executor()


@contextmanager
def _dask_client(address: str, timeout_s: float):
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
