"""What RoPE proves about distance, and what a scenario assumes — side by side, no Qt.

Proven (RoFormer, Su et al., §3.4.3). With RoPE, the attention logit between a query at m
and a key at n is the real part of a sum over the d/2 rotation pairs,

    <q_m, k_n> = Re[ sum_{j=0}^{d/2-1} h_j e^{i r theta_j} ],   r = m - n,
    h_j = q_[2j:2j+1] k*_[2j:2j+1] (one complex number per pair),  theta_j = base^(-2j/d).

Abel summation with S_0 = 0, S_j = sum_{k<j} e^{i r theta_k} and h_{d/2} = 0 gives

    |sum_j h_j e^{i r theta_j}| = |sum_{j=0}^{d/2-1} S_{j+1} (h_{j+1} - h_j)|
                               <= (max_j |h_{j+1} - h_j|) * sum_{j=1}^{d/2} |S_j|.

The first factor depends on the vectors, not on distance; RoFormer plots the second, scaled
by 1/(d/2), as the "relative upper bound":  B(r) = (1/(d/2)) sum_{j=1}^{d/2} |S_j(r)|.
At r = 0 every |S_j| = j, its largest possible value, so B(0) = (d/2 + 1)/2 is the global
maximum; we normalise by it so B(0) = 1.

B itself oscillates; it decays only on average. `rope_envelope` turns it into a
non-increasing envelope by a running maximum taken from the far end of the evaluated
distances — so the envelope is only valid up to the largest distance evaluated.

Assumed (the scenario's input, not a consequence of RoPE). `assumed_profile` returns the
share of attention mass per distance that a rope_window scenario assumes (an exponential
profile calibrated to "concentration within ±radius", see kvviz/attention_profile.py).

Reading them together: B bounds the logit |<q,k>| (before softmax); the profile is attention
mass (after softmax). Both are shown relative to distance 0, so the plot compares shapes, not
magnitudes — a small logit bound does not by itself imply small attention mass.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ...attention_profile import calibrate_decay
from . import Attention, RopeWindowScenario

# Rows of distances processed at once: bounds the (rows x d/2) complex scratch array to
# a few MB whatever the number of distances asked for.
_CHUNK = 2048


def rope_frequencies(head_dim: int, base: float = 10000.0) -> npt.NDArray[np.float64]:
    """theta_j = base^(-2j/d) for j = 0..d/2-1 (the RoFormer / Llama convention)."""
    if head_dim < 2 or head_dim % 2:
        raise ValueError(f"head_dim must be an even number >= 2 (got {head_dim})")
    if base <= 1:
        raise ValueError(f"base must be > 1 (got {base})")
    return base ** (-2.0 * np.arange(head_dim // 2) / head_dim)


def rope_relative_bound(distances: npt.ArrayLike, head_dim: int = 128, base: float = 10000.0,
                        normalize: bool = True) -> npt.NDArray[np.float64]:
    """B(r) = (1/(d/2)) sum_{j=1}^{d/2} |S_j(r)| for each distance r (may be non-integer).
    With `normalize`, divided by B(0) = (d/2 + 1)/2 so that B(0) = 1. Not monotone."""
    r = np.abs(np.asarray(distances, dtype=np.float64)).ravel()
    theta = rope_frequencies(head_dim, base)
    half = len(theta)
    out = np.empty(len(r))
    for lo in range(0, len(r), _CHUNK):
        phase = np.outer(r[lo:lo + _CHUNK], theta)
        partial = np.cumsum(np.exp(1j * phase), axis=1)  # column j-1 holds S_j
        out[lo:lo + _CHUNK] = np.abs(partial).sum(axis=1) / half
    if normalize:
        out /= (half + 1) / 2
    return out


def rope_envelope(max_distance: int, head_dim: int = 128, base: float = 10000.0,
                  normalize: bool = True
                  ) -> tuple[npt.NDArray[np.int_], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Distances 0..max_distance, the raw bound B and its non-increasing envelope
    E(r) = max_{r <= s <= max_distance} B(s) (running max from the right)."""
    if max_distance < 0:
        raise ValueError(f"max_distance must be >= 0 (got {max_distance})")
    d = np.arange(max_distance + 1)
    b = rope_relative_bound(d, head_dim, base, normalize)
    env = np.maximum.accumulate(b[::-1])[::-1]
    return d, b, env


def assumed_profile(distances: npt.ArrayLike, left: int, right: int, radius: int, concentration: float,
                    profile: str = "exponential") -> npt.NDArray[np.float64]:
    """Assumed attention mass at each distance from the query, relative to the query's own
    position (1 at distance 0): r^d with r calibrated so that `concentration` of the mass lies
    within ±radius over an attended span of `left`/`right` positions either side. Distances
    beyond the attended span on both sides carry no mass (0)."""
    d = np.abs(np.asarray(distances, dtype=np.int64)).ravel()
    r = 1.0 if profile == "uniform" else calibrate_decay(left, right, radius, concentration)
    w = np.power(r, d.astype(np.float64))
    w[d > max(left, right)] = 0.0
    return w


def scenario_profile(scenario: RopeWindowScenario, distances: npt.ArrayLike, query_index: int = 0
                     ) -> npt.NDArray[np.float64]:
    """`assumed_profile` for a rope_window scenario, as seen by one of its queries (the
    calibration depends on how many positions that query attends on each side)."""
    seq, att = scenario.sequence, scenario.attention
    q = seq.queries[query_index]
    last = q if att.causal else seq.length - 1
    return assumed_profile(distances, q, last - q, att.radius, att.concentration, att.profile)


def bound_vs_assumption(scenario: object = None, max_distance: int = 64, head_dim: int = 128,
                        base: float = 10000.0) -> dict[str, Any]:
    """Everything a "proven vs assumed" plot needs, over distances 0..max_distance:
    the normalised bound B, its envelope, and the assumed attention profile (1 at distance 0).

    The assumption comes from a rope_window scenario (its first query), a simulated ladder
    (its first rung's scenario) or, for anything else such as a purely modeled ladder, the
    seed's stated assumption (72% of the mass within ±3, rope_window's defaults) over a
    symmetric span of ±max_distance."""
    d, b, env = rope_envelope(max_distance, head_dim, base)
    runs = getattr(scenario, "rung_scenarios", lambda: ())()
    sc = runs[0] if runs else scenario
    if isinstance(sc, RopeWindowScenario):
        assumed = scenario_profile(sc, d)
        a = sc.attention
        source = f"{sc.name}: query {sc.sequence.queries[0]}"
    else:
        a = Attention()
        assumed = assumed_profile(d, max_distance, max_distance, a.radius, a.concentration, a.profile)
        source = "the RoPE walkthrough's stated assumption"
    what = (f"{a.concentration:.0%} of mass within ±{a.radius}" if a.profile == "exponential"
            else "uniform")
    return {"distance": d, "bound": b, "envelope": env, "assumed": assumed,
            "assumption": f"{what} ({source})", "head_dim": head_dim, "base": base}
