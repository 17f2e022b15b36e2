"""Numbers on the command line are read as a scenario's values are (issue 23 point 9): one rule,
kvviz.numbers. An integer flag takes exactly what a scenario's integer field takes, a number
flag what a float field takes; a size is such a number and a unit."""
import pytest

from kvviz.cli import main
from kvviz.errors import ScenarioError
from kvviz.numbers import parse_number, split_unit
from kvviz.replay import parse_size

from .conftest import ROOT

TEXTS = ["16", "0x10", "0o20", "0b10000", "1_6", "+16", "1e1", "16.0", "1.6e1", "sixteen", "0x", "16 16", "", "inf"]
ZIPF = str(ROOT / "resources" / "traces" / "zipf_20k.csv")


def _accepted(argv, capsys) -> bool:
    try:
        rc = main(argv)
    except SystemExit as e:
        rc = e.code
    capsys.readouterr()
    return rc == 0


@pytest.mark.parametrize("text", TEXTS)
def test_an_integer_flag_takes_what_an_integer_field_takes(text, capsys):
    in_scenario = _accepted(["validate", "rope_prefetch_16", "--set", f"cache.slots={text}"], capsys)
    as_flag = _accepted(["run", "rope_prefetch_16", "--dpi", text or "''"], capsys) if text else False
    assert as_flag == in_scenario, text


@pytest.mark.parametrize("text", TEXTS)
def test_a_number_flag_takes_what_a_float_field_takes(text, capsys):
    in_scenario = _accepted(["validate", "rope_prefetch_16", "--set", f"storage.latency_us={text}"], capsys)
    as_flag = _accepted(["validate", "rope_prefetch_16", "--max-memory-gb", text], capsys) if text else False
    assert as_flag == (in_scenario and text != "inf"), text  # a limit of inf GB is out of its range


def test_hex_and_exponent_alike():
    assert parse_number("0x10", "f", integer=True) == 16
    with pytest.raises(ScenarioError, match="a float"):
        parse_number("1e3", "f", integer=True)
    assert parse_number("1e3", "f") == 1000.0 and parse_number("0x10", "f") == 16


@pytest.mark.parametrize("text, size", [("1000", 1000), ("1e3", 1000), ("0x10", 16), ("64MiB", 64 << 20),
                                        ("1.5GB", 1_500_000_000), ("0x10KB", 16_000), ("0x1B", 27), ("2 kib", 2048)])
def test_sizes(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", [".5GB", "1e400", "-5", "nan", "5 parsecs", "0x", "1%%", "GB"])
def test_bad_sizes_are_one_line(text):
    with pytest.raises(ScenarioError):
        parse_size(text)
    assert split_unit("5 parsecs", {"b": 1}) is None


def test_toml_numbers_fast_path_reads_as_tomllib_does():
    """kvviz.numbers.toml_number reads plain decimal integers without tomllib (the lean replay's
    start); whatever it reads so, tomllib must read the same, and what tomllib refuses it refuses."""
    import tomllib

    from kvviz.numbers import toml_number

    def by_tomllib(text):
        try:
            v = tomllib.loads(f"v = {text.strip()}\n")["v"] if "\n" not in text else None
        except tomllib.TOMLDecodeError:
            return None
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    for text in ["0", "7", " 42 ", "10000", "007", "00", "1_000", "+4", "-3", "1e3", "inf", "²", "٣", "5\n",
                 "12345678901234567890123", "", " ", "0x10", "true"]:
        assert toml_number(text) == by_tomllib(text), repr(text)
