"""How a metric value reads to a person (CLI summary and the app's metrics table)."""


def format_value(v) -> str:
    if isinstance(v, bool) or v is None:
        return {True: "yes", False: "no", None: "—"}[v]
    if isinstance(v, float):
        text = f"{v:.6g}"
        return text if any(c in text for c in ".eni") else text + ".0"
    return str(v)


def readable_number(v) -> str:
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
    return f"{int(n)} B" if k == 0 else f"{n:.3g} {BYTE_UNITS[k]}"
