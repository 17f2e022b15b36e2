# The compiled prefix LRU's interface (_prefix_lru.pyx), for the type checker.
from collections.abc import Iterable

import numpy as np
from typing_extensions import Buffer

Ids = Buffer | np.ndarray  # int64: array('q') on the lean path, numpy arrays elsewhere

SOURCE_HASH: str
MAX_INDEX: int

def id_range(ids: Ids) -> tuple[int, int]: ...
def distinct(ids: Ids, k: int) -> int: ...
def lru_counts(ids: Ids, counts: Ids, capacities: Iterable[int | None], pin: bool, k: int
               ) -> list[tuple[int, int]]: ...
