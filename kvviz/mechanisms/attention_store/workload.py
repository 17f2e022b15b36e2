"""AttentionStore's multi-turn workloads: a seeded ShareGPT-shaped generator, and trace import,
re-timed by the scenario's release rule (`serving.arrivals`, kvviz.serving.arrivals).

Both give a kvviz.requests.conversations.Conversations, the table of turns (one row per turn,
sorted by conversation then turn) the serving model replays; the traces themselves are read
by kvviz.requests.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...errors import ScenarioError
from ...requests import conversation_log, conversations
from ...requests.conversations import NS_PER_S, Conversations
from ...serving.arrivals import conversation_poisson, interleaved, saturated

if TYPE_CHECKING:
    from .model import AttentionStoreScenario, Workload

# Above this many turns a run is refused up front (each turn costs a few µs per policy).
MAX_TURNS = 3_000_000


def _lognormal(rng: np.random.Generator, mean: float, sigma: float, n: int, cap: int) -> np.ndarray:
    """Integer token counts with the given mean (before rounding and the cap), at least 1."""
    mu = math.log(mean) - sigma * sigma / 2  # lognormal mean = exp(mu + sigma²/2)
    return np.clip(np.rint(rng.lognormal(mu, sigma, n)), 1, cap).astype(np.int64)


def synthetic(w: Workload) -> Conversations:
    """ShareGPT-shaped conversations (parameters: the scenario's `workload` section).

    Assumptions, each a parameter: conversations start as a Poisson process (the paper's);
    a share `multi_turn_share` has several turns (paper: 73%), their count 1 + geometric with
    mean `mean_turns_multi` (ours: 7.6 reproduces the paper's ~52K turns per ~9K
    conversations); token counts per turn are lognormal (ours) with means from ShareGPT as
    the vLLM paper reports it; think times are exponential (ours).
    """
    rng = np.random.default_rng(w.seed)
    n = w.conversations
    start = np.cumsum(rng.exponential(1.0 / w.arrival_rate_per_s, n))
    multi = rng.random(n) < w.multi_turn_share
    extra = rng.geometric(1.0 / (w.mean_turns_multi - 1.0), n)
    turns = np.where(multi, np.minimum(1 + extra, w.max_turns), 1).astype(np.int64)
    total = int(turns.sum())
    conv = np.repeat(np.arange(n, dtype=np.int64), turns)
    first = np.concatenate(([0], np.cumsum(turns)[:-1]))
    turn = np.arange(total, dtype=np.int64) - np.repeat(first, turns)
    in_tok = _lognormal(rng, w.input_tokens_mean, w.tokens_sigma, total, w.max_turn_tokens)
    out_tok = _lognormal(rng, w.output_tokens_mean, w.tokens_sigma, total, w.max_turn_tokens)
    think = np.rint(rng.exponential(w.think_time_mean_s, total) * NS_PER_S).astype(np.int64)
    think[first] = 0
    # Nominal arrival: start plus the think times so far (service time is the model's business).
    cum = np.cumsum(think)
    arrival = np.rint(start * NS_PER_S).astype(np.int64)[conv] + cum - np.repeat(cum[first], turns)
    return Conversations(conv, turn, arrival, think, in_tok, out_tok, tuple(str(i) for i in range(n)))


def load_trace(path: str | Path) -> Conversations:
    """Import a trace: a JSON-lines file whose first record has Qwen/Bailian or Mooncake keys is
    read as that request trace (its conversations recorded or reconstructed), anything else as a
    conversation log."""
    path = Path(path)
    request_trace = conversations.read(path)
    if request_trace is not None:
        return request_trace[0]
    return conversation_log.read(path)


def expected_turns(w: Workload) -> float:
    """Turns the synthetic generator makes, on average."""
    return w.conversations * (1 + w.multi_turn_share * (w.mean_turns_multi - 1))


def workload_of(sc: AttentionStoreScenario) -> Conversations:
    """The turns `sc` (an AttentionStoreScenario) serves: its trace file's or the generator's,
    released by its `serving.arrivals` rule."""
    w = sc.workload
    if w.trace_file:
        wl = load_trace(Path(w.trace_file))
    else:
        est = expected_turns(w)
        if est > MAX_TURNS:
            raise ScenarioError(f"too large to simulate: about {est:,.0f} turns (limit {MAX_TURNS:,}); "
                                f"reduce workload.conversations", field="workload.conversations")
        wl = synthetic(w)
    rule = sc.serving.arrivals
    if rule == "interleaved":
        wl = interleaved(wl, w.arrival_rate_per_s, w.seed)
    elif rule == "saturated":
        wl = saturated(wl)
    elif rule == "conversation_poisson":
        wl = conversation_poisson(wl, w.arrival_rate_per_s, w.think_time_median_s, w.think_time_sigma, w.seed)
    return wl
