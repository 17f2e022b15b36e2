"""One tier's eviction order. Each keeps the blocks resident in its tier and names a victim on
request, skipping pinned blocks (those the request being served holds in HBM; `unpin` when it
ends); the engine then removes it.

- lru: least recently used first (a use: a hit served here, an insert, a write that finds the
  block here).
- fifo: the oldest insert first; uses do not reorder.
- leaf_lru: least recently used among blocks with no child block resident in this tier (a child:
  the block after it in the request that first asked for it), as a radix tree evicts leaves; a
  block whose only leaves are pinned cannot go.
- belady: the block whose next use lies furthest in the future (offline: the engine knows every
  block's next use from the trace), chosen among ALL the tier's blocks and the one entering
  (the engine leaves that one out when it is the farthest: engine.py step 3). It ignores pins
  (`IGNORES_PINS`): it is the clairvoyant reference every policy is compared with (`belady_gap`).
  A block's next use always follows its parent's, so children go before their parents; and
  with chained hashes the blocks a request has reached are the entering block's ancestors,
  used again before it, so belady never picks a pinned block there: a pinned variant would
  give the same counts on every hash-chained trace (the conversation trace: equal at 100 to
  20,000 blocks), so there is none.
"""
from __future__ import annotations

from collections import OrderedDict
from heapq import heappop, heappush


def ignore(b):
    pass


class Lru:
    """The order is `held` (pinned blocks set aside from its front, oldest first) followed by
    `order`: every held block precedes every block in `order`, since `order` only grows at its
    end. A use of a held block moves it to the end of `order`, as it would the whole order."""
    reindex = False  # whether a new next use must be told even where the block is not used

    def __init__(self):
        self.order: OrderedDict = OrderedDict()
        self.held: dict = {}  # set-aside pinned blocks, in order (all pinned until `unpin`)
        order, held = self.order, self.held
        move, drop = order.move_to_end, order.__delitem__
        # the OrderedDict's own methods where they can be (the engine calls these for every
        # block): insert (b is never resident then), use, remove
        self.insert = order.setdefault

        def touch(b):
            try:
                move(b)
            except KeyError:  # set aside: back at the end of the order
                del held[b]
                order[b] = None

        def remove(b):
            try:
                drop(b)
            except KeyError:
                del held[b]

        self.touch, self.remove = touch, remove

    def unpin(self):
        """Pins went: the set-aside blocks go back to the front of the order, in their order."""
        held, order = self.held, self.order
        if held:
            for b in reversed(held):
                order[b] = None
                order.move_to_end(b, last=False)
            held.clear()

    def victim(self, pinned):
        """The first block of the order not pinned. Pinned blocks met at the front are set aside
        (pins only grow until `unpin`), so each is walked once per unpin, not once per victim:
        a running request's blocks stay pinned in HBM until its last token, and walking them
        on every placement into a full HBM was most of a timed run's time."""
        order, held = self.order, self.held
        while order:
            b = next(iter(order))
            if b not in pinned:
                return b
            del order[b]
            held[b] = None
        return None


class Fifo(Lru):
    def __init__(self):
        super().__init__()
        self.touch = ignore  # uses do not reorder


class _Heap:
    """A lazy heap: stale entries are dropped when they reach the top."""

    def __init__(self):
        self.heap: list = []
        self.resident: set = set()
        self.held: list = []  # entries of pinned blocks, back on the heap when the pins go

    def remove(self, b):
        self.resident.discard(b)

    def unpin(self):
        for e in self.held:
            heappush(self.heap, e)
        self.held.clear()

    def stale(self, key, b) -> bool:
        """Whether the entry (key, b) no longer stands for b (the policy's rule)."""
        raise NotImplementedError

    def victim(self, pinned):
        """The top entry that is not stale and not pinned; stale entries go, pinned ones are set
        aside until the request ends (pins only grow within one)."""
        heap, held, stale = self.heap, self.held, self.stale
        while heap:
            key, b = heap[0]
            if stale(key, b):
                heappop(heap)
            elif b in pinned:
                held.append(heappop(heap))
            else:
                return b
        return None


class LeafLru(_Heap):
    reindex = False

    def __init__(self, parent: dict):
        super().__init__()
        self.parent = parent
        self.last: dict = {}   # block -> its last use here (a clock)
        self.kids: dict = {}   # block -> its children resident here
        self.clock = 0

    def insert(self, b):
        self.resident.add(b)
        par = self.parent.get(b)
        if par is not None:
            self.kids[par] = self.kids.get(par, 0) + 1
        self.touch(b)

    def touch(self, b):  # a use
        self.clock = c = self.clock + 1
        self.last[b] = c
        if not self.kids.get(b):
            heappush(self.heap, (c, b))

    def remove(self, b):
        self.resident.discard(b)
        del self.last[b]
        par = self.parent.get(b)
        if par is not None:
            left = self.kids[par] - 1
            self.kids[par] = left
            if not left and par in self.resident:  # a leaf again
                heappush(self.heap, (self.last[par], par))

    def stale(self, key, b) -> bool:
        """The victim is the least recently used leaf: an entry is stale once its block left, was
        used since, or is a parent again."""
        return b not in self.resident or self.last.get(b) != key or bool(self.kids.get(b))


class Belady(_Heap):
    reindex = True

    def __init__(self, next_use: dict):
        super().__init__()
        self.next_use = next_use  # block -> its next position (shared, kept by the engine)

    def insert(self, b):
        self.resident.add(b)
        heappush(self.heap, (-self.next_use[b], b))

    def touch(self, b):
        heappush(self.heap, (-self.next_use[b], b))

    def stale(self, key, b) -> bool:
        """The victim is the block used furthest ahead: an entry is stale once its block left or
        its next use moved."""
        return b not in self.resident or -key != self.next_use[b]


# Every policy, with the one line the CLI and the scenario reference show for it.
POLICIES = {
    "lru": "evicts the block used longest ago",
    "leaf_lru": "evicts the least recently used block with no child block resident (a radix tree's leaves)",
    "fifo": "evicts the block inserted earliest; a use changes nothing",
    "belady": "evicts the block whose next use is farthest, the entering one included (offline, clairvoyant; "
              "ignores pins: the reference)",
}
CLAIRVOYANT = frozenset({"belady"})  # read each block's next use from the trace; the entering block a candidate
IGNORES_PINS = frozenset({"belady"})  # may evict a block a running request holds


def make(policy: str, parent: dict, next_use: dict):
    if policy == "lru":
        return Lru()
    if policy == "fifo":
        return Fifo()
    if policy == "leaf_lru":
        return LeafLru(parent)
    return Belady(next_use)
