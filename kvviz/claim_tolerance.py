"""The claims rule's tolerances (kvviz.claims states the whole rule): one per scale, named once,
which a claim may only tighten. Apart from kvviz.claims so the scenario model can refuse a
looser one at load without importing what runs claims."""
from __future__ import annotations

from typing import Protocol


class Claim(Protocol):
    """What the tolerance reads of a claim (kvviz.scenario.Claim, which imports this module)."""

    @property
    def scale(self) -> str: ...
    @property
    def paper(self) -> bool | int | float | str: ...
    @property
    def whole(self) -> float: ...
    @property
    def between(self) -> list[float] | None: ...
    @property
    def rel_tol(self) -> float | None: ...
    @property
    def abs_tol(self) -> float | None: ...

# README: "Claims". ±0.05 absolute for a share, ±10% relative for a ratio or a value.
TOLERANCE = {"share": ("abs", 0.05), "ratio": ("rel", 0.10), "value": ("rel", 0.10)}


def _default_band(claim: Claim) -> float:
    kind, amount = TOLERANCE[claim.scale]
    return amount * claim.whole if kind == "abs" else amount * _magnitude(claim)


def _magnitude(claim: Claim) -> float:
    """|paper| for a relative tolerance; a range's larger bound."""
    if claim.between is not None:
        return max(abs(claim.between[0]), abs(claim.between[1]))
    if isinstance(claim.paper, str):  # the model gives a tolerance only to a number or a range
        raise TypeError(f"a {claim.scale} claim's paper value is a number (got {claim.paper!r:.40})")
    return abs(claim.paper)


def band(claim: Claim) -> float:
    """The claim's tolerance in the metric's unit: its own if it states one, else the scale's."""
    if claim.abs_tol is not None:
        return claim.abs_tol
    if claim.rel_tol is not None:
        return claim.rel_tol * _magnitude(claim)
    return _default_band(claim)


def tolerance_problem(claim: Claim) -> str | None:
    """Why a claim's own tolerance is refused (it loosens the scale's), or None."""
    if claim.abs_tol is None and claim.rel_tol is None:
        return None
    default, own = _default_band(claim), band(claim)
    if own > default * (1 + 1e-9) + 1e-12:
        kind, amount = TOLERANCE[claim.scale]
        said = f"±{amount:g}" + (f" of {claim.whole:g}" if claim.whole != 1 else "") if kind == "abs" else \
            f"±{amount * 100:g}%"
        return f"looser than the {claim.scale} tolerance {said} ({own:g} > {default:g}): a claim may only tighten it"
    return None
