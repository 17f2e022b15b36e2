"""`kvviz replay --prefix` (issue 21, item 8; issue 30, item 4) against a literal replay of its
semantics with and without pins, the prefix-reuse ceiling, Belady against LRU, and the
block-hash readers' bad lines."""
import json
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

from kvviz.cli import main
from kvviz.replay.prefix import POLICIES, lru_counts, prefix_replay, runs
from kvviz.requests import prompts
from kvviz.requests.prompts import PromptRows

ROOT = Path(__file__).resolve().parents[1]
MOONCAKE = ROOT / "resources" / "traces" / "mooncake_synthetic_trace.jsonl"


def oracle(requests, policy, cap, pin=True):
    """The prefix semantics, literally: requests are lists of block ids -> (hit blocks, hit requests).
    `pin`: the blocks the request has reached cannot go (belady ignores it); belady leaves the
    entering block out when its own next use is the farthest."""
    stream = [b for r in requests for b in r]
    nxt, seen = [0] * len(stream), {}
    for i in range(len(stream) - 1, -1, -1):  # next position of the same block
        nxt[i], seen[stream[i]] = seen.get(stream[i], len(stream)), i
    cache, pos, hit_blocks, hit_requests = OrderedDict(), -1, 0, 0  # block -> next use; least recent first
    parent: dict = {}  # leaf_lru: the block before it in the first request that asks for it
    for r in requests:
        h = 0
        while h < len(r) and r[h] in cache:
            h += 1
        hit_blocks, hit_requests, held = hit_blocks + h, hit_requests + (h > 0), set()
        for i, b in enumerate(r):
            pos += 1
            parent.setdefault(b, r[i - 1] if i else None)
            held.add(b)
            if b in cache:
                if policy in ("lru", "leaf_lru"):
                    cache.move_to_end(b)
                cache[b] = nxt[pos]
                continue
            if len(cache) >= cap:
                if policy == "belady":  # pins ignored
                    v = max(cache, key=cache.get)
                    if nxt[pos] >= cache[v]:
                        continue  # b's own next use is the farthest: b is left out
                else:
                    parents = {parent[c] for c in cache} if policy == "leaf_lru" else ()
                    v = next((v for v in cache if not (pin and v in held) and v not in parents), None)
                    if v is None:  # every resident block is held: b is not inserted
                        continue
                del cache[v]
            cache[b] = nxt[pos]
    return hit_blocks, hit_requests


def as_requests(lists) -> prompts.PromptRequests:
    rows = PromptRows("plain", "generated", block_tokens=16)
    for i, ids in enumerate(lists):
        rows.add(i + 1, float(i), 16 * len(ids), 1, list(ids))
    return rows.finish()


def counts(reqs, policy, caps, pin=True):
    return [(r.hit_blocks, r.hit_requests) for r in prefix_replay(reqs, [policy], caps, pin=pin)]


@pytest.fixture(scope="module")
def bundled():
    reqs = prompts.read(MOONCAKE)
    return reqs, [reqs.hash_ids(i).tolist() for i in range(len(reqs))]


@pytest.mark.parametrize("pin", [True, False])
@pytest.mark.parametrize("policy", ["lru", "fifo"])
def test_bundled_trace_equals_the_oracle(bundled, policy, pin):
    reqs, lists = bundled
    caps = [1, 50, 700, 4000, 20000]  # 1, 50: below its longest request (374 blocks), pins bind
    assert counts(reqs, policy, caps, pin) == [oracle(lists, policy, c, pin) for c in caps]


@pytest.mark.parametrize("policy", ["belady", "leaf_lru"])
def test_bundled_trace_belady_and_leaf_lru_equal_the_oracle(bundled, policy):
    _, lists = bundled
    head = lists[:400]  # the oracle scans the cache per eviction: a part of the trace
    caps = [30, 200, 1500]
    assert counts(as_requests(head), policy, caps) == [oracle(head, policy, c) for c in caps]


def generated(seed):
    """Requests from shared prefixes (system prompts, documents picked by Zipf popularity, sessions
    that grow), with random repeats inside a request, empty requests and unrelated ids."""
    rng = np.random.default_rng(seed)
    chains = [list(rng.integers(0, 60, rng.integers(1, 8))) for _ in range(6)]
    sessions: list[list] = []
    out = []
    for _ in range(int(rng.integers(20, 60))):
        kind = rng.integers(0, 5)
        if kind == 0 and sessions:
            s = sessions[int(rng.integers(0, len(sessions)))]
            s += list(rng.integers(0, 200, rng.integers(1, 4)))
            req = list(s)
        else:
            head = chains[min(int(rng.zipf(1.5)) - 1, len(chains) - 1)]
            req = head + list(rng.integers(0, 200, rng.integers(0, 6)))
            if kind == 1:
                sessions.append(list(req))
        if rng.random() < 0.1:
            req = []
        if req and rng.random() < 0.2:
            req.insert(int(rng.integers(0, len(req))), req[int(rng.integers(0, len(req)))])  # a repeat
        out.append([int(b) for b in req])
    if seed % 3 == 0:  # ids far from 0..k: the dense numbering path
        out = [[b * 2**40 - 2**62 for b in r] for r in out]
    return out


@pytest.mark.parametrize("pin", [True, False])
@pytest.mark.parametrize("policy", POLICIES)
def test_generated_traces_equal_the_oracle(policy, pin):
    for seed in range(40):
        lists = generated(seed)
        caps = [1, 2, 3, 5, 8, 13, 30, 100, None]
        want = [oracle(lists, policy, c or 10**9, pin) for c in caps]
        assert counts(as_requests(lists), policy, caps, pin) == want, (seed, policy, pin)


def test_lru_at_inf_is_the_prefix_reuse_ceiling(bundled):
    """Independently: a block hits at infinite capacity iff it and every block before it in its
    request appeared in an earlier request."""
    reqs, _ = bundled
    req = np.repeat(np.arange(len(reqs)), reqs.hash_counts)
    uniq, inverse = np.unique(reqs.hashes, return_inverse=True)
    first_req = np.full(len(uniq), len(reqs))
    np.minimum.at(first_req, inverse, req)
    seen = first_req[inverse] < req
    hits = requests_hit = 0
    for i in range(len(reqs)):
        s = seen[reqs.hash_offsets[i]:reqs.hash_offsets[i + 1]]
        k = len(s) if s.all() else int(np.argmin(s))
        hits += k
        requests_hit += k > 0
    assert lru_counts(reqs, [None]) == [(hits, requests_hit)]
    assert hits > 0.5 * len(reqs.hashes)  # the trace's reuse is what the figures rest on


def test_belady_at_least_lru_on_the_bundled_trace(bundled):
    reqs, _ = bundled
    caps = [10, 100, 1000, 4000, 15000, None]
    lru, belady = counts(reqs, "lru", caps), counts(reqs, "belady", caps)
    for c, a, b in zip(caps, lru, belady):
        assert b[0] >= a[0], c
    assert belady[2][0] > lru[2][0]  # and clairvoyance shows


def test_runs_join_only_blocks_that_always_travel_together():
    x = np.array([5, 6, 7, 1, 5, 6, 7, 5, 6, 9])
    req = np.array([0, 0, 0, 0, 1, 1, 1, 2, 2, 2])
    # 5 6 always together; 7 follows 6 except in request 2; 1 and 9 alone.
    assert runs(x, req).tolist() == [0, 2, 3, 4, 6, 7, 9]


def run_cli(*argv, capsys=None):
    code = main(["replay", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_json_lists_policy_capacity_and_ratios(capsys):
    code, out, _ = run_cli(MOONCAKE, "--prefix", "--unit", "blocks", "--policy", "lru,belady",
                           "--capacities", "1000,inf", "--json", capsys=capsys)
    assert code == 0
    rows = json.loads(out)
    assert [(r["policy"], r["capacity"]) for r in rows] == [("lru", 1000), ("lru", None), ("belady", 1000),
                                                             ("belady", None)]
    assert all({"block_hit_ratio", "request_hit_ratio"} <= set(r) for r in rows)
    assert rows[1]["block_hit_ratio"] == rows[3]["block_hit_ratio"]  # nothing evicted: one ceiling



def test_a_replay_beyond_the_memory_limit_is_refused_before_reading(capsys, monkeypatch):
    def never(*_a):
        raise AssertionError("the trace was read")
    monkeypatch.setattr("kvviz.replay_prefix_cli._read", never)
    for caps in ("1000,inf", "auto"):
        code, _, err = run_cli(MOONCAKE, "--prefix", "--capacities", caps, "--max-memory-gb", "0.001", capsys=capsys)
        assert code == 2 and "too large to replay" in err and err.count("\n") == 1


PLAIN_JSONL = [{"time": 0, "input_tokens": 40, "output_tokens": 2, "block_tokens": 16, "hash_ids": [1, 2]},
               {"time": 1.5, "input_tokens": 50, "output_tokens": 2, "block_tokens": 16, "hash_ids": [1, 2, 3]}]
PLAIN_CSV = "time,input_tokens,output_tokens,block_tokens,hash_ids\n0,40,2,16,1 2\n1.5,50,2,16,\"[1, 2, 3]\"\n"


def test_plain_jsonl_and_csv_read_alike(tmp_path):
    j = tmp_path / "t.jsonl"
    j.write_text("\n".join(map(json.dumps, PLAIN_JSONL)))
    c = tmp_path / "t.csv"
    c.write_text(PLAIN_CSV)
    a, b = prompts.read(j), prompts.read(c)
    for r in (a, b):
        assert (r.format, r.block_tokens, r.times_s.tolist()) == ("plain", 16, [0, 1.5])
        assert [r.hash_ids(i).tolist() for i in range(2)] == [[1, 2], [1, 2, 3]]
    assert prompts.read(MOONCAKE).block_tokens == 512


MC = {"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1, 2]}
QW = {"chat_id": 1, "parent_chat_id": -1, "timestamp": 0, "input_length": 40, "output_length": 1, "type": "text",
      "hash_ids": [1, 2]}
BAD = {
    "mooncake not json": ([json.dumps(MC), "{oops"], 2, "malformed JSON"),
    "mooncake ids not ints": ([json.dumps(MC), json.dumps({**MC, "hash_ids": [1, "2"]})], 2,
                              "hash_ids: expected a list of integers"),
    "mooncake backwards": ([json.dumps({**MC, "timestamp": 9}), json.dumps(MC)], 2, "timestamp goes backwards"),
    "qwen backwards": ([json.dumps({**QW, "timestamp": 3}), json.dumps({**QW, "chat_id": 2})], 2,
                       "timestamp goes backwards"),
    "qwen ids not a list": ([json.dumps(QW), json.dumps({**QW, "chat_id": 2, "hash_ids": 7})], 2,
                            "hash_ids: expected a list of integers"),
    "plain not json": ([json.dumps(PLAIN_JSONL[0]), "[1, 2"], 2, "malformed JSON"),
    "plain backwards": ([json.dumps(PLAIN_JSONL[1]), json.dumps(PLAIN_JSONL[0])], 2, "time goes backwards"),
    "plain ids floats": ([json.dumps(PLAIN_JSONL[0]), json.dumps({**PLAIN_JSONL[1], "hash_ids": [1.5]})], 2,
                         "hash_ids: expected a list of integers"),
    "plain block size changes": ([json.dumps(PLAIN_JSONL[0]), json.dumps({**PLAIN_JSONL[1], "block_tokens": 32})],
                                 2, "block_tokens 32 differs from line 1's 16"),
    "plain no block size": ([json.dumps({k: v for k, v in PLAIN_JSONL[0].items() if k != "block_tokens"})], 1,
                            "missing field(s) block_tokens"),
    "csv ids not ints": (["time,input_tokens,output_tokens,block_tokens,hash_ids", "0,4,1,16,1 2", "1,4,1,16,1 x"],
                         3, "hash_ids: expected a list of integers"),
    "csv backwards": (["time,input_tokens,output_tokens,block_tokens,hash_ids", "5,4,1,16,1", "", "1,4,1,16,1"],
                      4, "time goes backwards"),
    "csv missing column": (["time,input_tokens,block_tokens,hash_ids", "0,4,16,1"], 1,
                           "lacks column(s) output_tokens"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_line_exits_2_naming_it(case, tmp_path, capsys):
    lines, line, words = BAD[case]
    p = tmp_path / ("t.csv" if case.startswith("csv") else "t.jsonl")
    p.write_text("\n".join(lines) + "\n")
    code, out, err = run_cli(p, "--prefix", "--capacity", "4", capsys=capsys)
    assert code == 2 and out == ""
    assert f"line {line}" in err and words in err and str(p) in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv, words", [
    (["--unit", "blocks", "--capacity", "3"], "add --prefix"),
    (["--prefix", "--unit", "bytes", "--capacity", "3"], "in blocks"),
    (["--prefix", "--capacity", "0"], "at least 1 block"),
    (["--prefix", "--capacity", "3MB"], "expected a number of blocks"),
    (["--prefix", "--capacity", "3", "--policy", "s3fifo"], "unknown policy 's3fifo' for --prefix"),
    (["--prefix", "--capacity", "3", "--sample-rate", "0.1"], "--sample-rate do(es) not apply"),
    # issue 23: unbounded lists were each a replay of the whole stream (5,000 capacities under
    # FIFO ran past 60 s; a policy repeated thousands of times, for hours)
    (["--prefix", "--capacities", ",".join(["5"] * 1001), "--policy", "fifo"], "at most 1,000 capacities (got 1,001)"),
    (["--prefix", "--capacity", "3", "--policy", "fifo,lru,fifo"], "policy fifo listed twice"),
    (["--prefix", "--capacity", "3", "--policy", "opt,belady"], "policy belady listed twice"),
])
def test_bad_options_exit_2(argv, words, capsys):
    code, _, err = run_cli(MOONCAKE, *argv, capsys=capsys)
    assert code == 2 and words in err
