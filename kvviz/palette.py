"""Colours per span and instant kind, read from resources/palette.toml (one place for all)."""
from __future__ import annotations

import tomllib
from functools import cache

from .bundled import resources_dir
from .trace import INSTANT_KINDS, SPAN_KINDS

_FALLBACK = "#888888"


@cache
def _palette() -> dict:
    try:
        return tomllib.loads((resources_dir() / "palette.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def span_color(kind: str) -> str:
    return _palette().get("spans", {}).get(kind, _FALLBACK)


def instant_color(kind: str) -> str:
    return _palette().get("instants", {}).get(kind, _FALLBACK)


def tier_color(tier: str) -> str:
    """A memory tier's colour (hbm, cxl, dram, ssd, remote), wherever a tier is drawn."""
    return _palette().get("tiers", {}).get(tier, _FALLBACK)


def instant_legend_name(kind: str, span_kinds) -> str:
    """An instant kind's name in a legend: 'issue' spans and 'issue' marks in one trace would
    read as one entry listed twice, so the mark says it is one."""
    return f"{kind} mark" if kind in set(span_kinds) else kind


def all_span_colors() -> dict[str, str]:
    return {k: span_color(k) for k in SPAN_KINDS}


def all_instant_colors() -> dict[str, str]:
    return {k: instant_color(k) for k in INSTANT_KINDS}
