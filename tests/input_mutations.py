"""Hostile edits of the bundled scenarios, for the fuzz test and benchmarks/bench_fuzz_input.py:
delete a key, add an unknown one, retype a value, make it non-finite, huge, tiny or nested.
Each case must end as a run or as a ScenarioError (the CLI's exit 2 with `error: ...`), never
as another exception."""
from __future__ import annotations

import copy
import traceback
from pathlib import Path

from hypothesis import strategies as st

from kvviz import ScenarioError, parse_scenario, simulate
from kvviz.errors import ValidatorBug
from kvviz.scenario_data import read_toml

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
FUZZ_MEMORY_GB = 0.05  # keeps every accepted run small: the size guard refuses the rest (exit 2)
# the bundled AttentionStore run takes seconds; a small workload keeps the same shape
# (the prefix-cache ones too: a few hundred requests of the trace, a few dozen generated and timed)
SMALLER = {"attention_store_sharegpt": {"workload": {"conversations": 30}},
           "prefix_cache_mooncake": {"workload": {"max_requests": 200}},
           "prefix_cache_tiers": {"workload": {"requests": 30}}}


def _merge(data: dict, small: dict) -> dict:
    out = copy.deepcopy(data)
    for k, v in small.items():
        out[k] = _merge(out.get(k, {}), v) if isinstance(v, dict) else v
    return out


def bases() -> dict[str, dict]:
    return {p.stem: _merge(read_toml(p), SMALLER.get(p.stem, {})) for p in sorted(SCENARIOS.glob("*.toml"))}


def paths(node, prefix: tuple = ()) -> list[tuple]:
    """Every key and list item, tables and lists included (`kind` too)."""
    out = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for k, v in items:
        out.append(prefix + (k,))
        out += paths(v, prefix + (k,))
    return out


def nested(depth: int):
    v: object = 1
    for _ in range(depth):
        v = [v]
    return v


SPECIAL = [float("nan"), float("inf"), float("-inf"), 1e300, -1e300, 1e-300, 5e-324, 10 ** 30, -10 ** 30,
           2 ** 63, 2 ** 63 - 1, -1, 0, 1, 0.5, True, False, "", "x", "8", "inf", "lru", [], {}, [[]],
           {"a": 1}, [1, "a"], nested(40), nested(500), {"kind": "rope_window"}, "\ufeff"]
values = st.one_of(
    st.sampled_from(SPECIAL),
    st.integers(-10 ** 20, 10 ** 20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.lists(st.integers(-5, 70), max_size=6),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=4),
)
operations = st.sampled_from(["delete", "set", "set", "set", "add", "wrap"])


def source_of(name: str) -> str:
    """The bundled file a case mutates: its relative paths (trace_file) resolve beside it, as
    they do when the user runs it (from a temp folder every relative trace was refused, so
    trace-driven scenarios were never fuzzed past that)."""
    return str(SCENARIOS / f"{name}.toml")


@st.composite
def cases(draw):
    """(scenario name, path, operation, value, mutated data); run it as outcome(data, source_of(name))."""
    all_bases = bases()
    name = draw(st.sampled_from(sorted(all_bases)))
    data = copy.deepcopy(all_bases[name])
    path = draw(st.sampled_from(paths(data)))
    op = draw(operations)
    value = draw(values)
    return name, path, op, value, mutate(data, path, op, value)


def mutate(data: dict, path: tuple, op: str, value) -> dict:
    parent = data
    for p in path[:-1]:
        parent = parent[p]
    last = path[-1]
    if op == "delete":
        del parent[last]
    elif op == "set":
        parent[last] = copy.deepcopy(value)
    elif op == "add":
        target = parent[last] if isinstance(parent[last], dict) else parent
        if isinstance(target, dict):
            target["no_such_field"] = copy.deepcopy(value)
        else:
            target.append(copy.deepcopy(value))
    elif op == "wrap":
        parent[last] = [parent[last]]
    return data


ROOT = Path(__file__).resolve().parents[1]
# Validators known to crash on odd types (the user still gets exit 2 and one line, as a
# ValidatorBug). None today: a new one fails the fuzz test until it is fixed or listed here.
KNOWN_VALIDATOR_BUGS: set[str] = set()


def outcome(data: dict, source: str = "fuzz.toml") -> str:
    """'ran', 'refused', or 'validator bug in FILE'; any other exception propagates (it is the
    bug the fuzz looks for). `source`: the file the data stands for (source_of)."""
    try:
        simulate(parse_scenario(data, source), max_memory_gb=FUZZ_MEMORY_GB)
        return "ran"
    except ValidatorBug as e:
        where = traceback.extract_tb(e.__cause__.__traceback__)[-1].filename
        return f"validator bug in {Path(where).resolve().relative_to(ROOT)}"
    except ScenarioError as e:
        lines = e.all_messages()
        assert lines and all(line and "\n" not in line for line in lines), lines  # one line each
        return "refused"
