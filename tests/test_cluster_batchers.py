"""The cluster's batchers (batchers.py) and per-job arrays (jobs.py) change the cost of a run, not
its numbers: a decode segment cut short by an arrival moves its end in place (Loop.sooner)
where the serving core pushes a new end and skips the old one, and an instance's per-job
columns are arrays where past the lists' budget they are dicts; every metric is the same."""
import pytest

from kvviz.mechanisms.cluster import batchers, jobs
from kvviz.mechanisms.cluster.metrics import metrics
from kvviz.serving.batching import Batcher

from .test_cluster_run import cluster, plain_trace, run_of

# dense arrivals with long replies: arrivals keep cutting running decode segments short
ROWS = [(0.004 * i, 64 + 16 * (i % 5), 20 + (7 * i) % 41, [(i % 6) * 100 + k for k in range(4 + i % 3)])
        for i in range(120)]


@pytest.mark.parametrize("split", [0, 2])
def test_in_place_segment_ends_and_arrays_give_the_cores_numbers(tmp_path, monkeypatch, split):
    def scenario():
        return cluster(plain_trace(tmp_path / "t.jsonl", ROWS), cluster={"instances": 4, "prefill_instances": split},
                       routing={"policy": "prefix_affinity"}, instance={"max_batch": 8})
    run = run_of(scenario())
    assert not run.sparse
    want = metrics(run)
    with monkeypatch.context() as m:  # the core's lazy versions, per-job dicts
        m.setattr(batchers.ClusterBatcher, "_schedule_segment", Batcher._schedule_segment)
        m.setattr(jobs, "LIST_BUDGET", 0)
        ref = run_of(scenario())
    assert ref.sparse
    assert metrics(ref) == want
    cut = ref.loop.processed - run.loop.processed  # the superseded ends the core popped and skipped
    assert cut > 0
    assert all(type(i.batcher.end).__name__ == "array" for i in run.inst)


def _core_paths(m: pytest.MonkeyPatch) -> None:
    """The P/D batchers' hot paths undone: the core's _prefill_done on a prefill instance; on a
    decode instance the core's _iterate and _segment_end, the held KV admitted by _held then
    the core's _iterate (what DecodeBatcher's _prefill did before its paths were inlined)."""
    def held_then_core(self, jobs, S):
        if not self._held(jobs, S):
            Batcher._prefill(self, jobs, S)
            return
        Batcher._iterate(self)

    m.setattr(batchers.PrefillBatcher, "_prefill_done", Batcher._prefill_done)
    m.setattr(batchers.DecodeBatcher, "_iterate", Batcher._iterate)
    m.setattr(batchers.DecodeBatcher, "_segment_end", Batcher._segment_end)
    m.setattr(batchers.DecodeBatcher, "_prefill", held_then_core)


@pytest.mark.parametrize("running_kv_gb", [100.0, 0.1])  # 0.1: ~300 tokens, decode instances preempt
def test_prefill_and_decode_paths_inlined_give_the_cores_numbers(tmp_path, monkeypatch, running_kv_gb):
    def scenario():
        return cluster(plain_trace(tmp_path / "t.jsonl", ROWS), cluster={"instances": 4, "prefill_instances": 2},
                       routing={"policy": "prefix_affinity"}, instance={"max_batch": 8, "running_kv_gb": running_kv_gb})
    want = metrics(run_of(scenario()))
    with monkeypatch.context() as m:
        _core_paths(m)
        got = metrics(run_of(scenario()))
    assert got == want
    preempted = sum(i["preemptions"] for i in want["per_instance"])
    assert (preempted > 0) == (running_kv_gb < 1)
