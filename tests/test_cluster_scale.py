"""Memory that grows with the requests, not with instances × requests: an instance's per-job
state holds only the jobs routed to it (jobs.py), and past the compiled caches' budget the
instances run the Python block cache (memory ∝ what it holds) with the same numbers and a note."""
from kvviz.mechanisms.cluster import cache, jobs
from kvviz.mechanisms.cluster.jobs import BATCHER_FIELDS
from kvviz.mechanisms.cluster.metrics import metrics

from .test_cluster_run import cluster, plain_trace, run_of

ROWS = [(0.01 * i, 64 + i % 7, 3 + i % 4, [(i % 5) * 100 + k for k in range(4)]) for i in range(40)]


def test_per_job_state_is_sized_by_the_requests_routed_to_each_instance(tmp_path, monkeypatch):
    sc = cluster(plain_trace(tmp_path / "t.jsonl", ROWS), cluster={"instances": 4},
                 routing={"policy": "round_robin"})
    lists = metrics(run_of(sc))  # under the budget: the serving core's lists
    monkeypatch.setattr(jobs, "LIST_BUDGET", 0)
    sc = cluster(plain_trace(tmp_path / "t.jsonl", ROWS), cluster={"instances": 4},
                 routing={"policy": "round_robin"})
    run = run_of(sc)
    for inst in run.inst:
        assert inst.jobs == list(range(inst.index, 40, 4))  # round robin: every 4th request
        mine = set(inst.jobs)
        for name in BATCHER_FIELDS:
            assert set(getattr(inst.batcher, name)) <= mine, name
        assert set(inst.cache.hits) == mine and set(inst.keep) <= mine and set(inst.arrival) == mine
    got = metrics(run)
    assert run.sparse and got["served"] == 40
    for k in ("mean_ttft_ms", "token_hit_rate", "ttft_p99_ms", "tpot_ms", "per_instance"):
        assert got[k] == lists[k], k


def test_past_the_compiled_budget_the_python_cache_gives_the_same_numbers(tmp_path, monkeypatch):
    sc = cluster(plain_trace(tmp_path / "t.jsonl", ROWS), cluster={"instances": 3},
                 routing={"policy": "prefix_affinity"}, instance={"hbm_cache_tokens": 96})
    want = metrics(run_of(sc))
    assert "notes" not in want or not any("budget" in n or "exceed" in n for n in want["notes"])
    monkeypatch.setattr(cache, "COMPILED_BUDGET", 0)
    run = run_of(sc)
    assert all(type(i.cache.cache).__name__ == "TieredCache" for i in run.inst)
    got = metrics(run)
    assert any("exceed" in n for n in got["notes"])
    for k in ("mean_ttft_ms", "token_hit_rate", "block_hit_ratio", "ttft_p99_ms"):
        assert got[k] == want[k], k
