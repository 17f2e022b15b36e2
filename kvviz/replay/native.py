"""The compiled pass `kvviz replay --prefix` counts lru and fifo with: the serving core's
compiled block cache (kvviz/serving/native/_block_cache.pyx: `prefix_counts`, one call per
trace, every request looked up, placed and finished in C), the cache `kvviz run` uses, so the two
interfaces share one compiled lru and fifo (serving/native/policies.pxi). None where that cache
cannot run (not built, stale, KVVIZ_ENGINE=python): LRU is then counted by stack distances in
numpy and the Python engine, the same counts, slower, and `why_not()` is the note printed.

Imports nothing beyond the standard library and the serving core's loader, so the lean replay
path stays free of numpy."""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol, cast

from ..serving.native import block_cache

if TYPE_CHECKING:
    import numpy as np
    from typing_extensions import Buffer

FALLBACK = "LRU runs in numpy (stack distances) and the Python engine instead, slower"


class PrefixPass(Protocol):
    """What the replay calls of the compiled block cache's module."""
    def id_range(self, ids: Buffer | np.ndarray) -> tuple[int, int]: ...
    def distinct(self, ids: Buffer | np.ndarray, k: int) -> int: ...
    def prefix_counts(self, ids: Buffer | np.ndarray, counts: Buffer | np.ndarray, capacities: Iterable[int | None],
                      pin: bool, k: int, policy: str = "lru") -> list[tuple[int, int]]: ...


def _load() -> tuple[PrefixPass | None, str]:
    """(the module, "") where it can run, else (None, why not)."""
    module, why = block_cache()
    if module is None:
        return None, f"{why}: {FALLBACK}"
    return cast(PrefixPass, module), ""


def prefix_pass() -> PrefixPass | None:
    """The compiled module (prefix_counts, id_range, distinct), or None."""
    return _load()[0]


def why_not() -> str:
    """Why the compiled pass does not run, in one line; "" when it does."""
    return _load()[1]
