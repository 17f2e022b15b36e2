"""The trace-format registry (kvviz/requests/formats/): a format registered with a prompts reader
and `claims` is read by `kvviz replay --prefix` (named or by content) and as a prefix_cache
scenario's workload.trace_file; one with no object reader is refused by the object replay by
name; the shipped formats keep their order in --format's choices."""
import json

import pytest

from kvviz.cli import main
from kvviz.requests.formats import TRACE_FORMATS, TraceFormat, names, register

from .conftest import ROOT

MOONCAKE = ROOT / "resources" / "traces" / "mooncake_synthetic_trace.jsonl"


@pytest.fixture
def toy(tmp_path):
    """`toy`: a file whose first line is TOY, then a Mooncake trace."""
    from kvviz.requests import prompts

    def read(path):
        body = tmp_path / "body.jsonl"
        body.write_text(path.read_text().split("\n", 1)[1])
        return prompts.read(body)

    def claims(path):
        return path.read_bytes()[:4] == b"TOY\n"
    register(TraceFormat("toy", prompts=read, claims=claims))
    try:
        yield
    finally:
        TRACE_FORMATS.pop("toy")


def test_the_shipped_formats_in_order():
    assert names()[:8] == ("auto", "csv", "txt", "oracleGeneral", "mooncake", "qwen", "plain", "ragpulse")
    assert names(prompts=True)[:5] == ("auto", "mooncake", "qwen", "plain", "ragpulse")
    with pytest.raises(ValueError, match="registered already"):
        register(TraceFormat("csv", objects=lambda p, o: None))


def test_a_registered_prompts_format_reads_in_replay_prefix_and_as_a_workload(toy, tmp_path, capsys):
    head = "".join(MOONCAKE.read_text().splitlines(keepends=True)[:200])
    (tmp_path / "m.jsonl").write_text(head)
    (tmp_path / "t.toy").write_text("TOY\n" + head)
    rows = {}
    for name, extra in (("m.jsonl", []), ("t.toy", []), ("t.toy", ["--format", "toy"])):
        assert main(["replay", str(tmp_path / name), "--prefix", "--capacities", "30,300", "--json", *extra]) == 0
        rows[(name, *extra)] = [(r["capacity"], r["hit_blocks"]) for r in json.loads(capsys.readouterr().out)]
    assert len(set(map(tuple, rows.values()))) == 1 and rows[("m.jsonl",)][-1][1] > 0
    metrics = []
    for name in ("m.jsonl", "t.toy"):
        sc = tmp_path / f"{name}.toml"
        sc.write_text(f'kind = "prefix_cache"\nname = "toy"\n[workload]\ntrace_file = "{tmp_path / name}"\n'
                      f'[[tiers]]\nname = "hbm"\ncapacity_blocks = 40\n')
        assert main(["run", str(sc), "--json"]) == 0
        metrics.append(json.loads(capsys.readouterr().out)["metrics"]["policies"]["lru"]["tiers"]["hbm"])
    assert metrics[0] == metrics[1] and metrics[0]["hit_blocks"] > 0
    assert main(["replay", str(tmp_path / "t.toy"), "--format", "toy", "--capacity", "1GB"]) == 2
    assert "a toy trace is read by kvviz replay --prefix, not as object requests" in capsys.readouterr().err


def test_a_claimed_file_is_read_by_its_format_even_where_mooncake_reads_it_faster(tmp_path, capsys):
    """The lean Mooncake LRU path of `replay --prefix` reads a file only no format claims: a
    format that claims a Mooncake-shaped file (here: its first 50 requests) is asked first."""
    from kvviz.requests import prompts

    def first_50(path):
        head = tmp_path / "head.jsonl"
        head.write_text("".join(path.read_text().splitlines(keepends=True)[:50]))
        return prompts.read(head)
    register(TraceFormat("first50", prompts=first_50, claims=lambda p: p.suffix == ".first50"))
    try:
        f = tmp_path / "t.first50"
        f.write_text("".join(MOONCAKE.read_text().splitlines(keepends=True)[:200]))
        assert main(["replay", str(f), "--prefix", "--capacity", "100", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)[0]["requests"] == 50
    finally:
        TRACE_FORMATS.pop("first50")
