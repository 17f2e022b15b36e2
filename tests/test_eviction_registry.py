"""One eviction-policy registry (kvviz/serving/eviction/). Adding a policy is one file plus one
registration line: the how-to's example (docs/examples/mru.py, shown on
docs/extend/eviction-policy.md) is registered here exactly as written there and runs through `kvviz run` on a small prefix-cache scenario and through
`kvviz replay --prefix`, with the same counts; a mechanism refuses a policy whose facts it
cannot give, by name."""
import json
import sys
import types

import pytest

from kvviz.cli import main
from kvviz.serving import eviction
from kvviz.serving.eviction import EVICTION_POLICIES

from .conftest import ROOT

MOONCAKE = ROOT / "resources" / "traces" / "mooncake_synthetic_trace.jsonl"


HOWTO = ROOT / "docs" / "extend" / "eviction-policy.md"


def readme_example() -> str:
    """The how-to's example file, which the page includes whole."""
    assert '--8<-- "docs/examples/mru.py"' in HOWTO.read_text()
    return (ROOT / "docs" / "examples" / "mru.py").read_text()


@pytest.fixture
def mru():
    """The how-to's file, as kvviz/serving/eviction/mru.py (its one registration line run:
    importing it registers it); unregistered afterwards."""
    name = "kvviz.serving.eviction.mru"
    mod = types.ModuleType(name)
    mod.__package__ = "kvviz.serving.eviction"
    sys.modules[name] = mod
    try:
        exec(compile(readme_example(), "docs/examples/mru.py", "exec"), mod.__dict__)
        assert EVICTION_POLICIES["mru"] is mod.Mru
        yield mod.Mru
    finally:
        EVICTION_POLICIES.pop("mru", None)
        sys.modules.pop(name, None)


def test_the_howto_shows_the_registration_line():
    text = HOWTO.read_text()
    assert "from . import mru  # noqa: E402,F401" in text
    init = (ROOT / "kvviz" / "serving" / "eviction" / "__init__.py").read_text()
    for name in EVICTION_POLICIES:  # every shipped policy is registered by such a line
        assert f"from . import {name}  # noqa: E402,F401" in init


def test_a_toy_policy_runs_through_kvviz_run_and_replay_prefix(mru, tmp_path, capsys):
    head = tmp_path / "head.jsonl"
    head.write_text("".join(MOONCAKE.read_text().splitlines(keepends=True)[:300]))
    caps = [40, 400]
    code = main(["replay", str(head), "--prefix", "--unit", "blocks", "--policy", "mru,lru",
                 "--capacities", ",".join(map(str, caps)), "--json"])
    out, _ = capsys.readouterr()
    assert code == 0
    rows = {(r["policy"], r["capacity"]): r for r in json.loads(out)}
    assert {p for p, _ in rows} == {"mru", "lru"}
    for cap in caps:
        sc = tmp_path / f"s{cap}.toml"
        sc.write_text(f'kind = "prefix_cache"\nname = "toy policy"\npolicies = ["mru", "lru"]\n'
                      f'[workload]\ntrace_file = "{head}"\n'
                      f'[[tiers]]\nname = "hbm"\ncapacity_blocks = {cap}\n'
                      f'[cache]\npartial_block = true\n')
        assert main(["run", str(sc), "--json"]) == 0
        m = json.loads(capsys.readouterr().out)["metrics"]
        for p in ("mru", "lru"):  # the two interfaces agree, the toy as every shipped policy
            assert m["policies"][p]["tiers"]["hbm"]["hit_blocks"] == rows[(p, cap)]["hit_blocks"], (p, cap)
    # MRU keeps the old blocks LRU lets go: a different policy, really run
    assert rows[("mru", 40)]["hit_blocks"] != rows[("lru", 40)]["hit_blocks"]
    assert main(["replay", "--prefix", "--unit", "blocks", "--list-policies"]) == 0
    assert "evicts the block used most recently" in capsys.readouterr().out


def test_the_toy_policy_runs_in_the_object_replay(mru):
    from kvviz.replay import kernels
    # 1 2 3 1 with room for two: MRU evicts the newest, 3 itself (inserted, then the victim), so 1 hits
    assert kernels.run("mru", [1, 2, 3, 1], [1, 1, 1, 1], 2) == (3, 3)
    assert kernels.run("lru", [1, 2, 3, 1], [1, 1, 1, 1], 2) == (4, 4)


def test_a_policy_needing_a_fact_the_caller_cannot_give_is_refused_by_name():
    from kvviz.replay import kernels
    with pytest.raises(eviction.PolicyRefused, match="'leaf_lru' needs parent, which the object replay cannot give"):
        kernels.run("leaf_lru", [1, 2], [1, 1], 1)
    assert "leaf_lru" not in kernels.DESCRIPTIONS
    with pytest.raises(eviction.PolicyRefused, match="unknown eviction policy 'nope'"):
        eviction.make("nope")


def test_attention_stores_lru_fifo_and_belady_are_the_registrys():
    """Each policy written once: AttentionStore's placements of these names run the registry's
    policy through the one adapter, not an ordering of their own."""
    from kvviz.mechanisms.attention_store.placement import PLACEMENTS
    from kvviz.mechanisms.attention_store.placement.base import EvictionPlacement
    for name in ("lru", "fifo", "belady"):
        assert issubclass(PLACEMENTS[name], EvictionPlacement) and PLACEMENTS[name].policy == name
    store = types.SimpleNamespace(where=[0] * 3, running=[False] * 3, key=[0] * 3, next_time=[0] * 3, lo=0, L_ew=0)
    placed = PLACEMENTS["belady"](store)
    assert all(type(p) is EVICTION_POLICIES["belady"] for p in placed.tiers.values())


NEVER = 1 << 62


def test_belady_victim_after_only_names_a_key_needed_later():
    nxt = {0: 5, 1: 9, 2: NEVER}
    p = eviction.make("belady", next_use=nxt)
    for b in nxt:
        p.insert(b)
    assert p.victim_after(eviction.NO_PINS, 9) == 2
    assert p.victim_after({2}, 9) is None  # 1 is needed at 9: no later than the key it would make room for
    assert p.victim_after({2}, 8) == 1
    assert p.victim({2}) == 1  # no limit
    with pytest.raises(eviction.PolicyRefused, match="'lru' does not know next uses"):
        eviction.make("lru").victim_after(eviction.NO_PINS, 0)


def test_belady_ties_by_key_or_by_calls():
    """Equal next uses: the smallest key, or (AttentionStore's order) the key told of fewest times."""
    nxt = {1: NEVER, 2: NEVER, 3: NEVER}
    by_key = eviction.make("belady", next_use=nxt)
    by_calls = eviction.make("belady", settings={"ties": "calls"}, next_use=nxt)
    for p in (by_key, by_calls):
        p.insert(1)
        p.touch(1)  # re-keyed: a second call about 1
        p.insert(3)
        p.insert(2)
    assert by_key.victim(eviction.NO_PINS) == 1
    assert by_calls.victim(eviction.NO_PINS) == 2  # 2 and 3 told once, 1 twice; then the smaller key
    by_calls.remove(2)
    assert by_calls.victim(eviction.NO_PINS) == 3
    with pytest.raises(eviction.PolicyRefused, match="'lru' has no setting ties"):
        eviction.make("lru", settings={"ties": "calls"})
    with pytest.raises(ValueError, match="'key' or 'calls'"):
        eviction.make("belady", settings={"ties": "age"}, next_use=nxt)
