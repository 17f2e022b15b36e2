"""Engram addressing: which embedding rows a decode step reads, from token IDs alone.

For each sequence and each decode step, the newest input token closes one suffix n-gram per
order n (e.g. a bigram and a trigram). Each order has several hash heads; head h of order n
maps the n-gram to a row of its own table, whose size is a prime (distinct per head, so two
heads rarely collide on the same n-grams):

    z = (XOR_j  token[t - j] * m[n, h, j])  mod  prime[n, h]       j = 0..n-1

m are odd multipliers drawn from a seeded generator (one set per Engram layer, since each
layer has its own tables). Products stay below 2**62 (token IDs < 2**22, m < 2**40), so the
int64 arithmetic never wraps. This is the multiplicative-XOR family; the exact hash of a
given model is not needed to count reads, only a good spread and determinism.

The seed's point is that none of this needs the GPU's hidden state: the CPU can do it at the
very start of the step.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import numpy.typing as npt

from ...errors import ScenarioError
from ...io import read_text

MAX_VOCAB = 1 << 22   # keeps token * multiplier below 2**62
_MULT_BITS = 40


def _is_prime(n: int) -> bool:
    """Deterministic Miller-Rabin for n < 3.3e24 (these bases suffice)."""
    if n < 2:
        return False
    small = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    for p in small:
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for a in small:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


@lru_cache(maxsize=64)  # a pure function of its arguments; sweeps ask the same thing often
def distinct_primes(at_least: int, count: int) -> tuple[int, ...]:
    """The `count` smallest primes >= at_least: one table size per hash head."""
    out: list[int] = []
    n = max(2, at_least)
    while len(out) < count:
        if _is_prime(n):
            out.append(n)
        n += 1
    return tuple(out)


def zipf_tokens(batch: int, length: int, vocab: int, a: float, seed: int) -> npt.NDArray[np.int64]:
    """(batch, length) token IDs drawn from a Zipf law over the vocabulary (rank 1 = ID 0).
    Draws beyond the vocabulary wrap around, which keeps every ID valid."""
    rng = np.random.default_rng(seed)
    return (rng.zipf(a, size=(batch, length)) - 1) % vocab


def parse_token_file(path: str) -> list[list[int]]:
    """One sequence per line: integers separated by spaces or commas; `#` starts a comment;
    blank lines are skipped. Raises ValueError naming the line on anything else."""
    try:
        text = read_text(path, "token file")
    except ScenarioError as e:  # validation reports it at the `file` field
        raise ValueError(f"{e.message}: {path}") from None
    seqs = []
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].replace(",", " ").strip()
        if not line:
            continue
        row = []
        for k, word in enumerate(line.split(), 1):
            try:
                row.append(int(word))
            except ValueError:  # not quoted: a scenario may name any file, and must not show it
                raise ValueError(f"{path}: line {lineno}: item {k} is not a token ID (expected "
                                 "integers separated by spaces or commas)") from None
        seqs.append(row)
    if not seqs:
        raise ValueError(f"{path}: no token IDs in the file")
    return seqs


def multipliers(hash_seed: int, layer: int, n_orders: int, heads: int, max_order: int) -> npt.NDArray[np.int64]:
    """Odd multipliers m[order, head, j] for one Engram layer (its own tables, its own hash)."""
    rng = np.random.default_rng([hash_seed, layer])
    return rng.integers(1, 1 << _MULT_BITS, size=(n_orders, heads, max_order), dtype=np.int64) | 1


def hash_rows(tokens: npt.NDArray[np.int64], steps: int, orders: tuple[int, ...], mult: npt.NDArray[np.int64],
              primes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Row index inside its table for every lookup: shape (steps, batch, n_orders, heads).

    tokens: (batch, max_order - 1 + steps); step s's new token is column max_order - 1 + s.
    mult: (n_orders, heads, max_order); primes: (n_orders, heads).
    """
    first = max(orders) - 1
    cols = first + np.arange(steps)
    out = np.empty((steps, tokens.shape[0], len(orders), primes.shape[1]), dtype=np.int64)
    for o, n in enumerate(orders):
        h = np.zeros((primes.shape[1], tokens.shape[0], steps), dtype=np.int64)  # (head, batch, step)
        for j in range(n):  # XOR in token t-j times its multiplier, for all heads at once
            h ^= tokens[None, :, cols - j] * mult[o, :, j, None, None]
        out[:, :, o, :] = (h % primes[o][:, None, None]).transpose(2, 1, 0)
    return out
