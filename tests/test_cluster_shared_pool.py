"""The shared HBM pool (instance.hbm_pool = shared, vLLM's one pool of KV blocks): the tiered
cache's set_cap (both caches, by hand), a request admitted on the blocks it lacks while another
holds its prefix, and cached blocks giving way to a running request's growth."""
import pytest

from kvviz.serving import native
from kvviz.serving.tiered_cache import TieredCache, compiled_cache

from .test_cluster_run import cluster, plain_trace, run_of


def caches():
    ids, tok = [0, 1, 2, 3], [16] * 4
    out = [TieredCache(ids, tok, [4, 4], ["lru", "lru"])]
    mod, _ = native.block_cache()
    if mod is not None:
        out.append(compiled_cache(mod, ids, tok, [4, 4], ["lru", "lru"]))
    return out


@pytest.mark.parametrize("i", [0, 1])
def test_set_cap_evicts_lru_first_writes_down_and_spares_pins(i):
    got = caches()
    if i >= len(got):
        pytest.skip("the compiled block cache is not built here")
    c = got[i]
    c.place_request(0, 0, 4, 0, [])    # blocks 0..3 in HBM, pinned by request 0
    c.set_cap(0, 1)                    # all pinned: nothing can leave
    assert list(c.size) == [4, 0]
    c.finish(0)
    c.set_cap(0, 1)                    # LRU: 0, 1, 2 leave, each written down to tier 1
    assert list(c.size) == [1, 3] and list(c.written) == [4, 3] and list(c.evicted)[0] == 3
    assert c.matched([c.ids[3]]) == [1, 0] and c.matched([c.ids[0]]) == [0, 1]


def pool(kind: str) -> dict:
    # 96 tokens = 6 blocks of 16. shared: one pool; split: 96 tokens of running KV
    # (0.0315 GB / 327,680 B a token = 96) beside 6 blocks of cache
    if kind == "shared":
        return {"hbm_pool": "shared", "hbm_cache_tokens": 96}
    return {"hbm_pool": "split", "hbm_cache_tokens": 96, "running_kv_gb": 0.0315}


@pytest.mark.parametrize("kind", ["shared", "split"])
def test_a_request_is_admitted_on_the_blocks_it_lacks(tmp_path, kind):
    # A (blocks 1-4, 64 tokens, 20 reply tokens) is decoding when B (blocks 1, 2, 3, 5) arrives
    # 50 ms later (A has ~2 tokens more by then; a context never outgrows the pool: 84 ≤ 96). Shared: B needs 64 − 48 (blocks 1-3, A holds
    # them) = 16 tokens: 66 + 16 + 2 (a token of growth each) = 84 ≤ 96, so it starts at once.
    # Split: 66 + 64 + 2 > 96: B waits for A's end.
    rows = [(0.0, 64, 20, [1, 2, 3, 4]), (0.05, 64, 20, [1, 2, 3, 5])]
    run = run_of(cluster(plain_trace(tmp_path / "t.jsonl", rows), instance=pool(kind)))
    b = run.inst[0].batcher
    assert run.inst[0].cache.hits[1] == 3 and b.end[1] > 0
    if kind == "shared":
        assert b.first_token[1] < b.end[0]
        assert b.tok_run == 0 and not run.inst[0].cache.refs  # every credit given back
    else:
        assert b.first_admit[1] >= b.end[0]


@pytest.mark.parametrize("kind, hit", [("shared", 0), ("split", 4)])
def test_cached_blocks_give_way_to_a_running_requests_growth(tmp_path, kind, hit):
    # A (blocks 1-4, one reply token) ends: its 4 blocks stay cached. C (blocks 11, 12, 32
    # tokens) then decodes 60 tokens (~24 ms each); D (A's prompt again) arrives at 2 s, C's
    # context ~73 tokens by then. Shared: the HBM tier may hold C's 2 blocks + (96 − 72) // 16 = 1 more,
    # so A's blocks leave least recently used first (block 1 first): D hits nothing.
    # Split: the cache is apart from C's running KV, and D hits A's 4 blocks.
    rows = [(0.0, 64, 1, [1, 2, 3, 4]), (1.0, 32, 60, [11, 12]), (2.0, 64, 1, [1, 2, 3, 4])]
    run = run_of(cluster(plain_trace(tmp_path / "t.jsonl", rows), instance=pool(kind)))
    assert [run.inst[0].cache.hits[j] for j in range(3)] == [0, 0, hit] and run.inst[0].batcher.end[2] > 0
