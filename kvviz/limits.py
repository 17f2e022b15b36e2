"""What the simulator can represent, checked where a scenario is validated, so a value the
simulation would overflow on (a time beyond int64 nanoseconds, a size beyond int64 bytes, a
rate so small its period is), or one below its 1 ns resolution, is refused with its field's
path instead of failing deep inside a run.

Bounds leave headroom below 2**63: a run adds times (arrival + think time + transfer), so a
single value may use at most 2**62 ns (about 146 years), and sizes at most 2**62 bytes.
"""
from __future__ import annotations

from collections.abc import Iterable

MAX_NS = 2 ** 62
MAX_BYTES = 2 ** 62
# A prompt or reply of more tokens than this in a trace is a corrupt value, refused at its line:
# 430x the longest context window of 2025 (10M tokens), and x the KV bytes of a token (under
# 1 MB) or a prefill time per token still far inside MAX_BYTES and MAX_NS (ours)
MAX_TOKENS = 2 ** 32
MAX_DEPTH = 32  # tables and arrays nested deeper than this are no scenario (and would recurse)

# Inputs are read whole into memory: each kind has a cap, far above any real one, so a wrong
# path (a disk image, a log) is refused in one line before it fills the memory (ours).
MAX_SCENARIO_BYTES = 16 * 2 ** 20  # the bundled scenarios are under 20 KB
MAX_TOKEN_FILE_BYTES = 1 * 2 ** 30  # token IDs as text: ~100M tokens
MAX_TRACE_BYTES = 16 * 2 ** 30  # a 10M-request CSV is ~240 MB; the size guard sizes the run itself
READ_CAPS = {"file": MAX_SCENARIO_BYTES, "scenario": MAX_SCENARIO_BYTES, "token file": MAX_TOKEN_FILE_BYTES,
             "trace file": MAX_TRACE_BYTES, "trace": MAX_TRACE_BYTES}
# A zstd trace stops decompressing at the smaller of these (kvviz replay --max-decompressed-ratio,
# --max-decompressed-gb): libCacheSim's oracleGeneral traces compress 3-10x, text traces
# rarely beyond 30x (ours); a zstd bomb (16 GiB from 512 KB, 32,768x) is refused.
MAX_DECOMPRESSED_RATIO = 200
MAX_DECOMPRESSED_BYTES = MAX_TRACE_BYTES


def read_cap(what: str) -> int:
    """How many bytes kvviz reads of an input of this kind (read_text's `what`)."""
    return READ_CAPS.get(what, MAX_TRACE_BYTES)


NS_PER = {"ns": 1, "µs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9}
BYTES_PER = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
             "KiB": 2 ** 10, "MiB": 2 ** 20, "GiB": 2 ** 30, "TiB": 2 ** 40}
BYTES_PER_S = {f"{u}/s": f for u, f in BYTES_PER.items()}


def unrepresentable(value: float, unit: str | None) -> str | None:
    """Why a number in `unit` cannot be simulated (a phrase without the value), or None."""
    if unit is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    v = abs(value)
    if unit in NS_PER:
        ns = v * NS_PER[unit]
        if ns > MAX_NS:
            return f"beyond the simulator's time range (at most {MAX_NS / NS_PER[unit]:.3g} {unit})"
        if 0 < ns < 1:
            return "below the simulator's 1 ns resolution"
    elif unit in BYTES_PER:
        if v * BYTES_PER[unit] > MAX_BYTES:
            return f"beyond the simulator's size range (at most {MAX_BYTES / BYTES_PER[unit]:.3g} {unit})"
    elif unit in BYTES_PER_S:
        per_s = v * BYTES_PER_S[unit]
        if 0 < per_s < 1:  # one byte would take longer than a second: a transfer's time overflows
            return "below the slowest rate the simulator can time (1 B/s)"
        if per_s > MAX_BYTES:
            return "beyond the simulator's range"
    elif unit == "1/s":
        if 0 < v and 1e9 / v > MAX_NS:
            return "so low that one period is beyond the simulator's time range"
        if v > 1e9:
            return "faster than the simulator's 1 ns resolution"
    return None


def nesting_depth(value: object, limit: int = MAX_DEPTH) -> int:
    """How deeply tables and arrays nest in `value` (0 for a scalar), counted without
    recursion and stopping once past `limit` (a hostile file may nest thousands deep)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        node, depth = stack.pop()
        children: Iterable[object]
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, depth + 1)
        if deepest > limit:
            return deepest
        stack.extend((c, depth + 1) for c in children)
    return deepest
