"""One seam for independent work: map a pure function over inputs, results keyed by index.

By default a local process pool (spawned, so no Qt or thread state is forked into workers);
any `concurrent.futures.Executor` can be passed instead (Dask's `client.get_executor()` runs
the same calls on a cluster). Results stream to `on_result(index, value)` as they arrive, and
`on_result` may raise (a Cancel button) to stop: pending calls are cancelled and the pool ends.
"""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, Executor, ProcessPoolExecutor, wait
from typing import Any, Callable, Sequence


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
