"""What libCacheSim's C code prints while it replays, caught and kept as warnings of the curve
point it concerns. Its C library writes straight to the process's stdout and stderr (W-TinyLFU
on the bundled Mooncake sample: "CBF at 0x… has too few counters -2147483648! make it into
2 * 20", a counter overflow): it went past kvviz into a terminal, or nowhere in the app, and
the curve was plotted with no word of it.

The capture swaps file descriptors 1 and 2 for a temporary file for the length of one C call:
process-wide, so one capture runs at a time (a lock), and output of another thread of the same
process during that call lands with it (kvviz's replays run one per process)."""
from __future__ import annotations

import contextlib
import ctypes
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import ReplayResult

MAX_READ = 1 << 20  # a looping policy can print gigabytes: the first MiB is plenty to summarise
MAX_WARNINGS = 5
_LOCK = threading.Lock()
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]+\b")
_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
# libCacheSim's log prefix: "[WARN]  12-01-2026 17:03:59  cache.c:160  (tid=1406…): " → "WARN: "
_LOG_PREFIX = re.compile(r"^\[(\w+)\]\s+\S+\s+\S+\s+\S+:\d+\s+\(tid=\d+\):\s*")


def _flush_c() -> None:
    try:
        ctypes.CDLL(None).fflush(None)  # C stdio buffers, before the descriptors change
    except (OSError, AttributeError):
        pass


@contextlib.contextmanager
def captured_c_output() -> Iterator[list[str]]:
    """Yield a list that holds, after the block, the lines written to fd 1 and 2 during it."""
    lines: list[str] = []
    with _LOCK, tempfile.TemporaryFile() as f:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        _flush_c()
        saved = [os.dup(1), os.dup(2)]
        try:
            os.dup2(f.fileno(), 1)
            os.dup2(f.fileno(), 2)
            yield lines
        finally:
            _flush_c()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            f.seek(0)
            lines.extend(f.read(MAX_READ).decode("utf-8", "replace").splitlines())


def summarise(lines: list[str]) -> tuple[str, ...]:
    """Distinct lines, addresses and colour codes taken out, each with how often it came:
    'CBF at 0x… has too few counters -2147483648! make it into 2 * 20 (×3)'."""
    counts: dict[str, int] = {}
    for line in lines:
        text = _LOG_PREFIX.sub(r"\1: ", _ADDRESS.sub("0x…", _ESCAPE.sub("", line)).strip())
        if text:
            counts[text] = counts.get(text, 0) + 1
    out = [t if n == 1 else f"{t} (×{n:,})" for t, n in counts.items()]
    if len(out) > MAX_WARNINGS:
        out = out[:MAX_WARNINGS] + [f"… and {len(out) - MAX_WARNINGS} more kinds of message"]
    return tuple(out)


def per_policy(results: Iterable[ReplayResult | None]) -> dict[str, tuple[int, int, list[str]]]:
    """policy -> (points with warnings, points, their distinct warnings) of replay results that
    have any: one line per policy for the CLI, one note per curve for the app."""
    out: dict[str, tuple[int, int, list[str]]] = {}
    for r in results:
        if r is None:
            continue
        warned, total, texts = out.get(r.policy, (0, 0, []))
        texts += [t for t in r.warnings if t not in texts]
        out[r.policy] = (warned + bool(r.warnings), total + 1, texts)
    return {p: v for p, v in out.items() if v[0]}


def describe(policy: str, warned: int, total: int, texts: list[str]) -> str:
    """'wtinylfu: libCacheSim printed at 12 of 12 capacities: CBF at 0x… has too few counters …'."""
    return f"{policy}: libCacheSim printed at {warned} of {total} capacities: " + "; ".join(texts[:MAX_WARNINGS])
