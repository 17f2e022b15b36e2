"""The timed prefix-cache engine (serving.timing = true): hand-computed TTFTs, the FIFO link
rule, pins, and the untimed engine's hits when no two requests overlap."""
import numpy as np
import pytest

from kvviz import load_scenario, simulate
from kvviz.mechanisms.prefix_cache.engine import prepare, replay
from kvviz.mechanisms.prefix_cache.model import PrefixCacheScenario
from kvviz.mechanisms.prefix_cache.timed import Run
from kvviz.mechanisms.prefix_cache.workload import Blocks
from kvviz.serving.links import Link, Prefetch

KV, BT = 1000, 16          # 1,000 B per token, 16-token blocks: 16,000 B a block
LAT_NS, READ = 10_000, 2.0  # DRAM link: 10 µs, 2 GB/s = 2 B/ns


def sc_of(hbm=1, dram=10, load_if_faster=False, params_b=1e-6, **serving):
    # the link tests: recomputing is nearly free here (1,000 parameters), so they load every hit
    return PrefixCacheScenario.model_validate({
        "kind": "prefix_cache", "policies": ["lru"],
        "model": {"preset": "custom", "kv_bytes_per_token": KV, "layers": 1, "params_b": params_b, "d_model": 0},
        "tiers": [{"name": "hbm", "capacity_blocks": hbm},
                  {"name": "dram", "capacity_blocks": dram, "read_latency_us": LAT_NS / 1e3, "read_gbps": READ,
                   "write_latency_us": 0, "write_gbps": 1e6}],
        "serving": {"timing": True, **serving}, "store": {"load_if_faster": load_if_faster}})


def blocks_of(requests, times, out=None):
    ids = np.array([b for r in requests for b in r], dtype=np.int64)
    off = np.r_[0, np.cumsum([len(r) for r in requests])].astype(np.int64)
    n = len(requests)
    return Blocks(ids, off, np.array([len(r) * BT for r in requests], dtype=np.int64), np.array(times, float),
                  BT, "test", np.array(out or [1] * n, dtype=np.int64))


def run_of(sc, blocks, log=False, prefetch=False):
    prep = prepare(blocks, {"lru"}, "always")
    caps = [t.capacity_blocks for t in sc.tiers]
    r = Run(sc, blocks, prep, caps, ["lru"] * len(caps), prefetch, record=False)
    if log:
        r.store.log = []
    return r.run()


def ttft(r, j):
    return r.batcher.first_token[j] - r.arrival[j]


def test_one_dram_hit_takes_latency_plus_bytes_over_bandwidth():
    # r0 = [1] fills HBM; r1 = [2] pushes 1 down to DRAM (write-back); r2 = [1] hits it in DRAM,
    # computes nothing (its whole prompt hits) and waits for one block over the link.
    r = run_of(sc_of(), blocks_of([[1], [2], [1]], [0, 1, 2]))
    assert r.store.hit_blocks == [0, 1]
    assert ttft(r, 2) == LAT_NS + 16_000 / READ == 18_000


def test_two_loads_on_one_link_queue_fifo():
    # r3 and r4 arrive together, each hitting one DRAM block: the link serves r3's load, then
    # r4's: r4's first token comes at twice r3's (a burst is slower than one miss).
    r = run_of(sc_of(), blocks_of([[1], [2], [3], [1], [2]], [0, 1, 2, 3, 3]))
    assert r.store.hit_blocks == [0, 2]
    assert ttft(r, 3) == 18_000 and ttft(r, 4) == 2 * 18_000


def test_link_fifo_rule():
    lk = Link("dram↔hbm", 2.0, 1.0, 10, 0)
    assert lk.book(100, 0, False) == (0, 60) and lk.book(100, 0, False) == (60, 120)
    assert lk.book(100, 500, True) == (500, 600) and lk.bytes == 300 and lk.busy_ns == 220


def demand_first_link(landed):
    # 2 B/ns reads, 10 ns latency, 100-byte pieces: a piece takes 60 ns, 50 streamed on
    return Link("ssd↔hbm", 2.0, 1.0, 10, 0, "demand_first", 100, lambda pf, b, t: landed.append((b, t)),
                lambda *a: None)


def test_demand_first_a_demand_load_waits_only_for_the_piece_in_flight():
    landed = []
    lk = demand_first_link(landed)
    lk.enqueue(Prefetch(0, [7, 8, 9], 0), 0)  # 3 blocks queued at 0
    lk.advance(70)  # piece 7 ran 0-60; piece 8 streams 60-110 and is in flight at 70
    assert lk.book(100, 70, False) == (110, 170)  # waits 40 ns (piece 8's rest), not for piece 9
    lk.drain()  # piece 9 resumes after the demand load, paying the latency again
    assert landed == [(7, 60), (8, 110), (9, 230)]
    assert lk.bytes == 400 and lk.busy_ns == 60 + 50 + 60 + 60
    # fifo: the prefetch booked first (one transfer, 160 ns) delays the demand load by all of it
    f = Link("ssd↔hbm", 2.0, 1.0, 10, 0)
    f.book(300, 0, False)
    assert f.book(100, 70, False) == (160, 220)


def test_demand_first_a_demand_load_on_an_idle_link_starts_at_once():
    landed = []
    lk = demand_first_link(landed)
    lk.enqueue(Prefetch(0, [1, 2], 1000), 1000)  # the prefetch is queued after the demand load's time
    lk.advance(500)
    assert lk.book(100, 500, False) == (500, 560) and landed == []
    assert lk.take(lk.queue[0], 2) and not lk.take(lk.queue[0], 2)  # block 2 is needed now: it leaves
    lk.drain()
    assert landed == [(1, 1060)]


@pytest.mark.parametrize("seed", range(5))
def test_demand_first_no_foreground_transfer_waits_for_more_than_one_piece(seed):
    rng = np.random.default_rng(seed)
    lk = demand_first_link([])
    piece_ns, t, fg_free = 60, 0, 0
    for i in range(300):
        t += int(rng.integers(0, 80))
        if rng.random() < 0.4:
            lk.enqueue(Prefetch(i, range(int(rng.integers(1, 6))), t), t)
        else:
            lk.advance(t)
            nbytes = int(rng.integers(1, 400))
            t0, t1 = lk.book(nbytes, t, bool(rng.random() < 0.3))
            assert t0 - max(t, fg_free) <= piece_ns
            fg_free = t1


def test_without_prefetch_the_link_rules_give_identical_runs():
    a = run_of(sc_of(), blocks_of([[1], [2], [3], [1], [2]], [0, 1, 2, 3, 3]))
    b = run_of(sc_of().model_copy(update={"links": sc_of().links.model_copy(update={"rule": "demand_first"})}),
               blocks_of([[1], [2], [3], [1], [2]], [0, 1, 2, 3, 3]))
    assert a.batcher.first_token == b.batcher.first_token and a.store.hit_blocks == b.store.hit_blocks


def random_requests(seed, n=150):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        root = int(rng.integers(6)) * 100
        out.append([root + i for i in range(int(rng.integers(1, 12)))])
    return out


@pytest.mark.parametrize("seed", range(4))
def test_spaced_requests_give_the_untimed_hits(seed):
    reqs = random_requests(seed)
    blocks = blocks_of(reqs, np.arange(len(reqs)) * 100.0)  # 100 s apart: never two at once
    sc = sc_of(hbm=5, dram=12)
    r = run_of(sc, blocks)
    u = replay(prepare(blocks, {"lru"}, "always"), [5, 12], ["lru", "lru"], False, False, "always")
    assert r.store.hit_blocks == u.hit_blocks and r.store.hit_tokens == u.hit_tokens
    assert r.store.written == u.written and r.store.evicted == u.evicted
    assert r.store.hits == u.hits.tolist()


@pytest.mark.parametrize("seed", range(3))
def test_pinned_blocks_are_never_evicted_and_long_requests_complete(seed):
    reqs = random_requests(seed, 200) + [list(range(5000, 5040))]  # 40 blocks: longer than every tier
    blocks = blocks_of(reqs, np.sort(np.random.default_rng(seed).uniform(0, 0.05, len(reqs))),
                       out=[20] * len(reqs))
    r = run_of(sc_of(hbm=6, dram=20), blocks, log=True)
    running: dict = {}
    evictions = 0
    for e in r.store.log:
        if e[0] == "admit":
            running[e[1]] = set(reqs[e[1]])
            current = e[1]
        elif e[0] == "finish":
            running.pop(e[1])
        elif e[1] == 0:
            evictions += 1
            assert not any(e[2] in b for j, b in running.items() if j != current)
    assert evictions > 0 and len(r.batcher.batch) == 0
    assert all(t > 0 for t in r.batcher.end)  # every request, the 40-block one too, completed


def test_prefetch_raises_the_upper_tiers_hit_share_on_the_bundled_scenario(bundled_tiers):
    m = simulate(bundled_tiers).metrics["policies"]
    assert m["lru_prefetch"]["dram_or_above_hit_share"] > m["lru"]["dram_or_above_hit_share"]
    assert m["lru_prefetch"]["token_hit_rate"] == pytest.approx(m["lru"]["token_hit_rate"], abs=0.02)
    # demand loads first (the scenario's links.rule): prefetch in the links' idle time does not slow TTFT
    assert m["lru_prefetch"]["ttft_p50_ms"] < m["lru"]["ttft_p50_ms"]


@pytest.fixture
def bundled_tiers():
    from .conftest import SCENARIOS
    return load_scenario(SCENARIOS / "prefix_cache_tiers.toml")



def test_belady_gap_in_timed_mode_is_the_timed_belady_run_minus_the_policy():
    # with Belady listed its own run is the reference; without, one more run gives the same one
    base = {"kind": "prefix_cache", "workload": {"requests": 60, "documents": 6, "seed": 3, "block_tokens": 256},
            "tiers": [{"name": "hbm", "capacity_blocks": 4}, {"name": "dram", "capacity_blocks": 12}],
            "serving": {"timing": True}}
    both = simulate(PrefixCacheScenario.model_validate({**base, "policies": ["lru", "belady"]})).metrics
    alone = simulate(PrefixCacheScenario.model_validate({**base, "policies": ["lru"]})).metrics
    p = both["policies"]
    assert list(p) == ["lru", "belady"] and p["belady"]["belady_gap"] == 0.0
    assert p["lru"]["belady_gap"] == p["belady"]["token_hit_rate"] - p["lru"]["token_hit_rate"] > 0
    assert alone["policies"]["lru"]["belady_gap"] == p["lru"]["belady_gap"]
    assert alone["belady_token_hit_rate"] == both["belady_token_hit_rate"] == p["belady"]["token_hit_rate"]


# --- issue 23: inputs that made no sense came out as numbers ----------------------------------------

def test_a_request_the_running_pool_never_holds_is_refused():
    """A prompt and reply beyond serving.running_kv_gb waited forever: no first token, and the
    TTFT percentiles came out negative (0 minus the arrival: -76,572 ms p50 with agent steps of
    1e5 tokens). Now one line naming the field; one token less fits and runs."""
    from kvviz.errors import ScenarioError
    from kvviz.mechanisms.prefix_cache.timed import check_every_request_fits
    blocks = blocks_of([[1, 2, 3], [1, 2]], [0.0, 1.0], out=[5, 1])   # request 1: 48 + 5 + 1 = 54 tokens
    with pytest.raises(ScenarioError) as e:
        check_every_request_fits(sc_of(running_kv_gb=53 * KV / 1e9), blocks)
    assert e.value.field == "serving.running_kv_gb" and "request 1 of test needs 54 tokens" in e.value.message
    check_every_request_fits(sc_of(running_kv_gb=54 * KV / 1e9), blocks)


def test_every_ttft_of_a_timed_run_is_positive_at_a_tight_pool():
    sc = load_scenario("scenarios/prefix_cache_tiers.toml")
    sc = sc.model_copy(update={"workload": sc.workload.model_copy(update={"requests": 30}),
                               "serving": sc.serving.model_copy(update={"running_kv_gb": 30.0})})
    try:
        pols = simulate(sc).metrics["policies"]
    except Exception as e:  # noqa: BLE001 - a refusal is the other right answer
        from kvviz.errors import ScenarioError
        assert isinstance(e, ScenarioError) and e.field == "serving.running_kv_gb"
        return
    for m in pols.values():
        assert m["ttft_p50_ms"] > 0 and m["mean_ttft_ms"] > 0 and m["tpot_ms"] > 0


def test_the_generator_estimate_counts_agent_steps_and_the_generator_stops_at_its_limit():
    """agent_step_tokens = 1e6 on every session was estimated at 0.2 MB and generated for 6 min
    before MAX_LOOKUPS refused it; now the estimate counts agent steps, and the generator itself
    stops once past the limit."""
    from kvviz.errors import ScenarioError
    from kvviz.mechanisms import mechanisms
    from kvviz.mechanisms.prefix_cache.generator import generate
    sc = load_scenario("scenarios/prefix_cache_tiers.toml")
    w = sc.workload.model_copy(update={"agent_share": 1.0, "agent_step_tokens": 1e6})
    est = mechanisms()["prefix_cache"].estimate(sc.model_copy(update={"workload": w}))
    assert est.bytes > 4e9  # the default limit refuses it before anything runs
    with pytest.raises(ScenarioError) as e:
        generate(w, 16, max_lookups=100_000)
    assert e.value.field == "workload.requests" and "limit 100,000" in e.value.message
    small = sc.workload.model_copy(update={"requests": 20})
    assert len(generate(small, 16, max_lookups=10**9)[0]) == len(generate(small, 16)[0])
