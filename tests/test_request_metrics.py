"""The serving core's per-request latency figures (kvviz/serving/request_metrics.py), which
AttentionStore, the prefix cache's timed engine and the cluster report under their own names."""
import numpy as np

from kvviz.serving.request_metrics import mean, percentile, tpot_ms, ttft_ms


def test_ttft_and_tpot_by_hand():
    arr = np.array([0, 1_000_000, 2_000_000])
    first = np.array([5_000_000, 3_000_000, 2_500_000])
    end = np.array([9_000_000, 3_000_000, 6_500_000])
    reply = np.array([5, 1, 3])
    assert ttft_ms(arr, first).tolist() == [5.0, 2.0, 0.5]
    assert tpot_ms(first, end, reply).tolist() == [1.0, 2.0]  # 4 ms over 4 tokens; 4 ms over 2; the 1-token reply left out
    served = np.array([True, True, False])
    assert ttft_ms(arr, first, served).tolist() == [5.0, 2.0]
    assert tpot_ms(first, end, reply, served).tolist() == [1.0]
    assert mean(ttft_ms(arr, first)) == 2.5 and percentile(np.array([1.0, 2.0, 3.0]), 50) == 2.0


def test_no_request_gives_none():
    none = np.zeros(0)
    assert mean(none) is None and percentile(none, 99) is None
    assert tpot_ms([1], [2], [1]).size == 0
