"""Per-request latency figures of a served run, one definition for every mechanism that serves on
this core (AttentionStore, the prefix cache's timed engine, the cluster): TTFT = first token −
arrival; TPOT = (last token − first token) / (reply tokens − 1), over requests whose reply has
more than one token; their means and percentiles, None where no request counts. The names under
which a mechanism reports them are its own (kept as they were)."""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def ttft_ms(arrival_ns: ArrayLike, first_token_ns: ArrayLike, served: NDArray[np.bool_] | None = None) -> NDArray[np.float64]:
    """Each (served) request's time to first token, in ms."""
    d = np.asarray(first_token_ns) - np.asarray(arrival_ns)
    out: NDArray[np.float64] = (d if served is None else d[served]) / 1e6
    return out


def tpot_ms(first_token_ns: ArrayLike, end_ns: ArrayLike, reply_tokens: ArrayLike,
            served: NDArray[np.bool_] | None = None) -> NDArray[np.float64]:
    """Each (served) request's time per output token after the first, in ms: the requests
    whose reply has more than one token."""
    out_tok = np.asarray(reply_tokens)
    multi = out_tok > 1 if served is None else served & (out_tok > 1)
    t: NDArray[np.float64] = (np.asarray(end_ns) - np.asarray(first_token_ns))[multi] / (out_tok[multi] - 1) / 1e6
    return t


def mean(x: NDArray[np.float64]) -> float | None:
    return float(x.mean()) if len(x) else None


def percentile(x: NDArray[np.float64], q: float) -> float | None:
    return float(np.percentile(x, q)) if len(x) else None
