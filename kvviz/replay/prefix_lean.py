"""`kvviz replay TRACE --prefix --policy lru` on a Mooncake JSONL trace in one compiled scan and
one compiled pass per capacity, without numpy, the scenario models or the prefix_cache engine:
the process starts, reads and counts in the time the plain Python loop takes to start
(benchmarks/bench_replay_prefix.py --versus). The same counts as kvviz.replay.prefix's
prefix_replay (both run the compiled block cache's prefix_counts on the same ids; a test holds
the CLI's output equal either way).

It answers only where it is sure to equal the full path, else None (and the full path runs):
the compiled scanner and block cache built and current; the file, as bytes, in the scanner's
grammar with every record's ids agreeing with its input_length and the times in order (the
strict reader's checks: kvviz.requests.native.scanned); ids non-negative and dense (as
prefix.block_ids uses them as they are); capacities given as numbers, shares or inf (`auto`
takes the full path: numpy's geomspace picks its points)."""
from __future__ import annotations

from array import array
from dataclasses import dataclass
from pathlib import Path

from ..io import read_capped
from ..requests.jsonl import MOONCAKE, MOONCAKE_BLOCK_TOKENS
from ..requests.native import scanned
from . import native
from .prefix_result import BLOCK_CACHE, PrefixResult


@dataclass(frozen=True)
class LeanTrace:
    """What the CLI's summary line reads of a PromptRequests: requests, their ids, the format."""
    lines: array[int]   # array('q'): each request's line
    hashes: array[int]  # array('q'): every request's hash ids, one after another
    distinct: int
    id_space: int   # every id is below it
    format: str = MOONCAKE
    block_tokens: int = MOONCAKE_BLOCK_TOKENS

    def __len__(self) -> int:
        return len(self.lines)


def read(path: str | Path) -> tuple[LeanTrace, array[int]] | None:
    """(the trace, its ids per request as array('q')), or None: the full path reads it."""
    compiled = native.prefix_pass()
    if compiled is None or str(path).lower().endswith(".zst"):
        return None
    got = scanned(read_capped(path, "trace file"))
    if got is None or not len(got[0]):
        return None
    lines, counts, ids = got[0], got[4], got[5]
    lo, hi = compiled.id_range(ids)
    if lo < 0 or hi >= 4 * len(ids) + 1024:  # prefix._dense: other ids are renumbered there, in numpy
        return None
    return LeanTrace(lines, ids, compiled.distinct(ids, hi + 1), hi + 1), counts


def lru(trace: LeanTrace, counts: array[int], capacities: list[int | None], pin: bool) -> list[PrefixResult]:
    """Prefix LRU at each capacity (blocks; None: infinite), as prefix_replay gives it."""
    ids = trace.hashes
    compiled = native.prefix_pass()
    assert compiled is not None  # read() gave the trace: the compiled pass can run
    got = compiled.prefix_counts(ids, counts, capacities, pin, trace.id_space)
    return [PrefixResult("lru", cap, len(trace), len(ids), hits, hit_requests, BLOCK_CACHE, pin)
            for cap, (hits, hit_requests) in zip(capacities, got)]
