"""The one-line notes the CLI says once, where a command starts running scenarios."""
from __future__ import annotations

import sys

from .format import printable
from .mechanisms import engine_note_once


def say_engine_note(kind: object) -> None:
    """On stderr, once a process: a run of `kind` takes a slower engine than it could (why).
    An engine choice the environment makes that cannot be is bad input (ScenarioError: exit 2)."""
    if note := engine_note_once(kind, strict=True):
        print(printable(f"note: {note}"), file=sys.stderr)  # it may quote an environment variable
