"""Load or recompute in the timed prefix cache (`store.load_if_faster`, issue 30 item 5): a hit
block whose load would end the prefill later than recomputing it is recomputed, counted apart;
with the rule on, more capacity in any tier never raises mean TTFT."""
import pytest

from kvviz import load_scenario, simulate

from .test_prefix_cache_timed import LAT_NS, blocks_of, run_of, sc_of, ttft


def test_a_hit_slower_to_load_than_to_recompute_is_recomputed_and_counted():
    # r2 = [1] hits block 1 in DRAM: loading takes 10 µs + 8 µs; recomputing 16 tokens of a
    # 1,000-parameter model takes nothing: it recomputes. Still a hit of DRAM (the cache's figure).
    r = run_of(sc_of(load_if_faster=True), blocks_of([[1], [2], [1]], [0, 1, 2]))
    assert r.store.hit_blocks == [0, 1] and r.store.recomputed_blocks == [0, 1]
    assert r.store.recomputed_tokens == [0, 16] and ttft(r, 2) < 1_000
    assert r.store.links[1].bytes == 2 * 16_000  # two write-downs, no load


def test_a_hit_faster_to_load_than_to_recompute_is_loaded():
    # 10 B parameters on 4 GPUs: 16 tokens take ~0.4 ms to recompute, the load 18 µs
    r = run_of(sc_of(load_if_faster=True, params_b=10.0), blocks_of([[1], [2], [1]], [0, 1, 2]))
    assert r.store.recomputed_blocks == [0, 0] and ttft(r, 2) == 18_000


@pytest.mark.parametrize("params_b, layers", [(0.2, 4), (0.3, 4), (0.5, 8), (1.0, 4)])
def test_the_cut_is_the_one_whose_prefill_ends_soonest(params_b, layers):
    # r2 = [1, 2, 3, 4], all four in DRAM (r1 pushed them down): keeping m blocks loads them in
    # one transfer (10 µs + m × 8 µs, 1/layers per layer) while the other 64 − 16m tokens compute,
    # layer by layer. By hand: each m's end, the least of them, ties to the larger m.
    blocks = blocks_of([[1, 2, 3, 4], [5, 6, 7, 8], [1, 2, 3, 4]], [0, 1, 2])
    sc = sc_of(hbm=4, load_if_faster=True, params_b=params_b)
    sc = sc.model_copy(update={"model": sc.model.model_copy(update={"layers": layers})})
    r = run_of(sc, blocks)
    per_token = 2 * params_b * 1e9 / (4 * 312e3 * sc.serving.mfu)  # ns: 2 FLOPs a parameter, no attention
    L = layers

    def end(m):
        c = int((64 - 16 * m) * per_token / L)
        if not m:
            return L * c
        start, t1 = LAT_NS, LAT_NS + m * 16_000 // 2
        return max(L * c, int(start + (t1 - start) / L) + L * c, t1 + c)

    ends = [end(m) for m in range(5)]
    best = max(m for m in range(5) if ends[m] == min(ends))
    assert ttft(r, 2) == ends[best]
    assert r.store.recomputed_blocks == [0, 4 - best] and r.store.hit_blocks == [0, 4]


CASES = {
    # the bundled scenarios, small; the Mooncake trace served by 64 GPUs (with 4 it is overloaded:
    # a queue of minutes, whose mean TTFT moves by 0.06% either way with HBM's size)
    "prefix_cache_tiers": ["workload.requests=40"],
    "prefix_cache_mooncake": ["workload.max_requests=300", "serving.timing=true", "serving.gpus=64",
                              'policies=["lru", "fifo"]', "trace_policy=lru"],
}
# Known exception, measured: prefix_cache_tiers' SSD at half its size gives 359.669 ms, at its size
# 359.913 ms (0.07%). The rule is greedy: a request that loads (here 64 more SSD hits) and the
# write-downs of its admission occupy links that later requests then wait on or recompute past;
# with free writes (write_gbps = 1e6 on every tier) the same sweep is non-increasing.
GREEDY = {("prefix_cache_tiers", "ssd")}


def _mean_ttft(name, sets):
    from .conftest import SCENARIOS
    m = simulate(load_scenario(SCENARIOS / f"{name}.toml", sets)).metrics["policies"]
    return {p: v["mean_ttft_ms"] for p, v in m.items()}


def _tiers():
    from .conftest import SCENARIOS
    for name, sets in sorted(CASES.items()):
        for i, t in enumerate(load_scenario(SCENARIOS / f"{name}.toml", sets).tiers):
            marks = [pytest.mark.xfail(strict=True, reason="greedy rule: see GREEDY")] * ((name, t.name) in GREEDY)
            yield pytest.param(name, i, t.capacity_gb, id=f"{name}-{t.name}", marks=marks)


@pytest.mark.parametrize("name, i, cap", list(_tiers()))
def test_more_capacity_in_any_tier_never_raises_mean_ttft(name, i, cap):
    means = [_mean_ttft(name, CASES[name] + [f"tiers.{i}.capacity_gb={cap * f}"]) for f in (0.5, 1, 2, 4)]
    for p in means[0]:
        seq = [m[p] for m in means]
        assert all(b <= a for a, b in zip(seq, seq[1:])), (p, seq)
