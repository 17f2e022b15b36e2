"""An instance's block cache, and the few things the cluster asks of it beyond the serving core's
seam (kv_source.py): how long a prefix of a request it holds (the router's match), blocks
arriving from a peer or the pool (placed, their transfer joining the request's prefill), and
its counts.

PROVISIONAL (until the serving core's tiered block cache lands): one HBM tier of whole blocks,
LRU (kvviz.serving.eviction), a request's blocks pinned while it runs; a hit is the longest
resident prefix at admission; nothing to load.
"""
from __future__ import annotations

from ...serving.eviction import make
from ...serving.kv_source import FIRST, HIT_HBM


class SimpleStore:
    stores = False

    def __init__(self, inst, cluster):
        self.run, self.loop = inst, cluster.loop
        self.ids, self.off, self.tok = cluster.ids, cluster.off, cluster.tok
        self.cap = cluster.hbm_blocks
        self.ev = make(cluster.sc.instance.eviction, "the cluster", parent=cluster.parent)
        self.where: set = set()
        self.pins: dict = {}
        self.held: dict = {}
        n = len(cluster.work)
        self.hits = [0] * n
        self.hit_blocks, self.hit_tokens = [0], [0]
        self.booked: list = []

    def arrived(self, j):
        pass

    def admit(self, j, hbm_hit):
        s, e = self.off[j], self.off[j + 1]
        ids, tok, where = self.ids, self.tok, self.where
        p = s
        while p < e and ids[p] in where:
            self.hit_tokens[0] += tok[p]
            p += 1
        self.hits[j] = h = p - s
        self.hit_blocks[0] += h
        held = self.held.setdefault(j, [])
        for i in range(s, e):
            b = ids[i]
            self.pins[b] = self.pins.get(b, 0) + 1
            held.append(b)
            if b in where:
                self.ev.touch(b)
            else:
                self.place(b)
        run = self.run
        total = run.keep[j] + run.inn[j]
        kept = sum(tok[s:s + h])
        run.keep[j], run.inn[j] = kept, total - kept
        return (HIT_HBM if h else FIRST), 0, 0, 0

    def place(self, b):
        if len(self.where) >= self.cap:
            v = self.ev.victim(self.pins)
            if v is None:
                return
            self.ev.remove(v)
            self.where.discard(v)
        self.ev.insert(b)
        self.where.add(b)

    def load(self, jobs, a, b, ready, S, comp_ns):
        L = self.run.cluster.layers
        c = int(comp_ns / L)
        pe = S + L * c
        for start, t1 in self.booked:  # layer i computes once piece i of every transfer is in
            pe = max(pe, int(start + (t1 - start) / L) + L * c, t1 + c)
        self.booked.clear()
        return pe, pe - S - L * c, None

    def finished(self, j):
        for b in self.held.pop(j, ()):
            n = self.pins[b] - 1
            if n:
                self.pins[b] = n
            else:
                del self.pins[b]
        self.ev.unpin()


def make_store(inst, cluster):
    return SimpleStore(inst, cluster)


def resident_prefix(store, j: int) -> int:
    ids, where = store.ids, store.where
    s, e = store.off[j], store.off[j + 1]
    p = s
    while p < e and ids[p] in where:
        p += 1
    return p - s


def resident(store):
    """The instance's resident blocks, as a container (`in`)."""
    return store.where


def inject(store, j: int, first: int, last: int) -> None:
    """Blocks first..last-1 of request j arrive from a peer or the pool: placed in HBM now (their
    transfer is booked; the request's prefill waits for it, `wait_for`)."""
    ids, s = store.ids, store.off[j]
    for i in range(s + first, s + last):
        if ids[i] not in store.where:
            store.place(ids[i])


def wait_for(store, t0: int, t1: int) -> None:
    """The admitted request's prefill iteration also waits for a transfer streaming from t0 to
    t1, layer by layer."""
    store.booked.append((t0, t1))


def counts(store) -> tuple[list, list]:
    """(hit blocks, hit tokens) per tier, top first."""
    return store.hit_blocks, store.hit_tokens
