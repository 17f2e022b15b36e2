"""The interface every router implements, and the registry (one file per router, registered by
one `@register("name")` line; the package's __init__ imports each file), as the serving core's
eviction policies are (kvviz/serving/eviction/base.py).

A router sees what a real router sees, through the cluster's `View` (view.py), never an
instance's internals:
- `route(j)`: request j has arrived; the answer is a `Decision`: the instance that prefills it,
  and (global_cache_aware only) the peer to fetch its longest cached prefix from, and how many
  blocks. The cluster applies it: the fetch is a transfer over the two instances' links.
- `estimate_ns(j, d)`: the router's own estimate of j's TTFT under decision d (queue +
  prefill + transfer), read by SLO admission (`routing.ttft_slo_s`).
- `routed(j, d)`: j was sent (not rejected): a router with memory (round_robin's turn,
  approximate_prefix's index) updates it here.

Ties between instances go to the lowest index, so every run is deterministic.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple, Protocol, TypeVar


class Routing(Protocol):
    """The `routing` settings a router reads (model.py's Routing)."""
    @property
    def seed(self) -> int: ...
    @property
    def balancing_threshold(self) -> float: ...
    @property
    def prefix_weight(self) -> float: ...
    @property
    def kv_weight(self) -> float: ...
    @property
    def queue_weight(self) -> float: ...
    @property
    def approx_index_blocks(self) -> int: ...


class View(Protocol):
    """What a router may look at (../view.py's View, which says what each call means)."""
    @property
    def instances(self) -> int: ...
    def blocks_of(self, j: int) -> int: ...
    def block_ids(self, j: int) -> list[int]: ...
    def match(self, k: int, j: int) -> int: ...
    def matches(self, j: int) -> list[int]: ...
    def queue_ns(self, k: int) -> float: ...
    def queues_ns(self) -> list[float]: ...
    def queue_len(self, k: int) -> int: ...
    def kv_utilisation(self, k: int) -> float: ...
    def prefill_ns(self, j: int, held: int) -> float: ...
    def fetch_ns(self, j: int, src: int, dst: int, have: int, best: int) -> float: ...

ROUTERS: dict[str, type[Router]] = {}
R = TypeVar("R", bound="type[Router]")


class RouterRefused(ValueError):
    """An unknown router."""


def register(name: str) -> Callable[[R], R]:
    """Class decorator: the router is known by `name` wherever a router is chosen."""
    def deco(cls: R) -> R:
        cls.name = name
        ROUTERS[name] = cls
        return cls
    return deco


class Decision(NamedTuple):  # a named tuple, not a frozen dataclass: made once per request, half the time
    instance: int              # the (prefill) instance that serves the request
    fetch_from: int = -1       # a peer instance to fetch the prefix from (-1: none)
    fetch_blocks: int = 0      # leading blocks it will hold after the fetch (its own + fetched)
    local_blocks: int = 0      # leading blocks `instance` held itself at routing


class Router:
    name = "?"
    description = ""  # the one line the scenario reference and messages show

    def __init__(self, view: View, settings: Routing) -> None:
        self.view, self.settings = view, settings

    def route(self, j: int) -> Decision:
        raise NotImplementedError

    def estimate_ns(self, j: int, d: Decision) -> float:
        """Queue time + prefill of what `d.instance` does not hold (+ the fetch): Mooncake's
        TTFT estimate, the same for every router so admission judges them alike."""
        v = self.view
        held = max(d.local_blocks, d.fetch_blocks)
        t = v.queue_ns(d.instance) + v.prefill_ns(j, held)
        if d.fetch_from >= 0:
            t += v.fetch_ns(j, d.fetch_from, d.instance, d.local_blocks, d.fetch_blocks)
        return t

    def routed(self, j: int, d: Decision) -> None:
        pass


def names() -> tuple[str, ...]:
    return tuple(ROUTERS)


def descriptions() -> dict[str, str]:
    return {n: c.description for n, c in ROUTERS.items()}


def make(name: str, view: View, settings: Routing) -> Router:
    cls = ROUTERS.get(name)
    if cls is None:
        raise RouterRefused(f"unknown router {name!r} (one of: {', '.join(ROUTERS)})")
    return cls(view, settings)


def argmin(values: Iterable[float]) -> int:
    """The index of the smallest value, the lowest index on ties."""
    best: float | None = None
    at = 0
    for i, v in enumerate(values):
        if best is None or v < best:
            best, at = v, i
    return at
