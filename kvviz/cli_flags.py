"""The command line's numeric flags: each read by kvviz.numbers, as a scenario's values are
(a count is a TOML integer, a quantity any finite TOML number), then held to its range; a bad
one is argparse's usage error (exit 2)."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal, NoReturn, TypeVar, overload

from .errors import MAX_MESSAGE_CHARS, ScenarioError
from .format import printable
from .limits import MAX_BYTES, MAX_NS
from .numbers import parse_number

if TYPE_CHECKING:  # what `kvviz`'s parser.add_subparsers() gives each command's add_parser
    Subparsers = argparse._SubParsersAction["OneLineParser"]

MAX_WORKERS = 64  # each is a Python process with the scenario: thousands would exhaust the machine
MAX_CAPACITIES = 1_000  # a curve's points; auto gives 12
N = TypeVar("N")  # a namespace object given to parse_args


class OneLineParser(argparse.ArgumentParser):
    """A usage error is one line, as any bad input's (exit 2, argparse's own code):
    `error: kvviz replay: --workers: expected 1 to 64 ... (kvviz replay --help)`; the usage
    itself only on --help, not a dozen lines above the one that says what is wrong."""

    def error(self, message: str, prog: str | None = None) -> NoReturn:
        message = printable(message.removeprefix("argument "))  # quotes what was typed
        if len(message) > MAX_MESSAGE_CHARS:
            message = message[:MAX_MESSAGE_CHARS] + "…"
        print(f"error: {prog or self.prog}: {message} ({prog or self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)

    @overload
    def parse_args(self, args: Iterable[str] | None = None, namespace: None = None) -> argparse.Namespace: ...
    @overload
    def parse_args(self, args: Iterable[str] | None, namespace: N) -> N: ...
    @overload
    def parse_args(self, *, namespace: N) -> N: ...
    def parse_args(self, args: Iterable[str] | None = None, namespace: object = None) -> object:
        ns, extra = self.parse_known_args(args, namespace)
        if extra:  # a subcommand's unknown flag: name the subcommand, whose --help lists its flags
            cmd = getattr(ns, "cmd", None)
            self.error(f"unrecognized arguments: {' '.join(extra)}", f"{self.prog} {cmd}" if cmd else None)
        return ns


@overload
def _number(text: str, integer: Literal[True]) -> int: ...
@overload
def _number(text: str, integer: Literal[False]) -> int | float: ...
def _number(text: str, integer: bool) -> int | float:
    try:  # inf and nan are left to each flag's range, which names the flag
        return parse_number(text, "", integer, finite=False)
    except ScenarioError as e:
        raise argparse.ArgumentTypeError(e.message) from None


def int_flag(text: str) -> int:
    return _number(text, True)


def float_flag(text: str) -> float:
    return _number(text, False)


def positive_float(text: str) -> float:
    v = float_flag(text)
    if not (0 < v < 1e6):
        raise argparse.ArgumentTypeError(f"expected a number of GB above 0, got {text!r}")
    return v


def worker_count(text: str) -> int:
    n = int_flag(text)
    if not 1 <= n <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"expected 1 to {MAX_WORKERS} worker processes, got {text}")
    return n


def bytes_per_token(text: str) -> int:
    """A whole number of bytes, as a scenario's sizes (1_000 and 0x10 too; 1e3 is a float), at
    most kvviz.limits.MAX_BYTES: no overflow past int64."""
    n = int_flag(text)
    if not 1 <= n <= MAX_BYTES:
        raise argparse.ArgumentTypeError(f"expected 1 to {MAX_BYTES:,} bytes, got {text}")
    return n


def output_path(text: str) -> str:
    """An output flag's file name. An empty one (`--json-out ""`, a shell variable that was not
    set) was taken as no output at all: the command said nothing and wrote nothing."""
    if not text:
        raise argparse.ArgumentTypeError("an empty file name: name the file to write")
    return text


def check_figure_args(args: argparse.Namespace) -> None:
    """--width/--height/--dpi as one FigureSize (the app's Figure Size takes the same), and the
    time range."""
    from .export.figure_size import FigureSize
    try:
        args.figure = FigureSize.parse(args.width, args.height, args.dpi)
    except ValueError as e:
        field, message = e.args
        raise ScenarioError(message, "kvviz run", f"--{field}") from None
    if args.png and (problem := args.figure.problem(raster=True)):
        raise ScenarioError(problem[1], "kvviz run", f"--{problem[0]}")
    for name in ("from_us", "to_us"):
        v = getattr(args, name)
        if v is not None and not 0 <= v <= MAX_NS / 1e3:
            flag = "--" + name.replace("_", "-")
            raise ScenarioError(f"must be a time from 0 to {MAX_NS / 1e3:.3g} µs (got {v})", "kvviz run", flag)
    if args.from_us is not None and args.to_us is not None and args.to_us <= args.from_us:
        raise ScenarioError(f"--to-us ({args.to_us}) must be after --from-us ({args.from_us})", "kvviz run", "--to-us")
