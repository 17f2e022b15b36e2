"""Time is integer nanoseconds inside the core; people read microseconds."""
NS_PER_US = 1_000


def us_to_ns(us: float) -> int:
    """Convert a microsecond figure from a scenario to exact integer nanoseconds."""
    return int(round(us * NS_PER_US))


def ns_to_us(ns: int | float) -> float:
    return ns / NS_PER_US
