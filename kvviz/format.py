"""How a metric value reads to a person (CLI summary and the app's metrics table), and any
text from a user's file shown on one line."""
import re
from typing import Any

# what a terminal or a label would act on rather than show: C0/C1 controls (ESC clears the
# screen or sets the title, CR overwrites the line), DEL, line/paragraph separators, and the
# bidi controls that reorder what follows
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    return _SHORT.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def printable(text: object) -> str:
    """`text` as one line that shows what it holds: each control character escaped as Python
    writes it (\\x1b, \\n, \\u2028); everything else, backslashes too, as it is, so a second
    pass changes nothing."""
    return _UNSAFE.sub(_escape, str(text))


def clip(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters with an ellipsis in the middle: a long field path
    or file name keeps its start and its end (the key or the file's own name)."""
    if len(text) <= limit:
        return text
    tail = limit // 3
    return f"{text[:limit - tail]}…{text[-tail:]}"


def format_value(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return {True: "yes", False: "no", None: "—"}[v]
    if isinstance(v, float):
        text = f"{v:.6g}"
        return text if any(c in text for c in ".eni") else text + ".0"
    return printable(v) if isinstance(v, str) else str(v)  # a string may be a scenario's label


def readable_number(v: Any) -> str:
    """A number as a person writes it: 100,000,000 (not 1e+08), 0.25, 3.2e-07 for the tiny."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return format_value(v)
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        v = int(v)
    if isinstance(v, int):
        return f"{v:,}"
    if 1e-3 <= abs(v) < 1e15:
        text = f"{v:,.6g}" if abs(v) < 1e6 else f"{v:,.0f}"
        return text
    return f"{v:.3g}"


BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def readable_bytes(n: int | float) -> str:
    """A byte count in binary units with three significant figures: 6.70 TiB, 512 B."""
    n = float(n)
    k = 0
    while abs(n) >= 1024 and k < len(BYTE_UNITS) - 1:
        n /= 1024
        k += 1
    if k == 0:
        return f"{int(n)} B"
    digits = 2 if abs(n) < 10 else 1 if abs(n) < 100 else 0  # three figures, trailing zeros kept
    return f"{n:.{digits}f} {BYTE_UNITS[k]}"


def bytes_for_people(n: int | float) -> str:
    """A byte count in binary units and, past 1 KiB, exactly: 6.70 TiB (7,369,224,355,840 B)."""
    if abs(n) < 1024:
        return readable_bytes(n)
    exact = f"{int(n):,}" if float(n).is_integer() else f"{n:,.1f}"
    return f"{readable_bytes(n)} ({exact} B)"


def _is_bytes(name: str) -> bool:
    """A metric holding a byte count, by its name's last part (footprint_bytes, bytes_missed,
    kv_bytes_per_token), not a rate (bytes_per_s)."""
    words = name.rsplit(".", 1)[-1].split("_")
    return "bytes" in words and not name.endswith(("_per_s", "_per_sec"))


def metric_text(name: str, v: Any) -> str:
    """A metric value as the app's Metrics dock shows it: as format_value, except that large and
    tiny numbers read in full or in one exponent form (100,000,000 not 1e+08; 3.20e-7 not
    3.2e-07) and byte counts in binary units with the exact count."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return format_value(v)
    if _is_bytes(name) and abs(v) >= 1024:
        return bytes_for_people(v)
    if isinstance(v, int):
        return f"{v:,}" if abs(v) >= 10_000 else str(v)
    if v != v or v in (float("inf"), float("-inf")):
        return format_value(v)
    if abs(v) >= 1e15 or (v != 0 and abs(v) < 1e-4):
        mantissa, exp = f"{v:.2e}".split("e")
        return f"{mantissa}e{int(exp)}"
    if abs(v) >= 1e6:
        return f"{v:,.0f}"
    if abs(v) >= 10_000:
        return f"{v:,.6g}" if not v.is_integer() else f"{v:,.1f}"
    return format_value(v)
