"""Which engine replays: libCacheSim where the `libcachesim` package is installed (kvviz[replay]),
kvviz's own Python LRU/FIFO/Belady otherwise. Both take the same requests and give the same
counts (a test holds them to each other); libCacheSim is 5-30x faster and has ~30 policies.
"""
from __future__ import annotations

import functools

from ..errors import ScenarioError

LIBCACHESIM = "libcachesim"
PYTHON = "python"
ENGINES = ("auto", LIBCACHESIM, PYTHON)
# Other names people type for a policy.
ALIASES = {"2q": "twoq", "tinylfu": "wtinylfu", "lru-k": "lruk", "clock-pro": "clockpro", "opt": "belady",
           "min": "belady"}
FALLBACK_NOTE = ("note: libcachesim is not installed: replaying with kvviz's own Python LRU, FIFO and "
                 "Belady (pip install 'kvviz[replay]' for libCacheSim's engine and its policies)")


@functools.cache
def has_libcachesim() -> bool:
    """Installed and importable (a broken install falls back too)."""
    try:
        import libcachesim  # noqa: F401
    except ImportError:
        return False
    return True


def resolve(engine: str = "auto") -> str:
    """The engine that will run: `auto` is libCacheSim when installed."""
    if engine not in ENGINES:
        raise ScenarioError(f"unknown engine {engine!r} (one of: {', '.join(ENGINES)})", "--engine")
    if engine == "auto":
        return LIBCACHESIM if has_libcachesim() else PYTHON
    if engine == LIBCACHESIM and not has_libcachesim():
        raise ScenarioError("the libcachesim engine is not installed (pip install 'kvviz[replay]')", "--engine")
    return engine


def engine_label(engine: str) -> str:
    if engine == LIBCACHESIM:
        from .libcachesim_engine import VERSION
        return f"libCacheSim {VERSION}"
    return "kvviz Python kernels"


def policies(engine: str = "auto") -> dict[str, str]:
    """name -> short description of every policy the engine offers."""
    engine = resolve(engine)
    if engine == LIBCACHESIM:
        from .libcachesim_engine import policies as lcs_policies
        return lcs_policies()
    from .kernels import DESCRIPTIONS  # here: numpy and the eviction registry, for this engine only
    return dict(DESCRIPTIONS)


def canonical(name: str, engine: str = "auto", source: str = "--policy") -> str:
    """A policy's canonical name (case, `-` and `_` ignored: S3-FIFO = s3fifo), or a message
    listing the known ones."""
    engine = resolve(engine)
    known = policies(engine)
    key = name.strip().lower()
    key = ALIASES.get(key, key).replace("-", "").replace("_", "")
    if key in known:
        return key
    hint = " (more with libcachesim installed: pip install 'kvviz[replay]')" if not has_libcachesim() else ""
    raise ScenarioError(f"unknown policy {name!r} (one of: {', '.join(known)}){hint}", source)
