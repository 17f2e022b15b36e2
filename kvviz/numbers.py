"""Numbers on the command line, read as a scenario's values are: one rule everywhere. A count
(workers, pixels, bytes per token) is a TOML integer — `16`, `1_000`, `0x10` — and `1e3` or
`16.0` is refused, as in a scenario's integer field; a quantity (GB, µs, a ratio) is any finite
TOML number — `1e3`, `0.5`, `16`, `0x10`. A size is such a number, then an optional unit
(`64MiB`, `1.5GB`, `1e3`, `0x10`; a text that is a number as a whole is one, so `0x1B` is 27
bytes)."""
from __future__ import annotations

import math
import re
from collections.abc import Container
from typing import Literal, overload

from .errors import ScenarioError


@overload
def parse_number(text: str, source: str, integer: Literal[True], finite: bool = True) -> int: ...
@overload
def parse_number(text: str, source: str, integer: bool = False, finite: bool = True) -> int | float: ...
def parse_number(text: str, source: str, integer: bool = False, finite: bool = True) -> int | float:
    """`text` as a TOML number (an integer if `integer`; finite if `finite`, else the caller's
    range refuses inf and nan), else a ScenarioError at `source`."""
    value = toml_number(text)
    if value is None:
        raise ScenarioError(f"expected {'a whole number' if integer else 'a number'}, got {text!r}", source)
    if integer and isinstance(value, float):
        raise ScenarioError(f"expected a whole number, got {text!r} (a float, as in a scenario: write it "
                            f"without a decimal point or exponent)", source)
    if finite and not math.isfinite(value):
        raise ScenarioError(f"expected a finite number, got {text!r}", source)
    return value


def toml_number(text: str) -> int | float | None:
    """`text` as a TOML integer or float, or None."""
    plain = text.strip()
    if "\n" not in text and plain.isascii() and plain.isdigit() and (plain == "0" or plain[0] != "0"):
        return int(plain)  # a plain decimal integer, as TOML reads it, without importing tomllib
    import tomllib  # here: the lean replay path reads plain integers only
    try:
        value = tomllib.loads(f"v = {text.strip()}\n")["v"] if "\n" not in text else None
    except tomllib.TOMLDecodeError:
        return None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def split_unit(text: str, units: Container[str]) -> tuple[int | float, str] | None:
    """(number, unit) of a size: the whole text as a number (unit ""), else a trailing unit of
    `units` (case-insensitive; `%` too) after a number; None if neither."""
    whole = toml_number(text)
    if whole is not None:
        return whole, ""
    m = re.fullmatch(r"\s*(.*?)\s*([A-Za-zµ]+|%)\s*", text)  # µ: µs is a unit (it was never matched)
    if not m or (m.group(2) != "%" and m.group(2).lower() not in units):
        return None
    number = toml_number(m.group(1)) if m.group(1) else None
    return None if number is None else (number, m.group(2))
