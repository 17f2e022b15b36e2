"""Issue 32, item 4: the RAGPulse reader (chunks chained by prefix, side files, two sorted
segments, strict input) and llm-d's shared-prefix generator."""
import json
from pathlib import Path

import numpy as np
import pytest

from kvviz.cli import main
from kvviz.errors import ScenarioError
from kvviz.requests import ragpulse
from kvviz.requests.shared_prefix import SharedPrefixSpec, generate

from .conftest import ROOT

SHARED = ROOT / "resources" / "traces" / "ragpulse" / "0_trace.jsonl"  # bundled
SIDE = {"1_sys_prompt.jsonl": ("sys_prompt_id", {1: 512, 2: 100}),
        "2_passages.jsonl": ("passage_id", {10: 50, 11: 60}),
        "3_history.jsonl": ("history_id", {20: 7}),
        "4_user_input.jsonl": ("user_input_id", {30: 5, 31: 6}),
        "5_web_search.jsonl": ("web_search_id", {40: 9})}


def rec(t, sys=(1,), passages=(), history=(), web=(), user=(30,), n_in=None, n_out=3):
    chunks = {"sys_prompt": list(sys), "passages_ids": list(passages), "history": list(history),
              "web_search": list(web), "user_input": list(user)}
    if n_in is None:
        lengths = {k: v for _, (_, v) in SIDE.items() for k, v in v.items()}
        n_in = sum(lengths[c] for cs in chunks.values() for c in cs) + 8
    return {"timestamp": t, "input_length": n_in, "output_length": n_out, "hash_ids": chunks, "session_id": "s"}


def write(tmp_path, records, side=SIDE, skip=()) -> Path:
    for fname, (key, lengths) in side.items():
        if fname not in skip:
            (tmp_path / fname).write_text("".join(json.dumps({key: k, "token_length": v}) + "\n"
                                                  for k, v in lengths.items()) + "\n")
    p = tmp_path / "0_trace.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in records) + "\n")
    return p


def test_chunks_chain_by_prefix_and_keep_their_lengths(tmp_path):
    p = write(tmp_path, [rec("0", passages=(10, 11)), rec("1", passages=(10,)), rec("2", sys=(2,), passages=(10,))])
    got = ragpulse.read(p)
    # request 1 shares sys 1 and passage 10 with request 0; request 2's passage 10 follows another
    # system prompt, so it is another block
    assert got.hash_ids(0).tolist() == [0, 1, 2, 3]
    assert got.hash_ids(1).tolist() == [0, 1, 4]
    assert got.hash_ids(2).tolist() == [5, 6, 7]
    assert got.hash_tokens.tolist() == [512, 50, 60, 5, 512, 50, 5, 100, 50, 5]
    assert got.format == "ragpulse" and got.output_tokens.tolist() == [3, 3, 3]


def test_concatenation_order_is_system_passages_history_web_user(tmp_path):
    r = rec("0", passages=(10,), history=(20,), web=(40,), user=(30,))
    r["hash_ids"] = dict(reversed(list(r["hash_ids"].items())))  # the file's key order does not matter
    got = ragpulse.read(write(tmp_path, [r]))
    assert got.hash_tokens.tolist() == [512, 50, 7, 9, 5]


def test_two_sorted_segments_are_merged_in_time_keeping_lines(tmp_path):
    p = write(tmp_path, [rec("5"), rec("9"), rec("1"), rec("7")])
    got = ragpulse.read(p)
    assert got.times_s.tolist() == [1.0, 5.0, 7.0, 9.0]
    assert got.lines.tolist() == [3, 1, 4, 2]


@pytest.mark.parametrize("change, field", [
    (lambda r: r.update(timestamp="soon"), "timestamp"),
    (lambda r: r.update(timestamp="-1"), "timestamp"),
    (lambda r: r.pop("output_length"), "output_length"),
    (lambda r: r["hash_ids"].update(passages_ids=[99]), "hash_ids.passages_ids: chunk 99 is not in 2_passages.jsonl"),
    (lambda r: r["hash_ids"].update(images=[1]), "hash_ids.images"),
    (lambda r: r["hash_ids"].update(history="20"), "hash_ids.history"),
    (lambda r: r.update(input_length=3), "input_length"),
])
def test_bad_trace_lines_are_named(tmp_path, change, field):
    bad = rec("3")
    change(bad)
    p = write(tmp_path, [rec("1"), bad])
    with pytest.raises(ScenarioError) as e:
        ragpulse.read(p)
    assert e.value.file == str(p) and e.value.field == "line 2" and field in str(e.value)


def test_a_missing_or_bad_side_file_is_named(tmp_path):
    p = write(tmp_path, [rec("1")], skip=("3_history.jsonl",))
    with pytest.raises(ScenarioError) as e:
        ragpulse.read(p)
    assert e.value.file == str(tmp_path / "3_history.jsonl")
    (tmp_path / "3_history.jsonl").write_text('{"history_id": 20, "token_length": 7}\n{"history_id": 20, '
                                              '"token_length": 8}\n')
    with pytest.raises(ScenarioError) as e:
        ragpulse.read(p)
    assert e.value.field == "line 2" and "given twice" in str(e.value)


def test_cli_replay_prefix_format_ragpulse(tmp_path, capsys):
    p = write(tmp_path, [rec("0", passages=(10, 11)), rec("1", passages=(10,))])
    assert main(["replay", str(p), "--prefix", "--format", "ragpulse", "--capacity", "inf", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)[0]
    # blocks: 4 then 3, of which sys 1 and passage 10 hit: 2 of 7
    assert (out["blocks"], out["hit_blocks"], out["hit_requests"]) == (7, 2, 1)


def test_cli_bad_ragpulse_exits_2_with_one_line(tmp_path, capsys):
    bad = rec("x")
    p = write(tmp_path, [bad])
    assert main(["replay", str(p), "--prefix", "--format", "ragpulse", "--capacity", "inf"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(p) in err and "line 1" in err and "timestamp" in err


def test_object_replay_reads_ragpulse_by_name(tmp_path, capsys):
    p = write(tmp_path, [rec("0", passages=(10,)), rec("1", passages=(10,))])
    assert main(["replay", str(p), "--format", "ragpulse", "--capacity", "1GB", "--json"]) == 0


@pytest.mark.skipif(not SHARED.exists(), reason="the public RAGPulse trace is not on this machine")
def test_public_ragpulse_trace():
    got = ragpulse.read(SHARED)
    assert len(got) == 7106
    assert (np.diff(got.times_s) >= 0).all()
    assert int(got.hash_tokens.max()) <= 512
    assert (got.input_tokens >= np.add.reduceat(got.hash_tokens, got.hash_offsets[:-1])).all()


def spec(**kw):
    base = dict(groups=3, prompts_per_group=2, system_prompt_tokens=40, question_tokens=8, output_tokens=5,
                stages=((50.0, 2.0),), block_tokens=16, seed=7)
    base.update(kw)
    return SharedPrefixSpec(**base)


def test_shared_prefix_groups_share_their_system_prompt_blocks_only():
    got = generate(spec())
    users = 6
    assert len(got) > users * 3
    for i in range(len(got)):
        assert got.input_tokens[i] == 48 and len(got.hash_ids(i)) == 3  # 48 tokens: 16 + 16 + 16
    firsts = {}
    for i in range(users):  # the first cycle: every user once
        firsts.setdefault(got.hash_ids(i)[0], []).append(i)
    assert len(firsts) == 3 and sorted(map(len, firsts.values())) == [2, 2, 2]  # 3 groups of 2
    # the cycle repeats the same prompts in the same order
    assert all((got.hash_ids(i) == got.hash_ids(i + users)).all() for i in range(users))
    # the 3rd block (8 system tokens + the question) is the user's own
    assert len({int(got.hash_ids(i)[2]) for i in range(users)}) == users


def test_shared_prefix_multi_turn_grows_the_context():
    got = generate(spec(multi_turn=True, stages=((100.0, 1.0),)))
    users = 6
    i, j = 0, users  # the same user, rounds 0 and 1
    assert got.input_tokens[j] == got.input_tokens[i] + 8 + 5
    a, b = got.hash_ids(i), got.hash_ids(j)
    assert (b[:len(a) - 1] == a[:-1]).all()  # round 1 extends round 0 (its full blocks)


def test_shared_prefix_poisson_ladder_rates():
    got = generate(spec(stages=((10.0, 100.0), (40.0, 100.0)), seed=3))
    t = got.times_s
    lo, hi = int((t < 100).sum()), int((t >= 100).sum())
    assert 800 < lo < 1200 and 3600 < hi < 4400  # Poisson: ±4 sigma is ±130 and ±250
    assert (np.diff(t) >= 0).all() and t[-1] < 200


@pytest.mark.parametrize("kw, field", [({"groups": 0}, "workload.groups"), ({"stages": ()}, "workload.stages"),
                                       ({"stages": ((1.0, -2.0),)}, "workload.stages[0]")])
def test_shared_prefix_bad_settings_are_named(kw, field):
    with pytest.raises(ScenarioError) as e:
        generate(spec(**kw))
    assert e.value.field == field
