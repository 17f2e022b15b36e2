"""Whether every request can ever run in the batcher's HBM pool (kvviz/serving/batching.py).

The batcher admits a request when its prompt fits beside the running ones, and preempts while
its reply grows, so one whose prompt and reply (and the one token of headroom admission keeps)
exceed the whole pool waits forever: it never gets a first token, the run ends without it, and
its TTFT came out negative (0 minus its arrival) in the means and percentiles. Each mechanism
that serves on the batcher refuses such a workload before its run, naming its own pool's field.
"""
from __future__ import annotations

import numpy as np

from ..errors import ScenarioError


def refuse_unservable(input_tokens: np.ndarray, output_tokens: np.ndarray | None, cap_tok: int, kv: int,
                      source: str, pool: str | None, field: str) -> None:
    """ScenarioError at `field` for the request of `source` needing the most KV when it is more
    than `cap_tok` tokens (`kv` bytes each); `pool` says the pool's size as its field gives it
    (None: the field gives tokens)."""
    if not len(input_tokens):
        return
    out = np.ones(len(input_tokens), dtype=np.int64) if output_tokens is None else np.maximum(output_tokens, 1)
    need = input_tokens + out + 1
    j = int(np.argmax(need))
    if int(need[j]) > cap_tok:
        raise ScenarioError(f"request {j + 1:,} of {source} needs {int(need[j]):,} tokens of KV (prompt "
                            f"{int(input_tokens[j]):,}, reply {int(out[j]):,}, 1 of headroom) = "
                            f"{int(need[j]) * kv / 1e9:.4g} GB, more than the pool's "
                            f"{f'{pool} ({cap_tok:,} tokens)' if pool else f'{cap_tok:,} tokens'}: it would wait forever", field=field)
