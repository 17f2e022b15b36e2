"""The compiled prefix LRU (`_prefix_lru.pyx`, built by setup.py at install, or in place by
`make native`), or None where it cannot run: not built (no C compiler), not loadable, or built
from other sources than the ones beside it (a checkout moved on, a build copied in). Then `kvviz
replay --prefix` runs LRU as before (stack distances in numpy, the prefix_cache engine below the
longest request), the same counts, slower, and `why_not()` is the note it prints.

Imports nothing beyond the standard library (and the requests' source hash, the one setup.py
compiles in), so the lean replay path stays free of numpy."""
from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np
    from typing_extensions import Buffer

from ...requests.native import SUFFIXES, source_hash

HERE = Path(__file__).parent
REBUILD = "`make native` rebuilds it"
FALLBACK = "LRU runs in numpy (stack distances) and the Python engine instead, slower"


class PrefixLru(Protocol):
    """The compiled module's functions (their interface: _prefix_lru.pyi)."""
    def id_range(self, ids: Buffer | np.ndarray) -> tuple[int, int]: ...
    def distinct(self, ids: Buffer | np.ndarray, k: int) -> int: ...
    def lru_counts(self, ids: Buffer | np.ndarray, counts: Buffer | np.ndarray, capacities: Iterable[int | None], pin: bool, k: int
                   ) -> list[tuple[int, int]]: ...


@cache
def _load() -> tuple[PrefixLru | None, str]:
    """(the module, "") where it can run, else (None, why not)."""
    try:
        from . import _prefix_lru
    except ImportError as e:
        if "_prefix_lru" in str(e):
            return None, f"the compiled prefix LRU is not built (`make setup` builds it; it needs a C compiler): {FALLBACK}"
        return None, f"the compiled prefix LRU does not load ({e}; {REBUILD}): {FALLBACK}"
    except Exception as e:  # a module's init can raise anything
        return None, f"the compiled prefix LRU does not load ({type(e).__name__}: {e}; {REBUILD}): {FALLBACK}"
    if any(p.suffix in SUFFIXES for p in HERE.iterdir()) and getattr(_prefix_lru, "SOURCE_HASH", "") != source_hash(HERE):
        return None, f"the compiled prefix LRU was built from other sources than the ones beside it ({REBUILD}): {FALLBACK}"
    return _prefix_lru, ""


def prefix_lru() -> PrefixLru | None:
    """The compiled module (lru_counts, id_range, distinct), or None."""
    return _load()[0]


def why_not() -> str:
    """Why the compiled prefix LRU does not run, in one line; "" when it does."""
    return _load()[1]
