"""The size guard's memory limit in the app (File → Memory Limit for Runs…), kept in the
settings: the CLI's `--max-memory-gb` for the window's runs and its sweeps. A refusal the
simulator words for the command line ("raise the limit with --max-memory-gb", a flag
`kvviz-gui` has no way to take) is reworded to name the menu entry instead."""
from __future__ import annotations

import math

from kvviz.size_guard import DEFAULT_MAX_MEMORY_GB, RAISE_HINT

KEY = "runs/maxMemoryGb"
MIN_GB, MAX_GB = 0.1, 4096.0
MENU_ENTRY = "File → Memory Limit for Runs…"


def stored_limit(settings) -> float:
    """The limit kept in the settings, in GB; kvviz's default when none is (or it is not a number)."""
    try:
        gb = float(settings.value(KEY, DEFAULT_MAX_MEMORY_GB)) if settings is not None else DEFAULT_MAX_MEMORY_GB
    except (TypeError, ValueError):
        return DEFAULT_MAX_MEMORY_GB
    return gb if math.isfinite(gb) and MIN_GB <= gb <= MAX_GB else DEFAULT_MAX_MEMORY_GB


def for_app(message: str, limit_gb: float | None = None) -> str:
    """A refusal as the app says it: the way to raise the limit is its menu entry."""
    now = f" ({limit_gb:g} GB now)" if limit_gb else ""
    return message.replace(RAISE_HINT, f"raise the memory limit{now} in {MENU_ENTRY}")
