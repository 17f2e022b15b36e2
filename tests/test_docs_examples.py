"""The documentation's worked examples and generated pages, held true: each "how to extend" page's
example file is installed as the page says and run; the generated reference lists every field
of every bundled scenario and every command and flag; the README stays short and speaks of
papers and systems, not of our issue numbers."""
import importlib.util
import json
import re
import sys
import tomllib

import pytest

from kvviz.cli import build_parser, main
from kvviz.mechanisms import PACKAGES, mechanisms

from .conftest import ROOT, SCENARIOS

EXAMPLES = ROOT / "docs" / "examples"


def _generator():
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "_gen" / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def layer_prefetch(monkeypatch):
    """docs/examples/layer_prefetch.py as kvviz/mechanisms/layer_prefetch/__init__.py, with its one
    line in PACKAGES."""
    name = "kvviz.mechanisms.layer_prefetch"
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / "layer_prefetch.py",
                                                  submodule_search_locations=[])
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, mod)
    spec.loader.exec_module(mod)
    monkeypatch.setattr("kvviz.mechanisms.PACKAGES", (*PACKAGES, "layer_prefetch"))
    mechanisms.cache_clear()
    yield mod
    mechanisms.cache_clear()


def test_the_mechanism_howto_example_runs_as_the_page_says(layer_prefetch, capsys, tmp_path):
    page = (ROOT / "docs" / "extend" / "mechanism.md").read_text()
    assert '--8<-- "docs/examples/layer_prefetch.py"' in page and '"layer_prefetch",' in page
    toml = str(EXAMPLES / "layer_prefetch.toml")
    assert main(["check", toml]) == 0  # its [[expect]]: 8 × 80 + 50 µs, by hand
    capsys.readouterr()
    assert main(["run", toml, "--json"]) == 0
    m = json.loads(capsys.readouterr().out)["metrics"]
    assert m["makespan_us"] == 690.0 and m["stall_us"] == 290.0
    # no look-ahead: each layer waits for its whole fetch (8 × (80 + 50) µs)
    assert main(["run", toml, "--set", "pipeline.depth=0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["makespan_us"] == 1040.0
    # a fast link and a deep buffer hide every fetch but the first
    assert main(["run", toml, "--set", "pipeline.fetch_us=10", "--set", "pipeline.depth=2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["stall_us"] == 10.0
    assert main(["schema", "layer_prefetch"]) == 0
    assert "How many layers the loader may run ahead" in capsys.readouterr().out
    bad = tmp_path / "bad.toml"
    bad.write_text('kind = "layer_prefetch"\n[pipeline]\nfetch_us = -1\n')
    assert main(["run", str(bad)]) == 2
    assert "pipeline.fetch_us" in capsys.readouterr().err


@pytest.mark.gui
def test_the_tab_howto_example_shows_each_lanes_busy_time(qtbot, bundled):
    spec = importlib.util.spec_from_file_location("lane_busy_tab", EXAMPLES / "lane_busy_tab.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.busy_ns(*map(lambda a: __import__("numpy").array(a), ([0, 5, 20], [10, 12, 25]))) == 17
    from app.tabs.base import TabContext
    tab = mod.LaneBusyTab(TabContext())
    qtbot.addWidget(tab.widget)
    result = bundled["rope_prefetch_16"]
    assert tab.unavailable(result) is None
    tab.on_new_result(result, True)
    tab.shown()
    header, rows = tab.data_rows()
    assert header == ["lane", "busy_us", "share"]
    assert [r[0] for r in rows] == [str(n) for n in result.trace.lanes["name"]]
    assert tab.widget.rowCount() == len(rows)
    for share in (r[2] for r in rows):
        assert 0.0 <= share <= 1.0
    assert any(r[1] > 0 for r in rows)


def _key_paths(data, prefix=""):
    for k, v in data.items():
        if isinstance(v, dict):
            yield from _key_paths(v, f"{prefix}{k}.")
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for item in v:
                yield from _key_paths(item, f"{prefix}{k}[].")
        else:
            yield f"{prefix}{k}"


def test_the_field_reference_lists_every_field_of_every_bundled_scenario():
    page = _generator().scenario_fields()
    listed = set(re.findall(r"^\| `([^`]+)` \|", page, re.M))
    for f in sorted(SCENARIOS.glob("*.toml")):
        data = tomllib.loads(f.read_text())
        base = data.pop("base", None)  # a ladder's base scenario is its own kind's fields
        for path in _key_paths(data):
            assert path in listed, f"{f.name}: {path} is not in the field reference"
        assert base is None or isinstance(base, (str, dict))


def test_the_cli_reference_lists_every_command_and_flag():
    page = _generator().cli_reference()
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, parser in sub.choices.items():
        assert f"## `kvviz {name}`" in page
        for action in parser._actions:
            for flag in action.option_strings:
                assert flag in page or flag in ("-h", "--help"), f"kvviz {name} {flag}"
    assert "## `kvviz-gui`" in page and "--screenshot" in page


def test_the_readme_is_short_and_names_papers_not_our_issues():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    assert "make run" in text and "make test" in text and "make docs" in text
    assert not re.search(r"seed 0|\bissue \d", text, re.I)
    for source in ("CachedAttention", "Mooncake", "Engram", "RoPE"):
        assert source in text


def test_the_router_howto_example_runs_as_the_page_says(tmp_path):
    """The how-to's steps, done literally in a copy of the package: the file, the import line,
    then `kvviz run --set routing.policy=power_of_two`, beside random and least_loaded."""
    import shutil
    import subprocess
    page = (ROOT / "docs" / "extend" / "router.md").read_text()
    line = "from . import power_of_two  # noqa: E402,F401"
    assert '--8<-- "docs/examples/power_of_two.py"' in page and line in page
    shutil.copytree(ROOT / "kvviz", tmp_path / "kvviz", ignore=shutil.ignore_patterns("__pycache__", "*.c"))
    routers = tmp_path / "kvviz" / "mechanisms" / "cluster" / "routers"
    shutil.copy(EXAMPLES / "power_of_two.py", routers / "power_of_two.py")
    init = routers / "__init__.py"
    text = init.read_text()
    assert "# isort: on" in text
    init.write_text(text.replace("# isort: on", line + "\n# isort: on"))
    script = ("import json, sys, io, contextlib\nfrom kvviz.cli import main\nout = {}\n"
              "for p in ('power_of_two', 'random', 'least_loaded'):\n"
              "    buf = io.StringIO()\n"
              "    with contextlib.redirect_stdout(buf):\n"
              f"        code = main(['run', {str(SCENARIOS / 'cluster_mooncake_routing.toml')!r}, '--json', "
              "'--set', 'workload.max_requests=300', '--set', 'routing.policy=' + p])\n"
              "    assert code == 0, p\n"
              "    out[p] = json.loads(buf.getvalue())['metrics']\n"
              "import kvviz\nout['where'] = kvviz.__file__\nprint(json.dumps(out))\n")
    r = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["where"].startswith(str(tmp_path))  # the copy ran, not the tree
    spread = {p: [i["requests"] for i in got[p]["per_instance"] if i["role"] == "prefill"]
              for p in ("power_of_two", "random", "least_loaded")}
    for p, counts in spread.items():
        assert sum(counts) + got[p]["rejected"] == 300, p
    # a router of its own: its choices are neither random's nor least_loaded's
    assert spread["power_of_two"] != spread["random"] and spread["power_of_two"] != spread["least_loaded"]
    assert got["power_of_two"]["mean_ttft_ms"] > 0


def _copy_with(tmp_path, example: str, package: str, line: str):
    """A copy of the kvviz package with the how-to's file saved in `package` (a folder of it) and
    its registration line added to that package's __init__.py, before its `# isort: on`."""
    import shutil
    shutil.copytree(ROOT / "kvviz", tmp_path / "kvviz", ignore=shutil.ignore_patterns("__pycache__", "*.c"))
    where = tmp_path / "kvviz" / package
    shutil.copy(EXAMPLES / example, where / example)
    init = where / "__init__.py"
    text = init.read_text()
    assert text.count("# isort: on") == 1
    init.write_text(text.replace("# isort: on", line + "\n# isort: on"))


def _run_in(tmp_path, script: str) -> dict:
    import subprocess
    r = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got.pop("where").startswith(str(tmp_path))  # the copy ran, not the tree
    return got


def test_the_trace_reader_howto_example_reads_as_the_page_says(tmp_path):
    """The how-to's steps done literally in a copy of the package: the file, the import line; then
    the same requests written as Twitter's cache-trace lines and as kvviz's time,id,size CSV read
    alike (by name and by content) and replay alike, and a bad line is refused by file and line."""
    import random
    page = (ROOT / "docs" / "extend" / "trace-reader.md").read_text()
    line = "from . import twitter_cache  # noqa: E402,F401"
    assert '--8<-- "docs/examples/twitter_cache.py"' in page and line in page
    _copy_with(tmp_path, "twitter_cache.py", "requests/formats", line)
    rng = random.Random(7)
    rows = [(round(i * 0.25, 2), f"k{rng.randrange(60)}", rng.randrange(4, 40), rng.randrange(0, 5000))
            for i in range(2000)]
    rows = [(t, k, ks, vs) for t, k, ks, vs in rows if ks + vs >= 1]
    (tmp_path / "t.twitter").write_text("".join(f"{t},{k},{ks},{vs},7,{rng.choice(['get', 'set'])},0\n"
                                                for t, k, ks, vs in rows))
    (tmp_path / "t.csv").write_text("time,id,size\n" + "".join(f"{t},{k},{ks + vs}\n" for t, k, ks, vs in rows))
    (tmp_path / "bad.twitter").write_text("0,a,3,4,1,get,0\n1,b,3,4,1,get,0\n2,c,three,4,1,get,0\n")
    script = ("import json, io, contextlib\nfrom kvviz.cli import main\nfrom kvviz.requests.reader import read_trace\n"
              "out = {}\n"
              "a, b, c = read_trace('t.twitter'), read_trace('t.twitter', 'twitter'), read_trace('t.csv')\n"
              "out['same'] = all(x.ids.tolist() == c.ids.tolist() and x.sizes.tolist() == c.sizes.tolist() and "
              "x.times.tolist() == c.times.tolist() for x in (a, b))\n"
              "for f in ('t.twitter', 't.csv'):\n"
              "    buf = io.StringIO()\n"
              "    with contextlib.redirect_stdout(buf):\n"
              "        assert main(['replay', f, '--engine', 'python', '--policy', 'lru,fifo', "
              "'--capacities', '20KB,60KB', '--json']) == 0\n"
              "    out[f] = [(r['policy'], r['capacity'], r['misses']) for r in json.loads(buf.getvalue())]\n"
              "err = io.StringIO()\n"
              "with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):\n"
              "    out['bad'] = main(['replay', 'bad.twitter', '--capacity', '1KB'])\n"
              "out['bad_says'] = err.getvalue()\n"
              "with contextlib.redirect_stdout(io.StringIO()) as h:\n"
              "    try:\n"
              "        main(['replay', '--help'])\n"
              "    except SystemExit:\n"
              "        pass\n"
              "out['help'] = h.getvalue()\n"
              "import kvviz\nout['where'] = kvviz.__file__\nprint(json.dumps(out))\n")
    got = _run_in(tmp_path, script)
    assert got["same"]
    assert got["t.twitter"] == got["t.csv"] and len(got["t.csv"]) == 4
    assert len({m for _, _, m in got["t.csv"]}) > 1  # capacities and policies that differ
    assert got["bad"] == 2 and "bad.twitter" in got["bad_says"] and "line 3" in got["bad_says"]
    assert "twitter" in got["help"]


@pytest.fixture
def spans_jsonl():
    """docs/examples/spans_jsonl.py as kvviz/export/spans_jsonl.py, its one registration line run
    (importing it registers it); unregistered afterwards."""
    import types

    from kvviz.export import EXPORT_FORMATS
    page = (ROOT / "docs" / "extend" / "exporter.md").read_text()
    line = "from . import spans_jsonl  # noqa: E402,F401"
    assert '--8<-- "docs/examples/spans_jsonl.py"' in page and line in page
    assert "# isort: on" in (ROOT / "kvviz" / "export" / "__init__.py").read_text()
    name = "kvviz.export.spans_jsonl"
    mod = types.ModuleType(name)
    mod.__package__ = "kvviz.export"
    sys.modules[name] = mod
    try:
        exec(compile((EXAMPLES / "spans_jsonl.py").read_text(), "docs/examples/spans_jsonl.py", "exec"), mod.__dict__)
        assert EXPORT_FORMATS["spans_jsonl"].render is mod.spans_jsonl
        yield mod
    finally:
        EXPORT_FORMATS.pop("spans_jsonl", None)
        sys.modules.pop(name, None)


def _csv_spans(prefix) -> list[dict]:
    import csv
    with open(f"{prefix}_spans.csv", newline="", encoding="utf-8") as f:
        return [{"lane": r["lane"], "start_ns": int(r["start_ns"]), "end_ns": int(r["end_ns"]), "kind": r["kind"],
                 "label": r["label"]} for r in csv.DictReader(f)]


def test_the_exporter_howto_example_writes_what_the_csv_export_does(spans_jsonl, tmp_path, capsys):
    """`kvviz run --spans-jsonl` (the flag made from the record) writes every span the CSV export
    does, field by field; a name whose extension says another format is refused before the run."""
    out, prefix = tmp_path / "spans.jsonl", tmp_path / "t"
    scenario = str(SCENARIOS / "rope_prefetch_16.toml")
    assert main(["run", scenario, "--spans-jsonl", str(out), "--csv", str(prefix)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) > 10 and rows == _csv_spans(prefix)
    assert main(["run", scenario, "--spans-jsonl", str(tmp_path / "spans.json")]) == 2
    assert "this output is JSONL, but the name says JSON" in capsys.readouterr().err
    assert not (tmp_path / "spans.json").exists()
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "--spans-jsonl OUT.jsonl" in capsys.readouterr().out


@pytest.mark.gui
def test_the_exporter_howto_example_is_in_the_apps_export_menu(spans_jsonl, window, tmp_path):
    """Registered before the window is built: File → Export lists it, and the app's writer (the
    one its background export runs) writes one line per span of the run on show."""
    from PySide6.QtWidgets import QMenu

    from app.exporting import export_result
    labels = [a.text() for m in window.findChildren(QMenu) for a in m.actions()]
    assert "Spans as JSON Lines…" in labels
    out = tmp_path / "view.jsonl"
    assert export_result(window.result, "spans_jsonl", str(out)) == [str(out)]
    assert len(out.read_text().splitlines()) == len(window.result.trace.spans)
