"""Every message a user sees is one clean line (issue 29, items 10 and 12): a scenario's text
(its name, keys, claims, file name, a trace's ids, --set paths) shows with its control
characters escaped, so a file cannot clear the terminal, set its title or fake an output line;
an error line is bounded however long the key it quotes; a usage error is one line."""
import json
import re
import xml.dom.minidom

import pytest

from kvviz.cli import main
from kvviz.errors import ScenarioError
from kvviz.format import clip, printable

from .conftest import SCENARIOS

# what must never reach a terminal raw: controls (a newline only between lines), DEL, C1,
# line/paragraph separators, bidi overrides and isolates
RAW = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
HOSTILE = r"\u001b[2J\u001b]0;pwned\u0007X\r\nfake: ok\u2028\u202e"  # as written in TOML
SHOWN = r"\x1b[2J\x1b]0;pwned\x07X\r\nfake: ok\u2028\u202e"  # as a person reads it


def _clean(text: str) -> str:
    bad = RAW.search(text)
    assert bad is None, f"raw {bad.group()!r} in {text[max(0, bad.start() - 60):bad.end() + 60]!r}"
    return text


def _cli(argv, capsys) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's refusals
        code = e.code
    out, err = capsys.readouterr()
    return code, _clean(out), _clean(err)


@pytest.fixture
def hostile(tmp_path):
    """The worked example with control characters in its name, an [[expect]]'s why (that check
    made to fail) and a claim: each printed by some command."""
    text = (SCENARIOS / "rope_prefetch_16.toml").read_text(encoding="utf-8")
    for old, new in (('name = "RoPE prefetch: 16-token worked example"', f'name = "{HOSTILE}"'),
                     ('equals = 400.0\nwhy = "the RoPE walkthrough', f'equals = 401.0\nwhy = "{HOSTILE} the RoPE walkthrough'),
                     ('claim = "t = 0: ', f'claim = "{HOSTILE} <!-- claims:end --> t = 0: ')):
        assert old in text
        text = text.replace(old, new, 1)
    f = tmp_path / "hostile.toml"
    f.write_text(text, encoding="utf-8")
    return f


def test_printable_escapes_controls_and_leaves_text_alone():
    assert printable("\x1b[2J\x07\r\n\t\x00\x7f\x85\u2028\u2029\u202e\u2066") == \
        r"\x1b[2J\x07\r\n\t\x00\x7f\x85\u2028\u2029\u202e\u2066"
    text = "25 µs × 8 ÷ 2 — é 中 C:\\dir\\x1b |"
    assert printable(text) == text  # printable text, backslashes too, as written
    assert printable(printable("\x1b\u2028")) == printable("\x1b\u2028")  # a second pass changes nothing
    assert clip("a" * 50 + "b" * 50, 30) == "a" * 20 + "…" + "b" * 10 and clip("short", 30) == "short"


def test_run_validate_check_and_claims_show_the_name_escaped(hostile, capsys):
    code, out, err = _cli(["run", str(hostile)], capsys)
    assert code == 0 and out.splitlines()[0] == f"{SHOWN}  [rope_window]"
    assert f"check failed: {hostile}: naive_stall_us = 400.0, expected = 401.0" in err
    code, out, _ = _cli(["validate", str(hostile)], capsys)
    assert code == 0 and out == f"{hostile}: ok (rope_window: {SHOWN})\n"
    code, out, _ = _cli(["check", str(hostile)], capsys)
    assert code == 1 and f"({SHOWN} the RoPE walkthrough: 16 serial round trips" in out
    code, out, _ = _cli(["claims", "--quiet", str(hostile)], capsys)
    assert code == 0 and f"{SHOWN} <!-- claims:end --> t = 0:" in out
    code, out, _ = _cli(["claims", "--quiet", "--markdown", str(hostile)], capsys)
    # the claim cannot close a README's pasted block early
    assert code == 0 and f"{SHOWN} &lt;!-- claims:end --> t = 0:" in out and "<!--" not in out


def test_list_shows_a_bundled_name_escaped(hostile, capsys, monkeypatch):
    monkeypatch.setenv("KVVIZ_SCENARIOS", str(hostile.parent))
    code, out, _ = _cli(["list"], capsys)
    assert code == 0 and out.split() == ["hostile", "rope_window", *SHOWN.split()]


def test_json_keeps_the_exact_name(hostile, capsys):
    """Data is not display: --json carries the name as written (JSON escapes it itself)."""
    code, out, _ = _cli(["run", str(hostile), "--json"], capsys)
    assert code == 0 and json.loads(out)["name"] == "\x1b[2J\x1b]0;pwned\x07X\r\nfake: ok\u2028\u202e"


def test_the_svg_of_a_hostile_name_is_well_formed(hostile, tmp_path, capsys):
    svg = tmp_path / "t.svg"
    code, _, _ = _cli(["run", str(hostile), "--svg", str(svg)], capsys)
    title = xml.dom.minidom.parse(str(svg)).getElementsByTagName("text")[0].firstChild.data  # XML forbids ESC
    assert code == 0 and title == SHOWN


@pytest.mark.parametrize("argv, shown", [
    (["--set", "cache.sl\x1b]0;t\x07ots=3"], r"cache.sl\x1b]0;t\x07ots: unknown field"),
    (["--set", "cache.slots=\x1b[2J"], r"cache.slots: Input should be a valid integer (got '\x1b[2J')"),
    (["--set", "cache.slots\r\nerror: fake"], r"--set: expected PATH=VALUE, got 'cache.slots\r\nerror: fake'"),
])
def test_set_paths_and_values_are_quoted_escaped(argv, shown, capsys):
    code, _, err = _cli(["validate", "rope_prefetch_16", *argv], capsys)
    assert code == 2 and err.count("\n") == 1 and shown in err


def test_an_unknown_key_and_a_file_name_are_escaped(tmp_path, capsys):
    text = (SCENARIOS / "rope_prefetch_16.toml").read_text(encoding="utf-8")
    f = tmp_path / "na\x1b[31mme\u202e.toml"
    f.write_text(text.replace("[cache]\n", '[cache]\n"sl\\u001b]0;t\\u0007ots" = 3\n'), encoding="utf-8")
    code, _, err = _cli(["validate", str(f)], capsys)
    assert code == 2 and err == rf"error: {tmp_path}/na\x1b[31mme\u202e.toml: cache.sl\x1b]0;t\x07ots: unknown field" "\n"
    code, _, err = _cli(["validate", str(tmp_path / "gone\x1b.toml")], capsys)
    assert code == 2 and err.count("\n") == 1 and r"gone\x1b.toml" in err


def test_the_error_keeps_the_field_as_written():
    """The app finds the field to mark by e.field: only the printed line is escaped."""
    e = ScenarioError("unknown field", "f\x1b.toml", "cache.sl\x1bots")
    assert e.field == "cache.sl\x1bots" and str(e) == r"f\x1b.toml: cache.sl\x1bots: unknown field"


def test_a_trace_id_is_quoted_escaped(tmp_path, capsys):
    trace = tmp_path / "t.csv"
    trace.write_bytes(b"time,id,size\n0,a\x1b[2J,4\n1,b,x\x1b]0;t\x07\n")
    code, _, err = _cli(["replay", str(trace), "--capacity", "10"], capsys)
    assert code == 2 and err.count("\n") == 1 and r"got 'x\x1b]0;t\x07'" in err


def test_a_100000_character_unknown_key_gives_a_short_line(tmp_path, capsys):
    text = (SCENARIOS / "rope_prefetch_16.toml").read_text(encoding="utf-8")
    f = tmp_path / "long.toml"
    keys = "".join(f"{c * 100_000} = 3\n" for c in "kq")
    f.write_text(text.replace("[cache]\n", "[cache]\n" + keys), encoding="utf-8")
    code, _, err = _cli(["validate", str(f)], capsys)
    lines = err.splitlines()
    assert code == 2 and len(lines) == 2
    for c, line in zip("kq", lines):
        assert len(line.encode()) <= 500 and line.startswith(f"error: {f}: cache.{c * 40}")
        assert line.endswith(f"{c * 30}: unknown field") and "…" in line
    code, _, err = _cli(["validate", "rope_prefetch_16", "--set", "x" * 100_000 + "=1"], capsys)
    assert code == 2 and len(err.encode()) <= 500 and err.rstrip().endswith(": unknown field")


def test_a_long_file_name_is_refused_in_a_short_line(capsys):
    code, _, err = _cli(["validate", "x" * 5_000], capsys)  # once a traceback (the name too long to look up)
    assert code == 2 and err.count("\n") == 1 and len(err) <= 500 and "Traceback" not in err


@pytest.mark.parametrize("argv, start", [
    (["replay", "t.csv", "--kv-bytes-per-token", "1e20"], "error: kvviz replay: --kv-bytes-per-token: expected a whole"),
    (["replay", "t.csv", "--workers", "0"], "error: kvviz replay: --workers: expected 1 to 64"),
    (["replay", "t.csv", "--frobnicate"], "error: kvviz replay: unrecognized arguments: --frobnicate"),
    (["run"], "error: kvviz run: the following arguments are required: file"),
    (["frobnicate"], "error: kvviz: cmd: invalid choice: 'frobnicate'"),
    (["run", "rope_prefetch_16", "--width"], "error: kvviz run: --width: expected one argument"),
    (["replay", "t.csv", "--engine", "\x1b[2J"], r"error: kvviz replay: --engine: invalid choice: '\x1b[2J'"),
])
def test_a_usage_error_is_one_line(argv, start, capsys):
    code, out, err = _cli(argv, capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith(start), err
    assert err.rstrip().endswith(f"({start.split(': ')[1]} --help)")


def test_help_still_shows_the_usage(capsys):
    code, out, _ = _cli(["replay", "--help"], capsys)
    assert code == 0 and out.startswith("usage: kvviz replay") and "--workers" in out


def test_the_app_usage_error_is_one_line(capsys):
    from app.main import _parse
    for argv, start in ((["--frob"], "error: kvviz-gui: unrecognized arguments: --frob"),
                        (["--view", "nope"], "error: kvviz-gui: --view: invalid choice: 'nope'")):
        with pytest.raises(SystemExit) as e:
            _parse(argv)
        err = capsys.readouterr().err
        assert e.value.code == 2 and err.count("\n") == 1 and err.startswith(start), err


@pytest.mark.gui
def test_the_window_shows_names_escaped(window, qtbot, hostile, tmp_path):
    """The title (the file's name), the status line and the compare labels (the scenario's)."""
    f = tmp_path / "ti\x1b]0;t\x07tle.toml"
    f.write_bytes(hostile.read_bytes())
    old = window.result
    window.tab("compare").pin()
    assert window.open(str(f))
    qtbot.waitUntil(lambda: window.result is not old, timeout=30_000)
    window.show_view("compare")
    view = window.view("compare")
    for text in (window.windowTitle(), window.status.text(), view.a_label.text(), view.b_label.text()):
        _clean(text)
    assert window.windowTitle().startswith(r"ti\x1b]0;t\x07tle.toml") and SHOWN in view.b_label.text()
