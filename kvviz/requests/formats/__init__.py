"""Request-trace formats, registered by name, one record each (base.TraceFormat): what `kvviz
replay --format NAME` reads as object requests, what `kvviz replay --prefix --format NAME` and a
prefix_cache scenario's `workload.trace_file` read as prompts with block hashes, and whether
`--format auto` recognises the format's files. Adding a format: one file here that calls
`register`, and its import line below (docs/extend/trace-reader.md).

Nothing here imports numpy: the CLI's parser lists the names before any trace is read, so a
format's file imports its reader's modules inside the reader."""
from __future__ import annotations

from .base import (
    EVERYWHERE,
    TRACE_FORMATS,
    ReadOptions,
    TraceFormat,
    Where,
    claimant,
    names,
    read_workload,
    register,
)

__all__ = ["EVERYWHERE", "TRACE_FORMATS", "ReadOptions", "TraceFormat", "Where", "claimant", "names",
           "read_workload", "register"]

# Importing a format's file registers it (this order = the order --help and messages list them in).
# isort: off
from . import known  # noqa: E402,F401
# isort: on
