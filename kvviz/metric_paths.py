"""Metrics by dotted path: `speedup`, `layers.0.stall_us`, `policies.lru.hit_rate`, and families
with one `*` (`policies.*.hit_rate`). Sweeps collect them, `[[expect]]` checks test them, and
the app lists and compares them by the same paths.
"""
from __future__ import annotations

import math
from typing import Any, Callable, TypeGuard

# How a metric is held against another one: `[[expect]]` (greater_than, at_least) and a claim's
# shape (all four) read the same table.
COMPARISONS: dict[str, tuple[str, Callable[[Any, Any], bool]]] = {
    "greater_than": (">", lambda a, b: a > b), "at_least": ("≥", lambda a, b: a >= b),
    "less_than": ("<", lambda a, b: a < b), "at_most": ("≤", lambda a, b: a <= b)}


def finite_number(x: object) -> TypeGuard[int | float]:
    """A metric that can be compared: an int or float, finite, not a bool."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def metric_paths(metrics: dict[str, Any] | list[Any] | tuple[Any, ...], prefix: str = "") -> dict[str, Any]:
    """Every scalar metric by the dotted path `metric_value` takes, nested ones too
    (`policies.lru.hit_rate`, `rungs.2.hbm_hit_pct`), in the metrics' order."""
    out: dict[str, Any] = {}
    items = metrics.items() if isinstance(metrics, dict) else enumerate(metrics)
    for k, v in items:
        path = f"{prefix}{k}"
        if isinstance(v, (dict, list, tuple)):
            out.update(metric_paths(v, path + "."))
        else:
            out[path] = v
    return out


def metric_value(metrics: dict[str, Any], name: str) -> Any:
    """A metric by dotted path (`speedup`, `layers.0.stall_us`, `policies.lru.hit_rate`)."""
    node: Any = metrics
    for part in name.split("."):
        if isinstance(node, (list, tuple)) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise KeyError(name)
    return node


def metric_family(metrics: dict[str, Any], pattern: str) -> dict[str, Any]:
    """The metrics a path with one `*` segment matches, by what `*` stood for
    (`policies.*.hit_rate` -> {"lru": 0.8, "fifo": 0.9, ...}); those without the rest are skipped."""
    head, _, tail = pattern.partition("*")
    head, tail = head.rstrip("."), tail.lstrip(".")
    node = metric_value(metrics, head) if head else metrics
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, (list, tuple)) else ()
    out = {}
    for k, sub in items:
        try:
            v = metric_value(sub, tail) if tail else sub
        except (KeyError, TypeError):
            continue
        if not isinstance(v, (dict, list, tuple)):  # a family of values, not of tables
            out[str(k)] = v
    return out
