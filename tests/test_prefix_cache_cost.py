"""`[cost]` on prefix-cache runs: cost_per_hour is the hand sum of the instance, each tier's GB
and each link, cost_per_million_tokens follows the run's own throughput."""
import pytest

from kvviz import simulate
from kvviz.mechanisms.prefix_cache.model import PrefixCacheScenario


def sc_of(timing=True, **cost):
    return PrefixCacheScenario.model_validate({
        "kind": "prefix_cache", "policies": ["lru"],
        "workload": {"requests": 20, "session_rate_per_s": 1.0, "documents": 5},
        "model": {"preset": "mistral-7b"},
        "tiers": [{"name": "hbm", "capacity_gb": 2}, {"name": "dram", "capacity_gb": 10, "read_gbps": 52},
                  {"name": "ssd", "capacity_gb": 100}],
        "serving": {"timing": timing}, "cost": cost})


def test_cost_per_hour_is_the_sum_of_its_parts():
    prices = dict(gpu_usd_per_gpu_hour=2.0, hbm_usd_per_gb_hour=0.5, dram_usd_per_gb_hour=0.01,
                  ssd_usd_per_gb_hour=0.001, dram_link_usd_per_hour=0.25, ssd_link_usd_per_hour=0.125)
    r = simulate(sc_of(**prices))
    m = r.metrics_dict()
    gb = {k: t["capacity_gb"] for k, t in m["tiers"].items()}  # whole blocks: a little under the GB given
    # 4 GPUs; DRAM at 52 GB/s is two host links of 26 GB/s; one SSD link (5 GB/s)
    want = 4 * 2.0 + gb["hbm"] * 0.5 + gb["dram"] * 0.01 + 2 * 0.25 + gb["ssd"] * 0.001 + 1 * 0.125
    lru = m["policies"]["lru"]
    assert lru["cost_per_hour"] == pytest.approx(want, rel=1e-12)
    assert m["cost"]["per_hour"]["total"] == lru["cost_per_hour"]
    assert m["cost"]["per_hour"]["dram_links"] == pytest.approx(0.5)
    tokens_per_hour = lru["throughput_tokens_per_s"] * 3600
    assert lru["cost_per_million_tokens"] == pytest.approx(want / tokens_per_hour * 1e6, rel=1e-12)


def test_a_dearer_price_raises_the_cost_and_not_the_latency():
    cheap, dear = (simulate(sc_of(dram_usd_per_gb_hour=p)).metrics_dict()["policies"]["lru"] for p in (0.0, 1.0))
    assert dear["cost_per_hour"] > cheap["cost_per_hour"] + 9  # 10 GB at $1 more
    assert dear["ttft_p99_ms"] == cheap["ttft_p99_ms"]


def test_the_untimed_replay_has_a_cost_per_hour_but_no_tokens_per_hour():
    lru = simulate(sc_of(timing=False)).metrics_dict()["policies"]["lru"]
    assert lru["cost_per_hour"] > 0 and lru["cost_per_million_tokens"] is None


def test_every_price_names_its_source_or_says_it_is_ours():
    from kvviz.mechanisms.prefix_cache.model import Cost
    for name, f in Cost.model_fields.items():
        d = f.description
        assert "ASSUMPTION, ours" in d or "list price" in d or "listed" in d, name
