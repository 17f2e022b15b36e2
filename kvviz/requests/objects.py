"""A request trace as object requests, what a cache replay reads: every reader of this package
can give one (CSV, txt, oracleGeneral, and the JSONL traces as KV blocks)."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np


@dataclass(frozen=True)
class Requests:
    """A request trace, in request order: dense object ids (0..objects-1) and bytes per request;
    times (seconds) where the trace has them. Held as numpy arrays (lists are accepted)."""
    ids: np.ndarray
    sizes: np.ndarray
    times: np.ndarray | None = None
    source: str = field(default="", compare=False)  # what was read, for a status line

    def __post_init__(self) -> None:
        object.__setattr__(self, "ids", np.asarray(self.ids, dtype=np.int64))
        object.__setattr__(self, "sizes", np.asarray(self.sizes, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.ids)

    # The Python kernels loop fastest over lists; made once per trace.
    @cached_property
    def id_list(self) -> list[int]:
        ids: list[int] = self.ids.tolist()
        return ids

    @cached_property
    def size_list(self) -> list[int]:
        sizes: list[int] = self.sizes.tolist()
        return sizes

    @cached_property
    def objects(self) -> int:
        return int(self.ids.max()) + 1 if len(self.ids) else 0

    @cached_property
    def footprint(self) -> int:
        """Bytes of every distinct object at its largest size: a cache this big never evicts."""
        if not len(self.ids):
            return 0
        biggest = np.zeros(self.objects, dtype=np.int64)
        np.maximum.at(biggest, self.ids, self.sizes)
        return int(biggest.sum())

    @cached_property
    def bytes(self) -> int:
        return int(self.sizes.sum())
