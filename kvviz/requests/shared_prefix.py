"""llm-d's shared-prefix workload (inference-perf's `shared_prefix` data generator, as the llm-d
precise-prefix-routing and tiered-prefix-cache guides run it), as PromptRequests with chained
block hashes.

What it makes, read from inference-perf's generator (kubernetes-sigs/inference-perf,
datagen/shared_prefix_datagen.py; our reading, no code taken):
- `groups` groups, each with its own system prompt of `system_prompt_tokens` random tokens, and
  `prompts_per_group` prompts (users) per group, each its own question of `question_tokens`;
  the groups × prompts list is shuffled once (seeded here);
- request i uses entry i mod (groups × prompts) of that list;
- single turn: the prompt is the group's system prompt then the question;
  `multi_turn`: entry i mod U is a user session, round i div U, whose prompt is the system
  prompt, every earlier round's question and answer, then this round's question (ASSUMPTION,
  ours: each round's question is new text of `question_tokens`);
- every reply is `output_tokens` long (the guides fix it; inference-perf can draw lengths from a
  distribution, not modelled);
- arrivals: a Poisson process at each stage's rate for the stage's duration, stages one after
  another (inference-perf's load stages: a QPS ladder).

Block hashes: a block of `block_tokens` tokens is named by its whole prefix, exactly (a trie of
(parent block, the text pieces inside the block)), so equal prefixes give equal ids and nothing
else does: random token text shares no block across groups.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import ScenarioError
from .prompts import PromptRequests

# a piece of prompt text, named by what it is: ("s", group), ("q", user, round), ("a", user, round)
Segment = tuple[str | int, ...]

SHARED_PREFIX = "shared_prefix"
MAX_GENERATED_REQUESTS = 5_000_000


@dataclass(frozen=True)
class SharedPrefixSpec:
    groups: int
    prompts_per_group: int
    system_prompt_tokens: int
    question_tokens: int
    output_tokens: int
    stages: tuple[tuple[float, float], ...]  # (requests per second, seconds), in order
    block_tokens: int = 16
    multi_turn: bool = False
    seed: int = 1


def check(spec: SharedPrefixSpec, where: str = "workload") -> None:
    """Each field's range, a ScenarioError naming it (the scenario model checks the same)."""
    for name, lo in (("groups", 1), ("prompts_per_group", 1), ("system_prompt_tokens", 0),
                     ("question_tokens", 1), ("output_tokens", 1), ("block_tokens", 1)):
        v = getattr(spec, name)
        if type(v) is not int or v < lo:
            raise ScenarioError(f"expected an integer >= {lo}, got {v!r}", field=f"{where}.{name}")
    if not spec.stages:
        raise ScenarioError("give at least one stage (rate, seconds)", field=f"{where}.stages")
    for i, st in enumerate(spec.stages):
        if len(st) != 2 or not all(isinstance(x, (int, float)) and np.isfinite(x) and x > 0 for x in st):
            raise ScenarioError(f"expected [requests per second > 0, seconds > 0], got {list(st)!r}",
                                field=f"{where}.stages[{i}]")
    expected = sum(r * d for r, d in spec.stages)
    if expected > MAX_GENERATED_REQUESTS:
        raise ScenarioError(f"the stages ask for about {expected:,.0f} requests (at most "
                            f"{MAX_GENERATED_REQUESTS:,})", field=f"{where}.stages")


def arrivals(stages: Sequence[Sequence[float]], rng: np.random.Generator) -> np.ndarray:
    """Poisson arrival times (s) over the stages in order."""
    out, t0 = [], 0.0
    for rate, seconds in stages:
        n = rng.poisson(rate * seconds)  # given n, the times are uniform over the stage
        out.append(t0 + np.sort(rng.uniform(0.0, seconds, n)))
        t0 += seconds
    return np.concatenate(out) if out else np.zeros(0)


class _Trie:
    """Block ids named by their whole prefix: (parent block, pieces inside the block) -> id."""

    def __init__(self, block_tokens: int):
        self.bt = block_tokens
        self.nodes: dict[tuple[int, tuple[tuple[Segment, int, int], ...]], int] = {}

    def blocks(self, segments: list[tuple[Segment, int]]) -> list[int]:
        """The block ids of a prompt made of (segment id, tokens) pieces, the last block partial."""
        bt, nodes = self.bt, self.nodes
        ids: list[int] = []
        pieces: list[tuple[Segment, int, int]] = []
        parent, fill = -1, 0
        for seg, n in segments:
            at = 0
            while at < n:
                take = min(n - at, bt - fill)
                pieces.append((seg, at, take))
                at += take
                fill += take
                if fill == bt:
                    parent = nodes.setdefault((parent, tuple(pieces)), len(nodes))
                    ids.append(parent)
                    pieces, fill = [], 0
        if pieces:
            ids.append(nodes.setdefault((parent, tuple(pieces)), len(nodes)))
        return ids


def generate(spec: SharedPrefixSpec) -> PromptRequests:
    check(spec)
    rng = np.random.default_rng(spec.seed)
    times = arrivals(spec.stages, rng)
    users = spec.groups * spec.prompts_per_group
    order = rng.permutation(users)  # the shuffled groups × prompts list
    trie = _Trie(spec.block_tokens)
    S, Q, A = spec.system_prompt_tokens, spec.question_tokens, spec.output_tokens
    memo: dict[tuple[int, int], list[int]] = {}
    counts: list[int] = []
    flat: list[int] = []
    inputs: list[int] = []
    for i in range(len(times)):
        u = int(order[i % users])
        g = u // spec.prompts_per_group
        r = i // users if spec.multi_turn else 0
        key = (u, r)
        ids = memo.get(key)
        if ids is None:
            # segment ids: ("s", g) the group's system prompt, ("q", u, k) and ("a", u, k) a round's text
            segs: list[tuple[Segment, int]] = [(("s", g), S)] if S else []
            for k in range(r):
                segs += [(("q", u, k), Q), (("a", u, k), A)]
            segs.append((("q", u, r), Q))
            ids = memo[key] = trie.blocks(segs)
        counts.append(len(ids))
        flat.extend(ids)
        inputs.append(S + r * (Q + A) + Q)
    n = len(times)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.array(counts, dtype=np.int64), out=offsets[1:])
    stages = ", ".join(f"{r:g}/s × {d:g} s" for r, d in spec.stages)
    return PromptRequests(SHARED_PREFIX, spec.block_tokens, np.arange(1, n + 1, dtype=np.int64),
                          times.astype(np.float64), np.array(inputs, dtype=np.int64),
                          np.full(n, A, dtype=np.int64), offsets, np.array(flat, dtype=np.int64),
                          source=f"shared-prefix generator (seed {spec.seed}: {spec.groups} groups × "
                                 f"{spec.prompts_per_group} prompts, {n:,} requests over {stages})")
