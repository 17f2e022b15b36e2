"""The cyclic garbage collector paused around work that makes many objects and no cycles: their
sheer number sets off collections that walk every object the process holds (reference counting
still frees them as they die)."""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """The collector off for the block (as it was after)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
