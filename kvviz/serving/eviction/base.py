"""The interface every eviction policy implements, and the registry (one file per policy,
registered by one `@register("name")` line; the package's __init__ imports each file).

A policy keeps one tier's resident keys (block ids, session ids, object ids: any hashable) in
its order and names a victim on request; the caller (a mechanism's adapter) does all moving,
sizing and accounting, and removes the victim itself. The calls:

- `insert(key)`: key enters the tier (it is not resident);
- `touch(key)`: a use of a resident key (for a policy that reads next uses, also: its next use
  changed, told wherever it is resident);
- `remove(key)`: key leaves the tier (evicted, moved or dropped);
- `victim(pinned)`: a resident key not in `pinned` (anything supporting `in`), or None when
  every resident key is pinned. Pins only grow between two `unpin` calls, so a policy may set
  pinned keys aside until then;
- `unpin()`: pins may have been released (a request or a session ended).

Facts a policy declares it needs (`needs`), passed to its constructor by name:
- "next_use": a dict key -> its next use (a position or a time, larger = later; the caller
  keeps it current and `touch`es the key when it changes): the policy is clairvoyant. A
  caller that runs one treats the entering key as a candidate too (Belady's MIN with bypass),
  unless its own documented semantics say otherwise;
- "parent": a dict key -> the key before it in the request that first asked for it (None for a
  first block).
A mechanism that cannot give a fact refuses the policy by name (`make(..., where=...)`).
"""
from __future__ import annotations

from collections.abc import Callable, Container, Hashable, Iterator, Mapping
from heapq import heappop, heappush
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)  # a policy's keys: block ids, session ids, object ids
P = TypeVar("P", bound="type[Policy[Any]]")

EVICTION_POLICIES: dict[str, type[Policy[Any]]] = {}
NO_PINS: frozenset[Any] = frozenset()
FACTS = ("next_use", "parent")


class PolicyRefused(ValueError):
    """A policy unknown, or needing a fact the mechanism running it cannot give."""


def register(name: str) -> Callable[[P], P]:
    """Class decorator: the policy is known by `name` everywhere a policy is chosen."""
    def deco(cls: P) -> P:
        cls.name = name
        EVICTION_POLICIES[name] = cls
        return cls
    return deco


def ignore(key: object) -> None:
    """A call that changes nothing (a use, for a policy uses do not reorder)."""


class Policy(Generic[K]):
    name = "?"
    description = ""             # the one line the CLI and the scenario reference show
    object_description: str | None = None  # the object replay's line, if not `description` with objects for blocks
    needs: frozenset[str] = frozenset()  # of FACTS
    settings: frozenset[str] = frozenset()  # the options its constructor takes (`make(settings=...)`)
    ignores_pins = False         # may evict a pinned key (the clairvoyant reference does)

    @property
    def clairvoyant(self) -> bool:
        return "next_use" in self.needs

    # the engines' name for it: told of a new next use wherever the key is resident
    reindex = clairvoyant

    def __init__(self, **facts: Any) -> None:
        pass

    def insert(self, key: K) -> None:
        raise NotImplementedError

    def touch(self, key: K) -> None:
        raise NotImplementedError

    def remove(self, key: K) -> None:
        raise NotImplementedError

    def victim(self, pinned: Container[K]) -> K | None:
        raise NotImplementedError

    def unpin(self) -> None:
        pass

    def victim_after(self, pinned: Container[K], after: float) -> K | None:
        """A victim whose next use is later than `after`, or None (making room to bring back a
        key used at `after`: evicting one needed sooner gains nothing). Clairvoyant policies only."""
        raise PolicyRefused(f"eviction policy {self.name!r} does not know next uses")


def needs(name: str) -> frozenset[str]:
    return policy_class(name).needs


def policy_class(name: str) -> type[Policy[Any]]:
    cls = EVICTION_POLICIES.get(name)
    if cls is None:
        raise PolicyRefused(f"unknown eviction policy {name!r} (one of: {', '.join(EVICTION_POLICIES)})")
    return cls


def make(name: str, where: str = "", settings: Mapping[str, Any] | None = None, **facts: Any) -> Policy[Any]:
    """A fresh policy `name` given the facts the caller has (None or absent: it cannot give it);
    refused by name when it needs one the caller (`where`) cannot give. `settings`: options the
    policy documents (its `settings`), passed to it by name; one it does not take is refused."""
    cls = policy_class(name)
    missing = [f for f in sorted(cls.needs) if facts.get(f) is None]
    if missing:
        raise PolicyRefused(f"eviction policy {name!r} needs {', '.join(missing)}, which {where or 'this caller'} "
                            f"cannot give")
    unknown = sorted(set(settings or ()) - cls.settings)
    if unknown:
        raise PolicyRefused(f"eviction policy {name!r} has no setting {', '.join(unknown)}")
    return cls(**{f: facts[f] for f in cls.needs}, **(settings or {}))


def descriptions() -> dict[str, str]:
    """Every registered policy's one line, in registration order."""
    return {n: c.description for n, c in EVICTION_POLICIES.items()}


class _Descriptions(Mapping[str, str]):
    """name -> description of every policy registered so far: a live view of the registry."""

    def __getitem__(self, name: str) -> str:
        return EVICTION_POLICIES[name].description

    def __iter__(self) -> Iterator[str]:
        return iter(EVICTION_POLICIES)

    def __len__(self) -> int:
        return len(EVICTION_POLICIES)

    def __repr__(self) -> str:
        return repr(descriptions())


DESCRIPTIONS = _Descriptions()


class HeapPolicy(Policy[K]):
    """A lazy min-heap of (key, ...) entries: stale entries (`stale`) are dropped when they
    reach the top; pinned ones are set aside until `unpin`."""

    def __init__(self, **facts: Any) -> None:
        self.heap: list[tuple[Any, K]] = []  # (the policy's order: a number or a tuple, key)
        self.resident: set[K] = set()
        self.held: list[tuple[Any, K]] = []  # entries of pinned keys, back on the heap when the pins go

    def remove(self, b: K) -> None:
        self.resident.discard(b)

    def unpin(self) -> None:
        for e in self.held:
            heappush(self.heap, e)
        self.held.clear()

    def stale(self, key: Any, b: K) -> bool:
        """Whether the entry (key, b) no longer stands for b (the policy's rule)."""
        raise NotImplementedError

    def victim(self, pinned: Container[K], below: Any = None) -> K | None:
        """The top entry that is not stale and not pinned, if its order is below `below` (given),
        else None;
        stale entries go, pinned ones are set aside until `unpin` (pins only grow until then)."""
        heap, held, stale = self.heap, self.held, self.stale
        while heap:
            key, b = heap[0]
            if stale(key, b):
                heappop(heap)
            elif below is not None and key >= below:
                return None
            elif b in pinned:
                held.append(heappop(heap))
            else:
                return b
        return None
