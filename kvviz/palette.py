"""Colours per span and instant kind, read from resources/palette.toml (one place for all)."""
from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from functools import cache
from typing import Any

from .bundled import resources_dir
from .trace import INSTANT_KINDS, SPAN_KINDS, TIERS, Trace

_FALLBACK = "#888888"


@cache
def _palette() -> dict[str, Any]:
    try:
        return tomllib.loads((resources_dir() / "palette.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def _colour(table: str, key: str) -> str:
    """The palette's colour for `key` in `table`; the fallback where the file has none (or not a string)."""
    value = _palette().get(table, {}).get(key, _FALLBACK)
    return value if isinstance(value, str) else _FALLBACK


def span_color(kind: str) -> str:
    return _colour("spans", kind)


def instant_color(kind: str) -> str:
    return _colour("instants", kind)


# The five tiers a colour is defined for (resources/palette.toml [tiers]), top to bottom.
TIER_KEYS: tuple[str, ...] = ("hbm", "cxl", "dram", "ssd", "remote")
# Other names the package gives a tier (trace.TIERS, lane groups, the ladder's flash).
_TIER_ALIASES = {"host": "dram", "flash": "ssd", "nvme": "ssd", "rdma": "remote", "pool": "remote"}


def tier_key(name: str) -> str | None:
    """The tier a name stands for ("DRAM", "host DRAM", "Flash (tier 3)", "dram occupancy",
    "RDMA", "instance 3 HBM cache" …) as one of TIER_KEYS, or None when it names no tier ("GPU", "PCIe", "links")."""
    words = re.findall(r"[a-z0-9]+", name.lower())
    if len(words) > 2 and words[0] == "instance" and words[1].isdigit():
        words = words[2:]  # a cluster's lanes and counters: "instance 3 HBM cache" is instance 3's HBM
    if not words:
        return None
    if words[0] == "host" and len(words) > 1 and words[1] == "dram":
        return "dram"
    first = words[0]
    return first if first in TIER_KEYS else _TIER_ALIASES.get(first) if first != "host" else None


# How a tier is named wherever one name stands for it (Perfetto's track names, legends).
TIER_LABELS: dict[str, str] = {"hbm": "HBM", "cxl": "CXL", "dram": "DRAM", "ssd": "SSD", "remote": "remote"}


def tier_label(name: str) -> str:
    """The palette's name of the tier `name` stands for, with the name as given after it when
    that differs ("host DRAM" -> "DRAM (host DRAM)", "flash" -> "SSD (flash)"); a name of no
    tier as it is."""
    key = tier_key(name)
    if key is None:
        return name
    label = TIER_LABELS[key]
    return label if name == label else f"{label} ({name})"


def tier_color(tier: str) -> str:
    """A memory tier's colour (hbm, cxl, dram, ssd, remote, or any name tier_key knows),
    wherever a tier is drawn: Timeline lanes, Tiers bars, Counters (occupancy), Policies,
    Ladder and the exported figures all ask here; resources/palette.toml [tiers] is the one
    place the colours are written."""
    return _colour("tiers", tier_key(tier) or tier)


def tier_color_of(name: str) -> str | None:
    """The tier colour of a lane group, lane or counter that names a tier, else None."""
    key = tier_key(name)
    return tier_color(key) if key is not None else None


def trace_tiers(tr: Trace) -> tuple[str, ...]:
    """The tiers (TIER_KEYS, top to bottom) a run's trace names: its transfers' source and
    destination tiers, its lanes and lane groups, its counters and the tier its slots are in."""
    names = [TIERS[i] for i in set(tr.facts["src"].tolist()) | set(tr.facts["dst"].tolist()) if i >= 0]
    names += tr.lanes["group"].tolist() + tr.lanes["name"].tolist() + list(tr.counter_names) + [tr.slot_tier]
    keys = {tier_key(n) for n in names if n}
    return tuple(k for k in TIER_KEYS if k in keys)


def instant_legend_name(kind: str, span_kinds: Iterable[str]) -> str:
    """An instant kind's name in a legend: 'issue' spans and 'issue' marks in one trace would
    read as one entry listed twice, so the mark says it is one."""
    return f"{kind} mark" if kind in set(span_kinds) else kind


def all_span_colors() -> dict[str, str]:
    return {k: span_color(k) for k in SPAN_KINDS}


def all_instant_colors() -> dict[str, str]:
    return {k: instant_color(k) for k in INSTANT_KINDS}
