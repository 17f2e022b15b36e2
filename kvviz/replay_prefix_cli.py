"""`kvviz replay TRACE --prefix`: a Mooncake, Qwen/Bailian or plain request trace through one
cache of whole blocks with prefix hits (semantics: kvviz.replay.prefix). Capacities in blocks."""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from array import array
from pathlib import Path
from typing import TYPE_CHECKING

from .cli_flags import MAX_CAPACITIES
from .errors import ScenarioError
from .format import printable
from .requests.blocks import DEFAULT_KV_BYTES_PER_TOKEN
from .requests.formats import TRACE_FORMATS, claimant, names

if TYPE_CHECKING:
    from .replay.prefix_lean import LeanTrace
    from .requests.prompts import PromptRequests

AUTO_POINTS = 12
# The compiled caches hold a capacity in an int64 (a larger one overflowed there, a traceback);
# any capacity past the trace's distinct blocks is infinite in effect, and `inf` says so
MAX_BLOCK_CAPACITY = 2 ** 62


def add_prefix_args(rp: argparse.ArgumentParser) -> None:
    rp.add_argument("--prefix", action="store_true",
                    help="block-level prefix caching (a Mooncake, Qwen/Bailian or plain trace with hash_ids, or a "
                         "RAGPulse trace: one block per chunk, kvviz.requests.ragpulse): "
                         "requests in file order; hit = the longest resident prefix of hash_ids; then every block "
                         "in order is touched if resident or inserted if not, evicting whole blocks (lru: least "
                         "recently touched; fifo: earliest inserted; leaf_lru: least recently touched with no "
                         "child resident; belady: next use farthest in the stream, the entering block included, "
                         "pins ignored, the reference). The single-tier case of a prefix_cache "
                         "scenario (kvviz run, cache.partial_block = true): the same counts. Capacities in "
                         "blocks: N, N%% of the distinct blocks, inf, or auto (12 from 0.1%% of them to all, and inf). "
                         "Prints block_hit_ratio and request_hit_ratio per policy and capacity")
    rp.add_argument("--pin-running", action=argparse.BooleanOptionalAction, default=None,
                    help="with --prefix: a request holds the blocks it has reached, so no eviction takes them (the "
                         "default, as vLLM holds a running request's blocks; a request longer than the capacity "
                         "keeps its first blocks); --no-pin-running: nothing is held, a plain cache on the stream "
                         "of blocks. The scenario's cache.pin_running, same default")
    rp.add_argument("--unit", choices=("bytes", "blocks"), default=None,
                    help="what --capacity/--capacities count: bytes (default), blocks (with --prefix, its default)")


def parse_block_capacity(text: str, distinct: int | None, source: str) -> int | None:
    """`N` blocks, `N%` of the trace's distinct blocks, or `inf` (None)."""
    t = text.strip().lower()
    if t in ("inf", "infinite", "infinity"):
        return None
    m = re.fullmatch(r"([0-9]+)|([0-9]*\.?[0-9]+)%", t)
    if not m:
        raise ScenarioError(f"expected a number of blocks (e.g. 1000), a share of the distinct blocks (10%) "
                            f"or inf, got {text!r}", source)
    share = float(m.group(2)) if m.group(2) else None
    if m.group(1):
        value = int(m.group(1))
    else:
        value = 1 if distinct is None or share is None or share == math.inf else round(distinct * share / 100)
    if value > MAX_BLOCK_CAPACITY or share == math.inf:  # "1e400%" is no number; 20 digits overflow int64
        raise ScenarioError(f"a capacity must be at most {MAX_BLOCK_CAPACITY:,} blocks (inf: no limit; got "
                            f"{text!r})", source)
    if value < 1:
        raise ScenarioError(f"a capacity must be at least 1 block (got {text!r})", source)
    return value


def block_capacities(args: argparse.Namespace, distinct: int | None) -> list[int | None]:
    """--capacity and --capacities as blocks; `distinct` None: only the form is checked."""
    caps: list[int | None] = []
    if args.capacity:
        caps.append(parse_block_capacity(args.capacity, distinct, "--capacity"))
    if args.capacities:
        if args.capacities.strip().lower() == "auto":
            if distinct is not None:
                import numpy as np
                pts = np.geomspace(max(distinct / 1000, 1), max(distinct, 1), AUTO_POINTS)
                caps += sorted({max(1, int(round(c))) for c in pts}) + [None]
        else:
            entries = args.capacities.split(",")
            if len(entries) > MAX_CAPACITIES:  # each is a replay of the whole stream (FIFO, Belady)
                raise ScenarioError(f"at most {MAX_CAPACITIES:,} capacities (got {len(entries):,})", "--capacities")
            if any(not e.strip() for e in entries):
                raise ScenarioError(f"an empty entry in {args.capacities!r}", "--capacities")
            caps += [parse_block_capacity(e, distinct, "--capacities") for e in entries]
    return caps


def _refuse_other_options(args: argparse.Namespace) -> None:
    """Options of the object replay that mean nothing here: named, not silently ignored."""
    if args.unit == "bytes":
        raise ScenarioError("--prefix counts capacities in blocks (--unit blocks)", "--unit")
    given = [name for name, v in (("--engine", args.engine != "auto"), ("--sample-rate", args.sample_rate),
                                  ("--columns", args.columns), ("--delimiter", args.delimiter),
                                  ("--header", args.header), ("--executor", args.executor),
                                  ("--workers", args.workers),
                                  ("--kv-bytes-per-token", args.kv_bytes_per_token != DEFAULT_KV_BYTES_PER_TOKEN))
             if v]
    if given:
        raise ScenarioError(f"{', '.join(given)} do(es) not apply to --prefix", "kvviz replay --prefix")
    if args.format not in names(prompts=True):
        raise ScenarioError(f"--prefix reads request traces with hash_ids: --format one of "
                            f"{', '.join(names(prompts=True))} (got {args.format})", "--format")


def _read(path: str, fmt: str) -> PromptRequests:
    """The trace's prompts by the format named, or (auto) the format that claims it, else
    Mooncake, Qwen/Bailian or plain by content."""
    from .requests.formats.known import prompts_by_content
    src = Path(path)
    f = claimant(src, "prefix") if fmt == "auto" else TRACE_FORMATS[fmt]
    if f is not None and f.prompts is not None:  # the named one has one: --format was checked
        return f.prompts(src)
    return prompts_by_content(src)


def _check_size(args: argparse.Namespace, runs: int) -> None:
    """Refuse, before the trace is read, a replay estimated beyond the memory limit: the object
    replay's estimate per block (ASSUMPTION: a block of the prefix replay costs what a request of
    the object replay does, in this one process)."""
    from .replay.size import replay_estimate
    from .requests.extent import extent
    from .size_guard import check_size
    try:
        check_size(replay_estimate(extent(args.trace), runs, 1), args.max_memory_gb, "replay")
    except ScenarioError as e:
        e.file, e.field = args.trace, None
        raise


def _policy_names(text: str) -> list[str]:
    """--policy's names, canonical. LRU alone is known without importing the registry (the lean
    path's start-up)."""
    given = [p.strip() for p in text.split(",") if p.strip()]
    if given and all(p.lower() == "lru" for p in given):
        return ["lru"] * len(given)
    from .replay.prefix import canonical
    return [canonical(p) for p in given]


def _lean(args: argparse.Namespace, names: list[str]) -> tuple[LeanTrace, array[int]] | None:
    """(trace, ids per request) read by the lean LRU path (kvviz.replay.prefix_lean), or None."""
    if names != ["lru"] or args.format not in ("auto", "mooncake") or \
            (args.capacities or "").strip().lower() == "auto":
        return None
    if args.format == "auto" and claimant(Path(args.trace), "prefix") is not None:
        return None  # a registered format's file, however Mooncake-like: its own reader's
    from .replay import prefix_lean
    return prefix_lean.read(args.trace)


def cmd_replay_prefix(args: argparse.Namespace) -> int:
    if not args.prefix:
        raise ScenarioError("blocks are the unit of the block-level replay: add --prefix", "--unit")
    _refuse_other_options(args)
    if args.list_policies:
        from .mechanisms.prefix_cache.evictors import policies
        if args.json:
            print(json.dumps({"engine": "prefix", "policies": policies()}, indent=2))
            return 0
        print("policies of kvviz replay --prefix:")
        for name, text in policies().items():
            print(f"  {name:<13}  {text}")
        return 0
    if not args.trace:
        raise ScenarioError("name a trace file (or --list-policies)", "kvviz replay", "TRACE")
    names = _policy_names(args.policy)
    if not names:
        raise ScenarioError("name at least one policy", "kvviz replay", "--policy")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:  # the same replay again: a list of thousands would run for hours
        raise ScenarioError(f"policy {', '.join(twice)} listed twice (opt and min are belady)", "--policy")
    if not args.capacity and not args.capacities:
        raise ScenarioError("give --capacity BLOCKS or --capacities A,B,C (or auto)", "kvviz replay", "--capacity")
    caps = block_capacities(args, None)  # their form, before a long read
    _check_size(args, len(names) * (len(caps) or AUTO_POINTS + 1))  # auto: its points, known once read
    pin = args.pin_running is not False
    lean = _lean(args, names)
    reqs: LeanTrace | PromptRequests
    if lean is not None:  # Mooncake, LRU: one compiled scan and pass, no numpy
        from .replay.prefix_lean import lru
        reqs, counts = lean
        distinct = reqs.distinct
        results = lru(reqs, counts, block_capacities(args, distinct), pin)
    else:
        from .replay.prefix import cache_note, distinct_blocks, lru_note, prefix_replay
        reqs = _read(args.trace, args.format)
        distinct = distinct_blocks(reqs)
        results = prefix_replay(reqs, names, block_capacities(args, distinct), pin=pin)
        for note in (lru_note(names), cache_note(names)):
            if note:
                print(f"note: {note}", file=sys.stderr)
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=2))
        return 0
    print(f"{printable(args.trace)}: {len(reqs):,} requests, {len(reqs.hashes):,} blocks of "
          f"{'at most ' * (reqs.format == 'ragpulse')}{reqs.block_tokens} tokens "
          f"({distinct:,} distinct), {reqs.format}; "
          + ("a request holds the blocks it reached (--pin-running)" if pin else "nothing held (--no-pin-running)"))
    w = max(8, *(len(str(r.capacity)) for r in results))
    p = max(7, *(len(r.policy) for r in results))
    print(f"{'policy':<{p}} {'capacity':>{w}}  block_hit_ratio  request_hit_ratio  engine")
    for r in results:
        cap = "inf" if r.capacity is None else str(r.capacity)
        print(f"{r.policy:<{p}} {cap:>{w}}  {r.block_hit_ratio:>15.6f}  {r.request_hit_ratio:>17.6f}  {r.engine}")
    sys.stdout.flush()
    return 0
