"""Where a CSV trace's fields are (`CsvLayout`: the CLI's --columns, --delimiter and --header,
the app's "CSV fields"), apart from the reader (kvviz.requests.csv_format) so the CLI's parser
knows its choices without importing numpy."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ScenarioError

COLUMNS = ("time", "id", "size")


@dataclass(frozen=True)
class CsvLayout:
    """Where a CSV's fields are. By default a header names time,id,size. With `id` set, fields go by
    1-based number, as libCacheSim's CSV reader takes them (cachesim -t "obj-id-col: 2, ..."):
    without a time field a request's time is its index, without a size field it is 1 byte, as
    libCacheSim reads such a trace."""
    id: int | None = None
    time: int | None = None
    size: int | None = None
    delimiter: str | None = None  # None: told from the first line (sniff_delimiter)
    header: str = "auto"  # yes | no | auto: the first line is a header if its time or size is no number
    source: str = "--columns"  # where the field numbers are given, for messages

    @property
    def says_csv(self) -> bool:
        """Anything but the defaults: the file is a CSV, whatever its content suggests."""
        return self.id is not None or self.delimiter is not None or self.header != "auto"


HEADER_CHOICES = ("auto", "yes", "no")
_DELIMITER_NAMES = {"\\t": "\t", "tab": "\t", "space": " ", "comma": ",", "semicolon": ";", "pipe": "|"}


def parse_layout(columns: str | None = None, delimiter: str | None = None, header: str | None = None,
                 source: str = "--columns") -> CsvLayout:
    """The CLI's --columns time=1,id=2,size=3 / --delimiter / --header (the app's "CSV fields")."""
    sep = None if delimiter is None else _DELIMITER_NAMES.get(delimiter.lower(), delimiter)
    if sep is not None and (len(sep) != 1 or sep in "\r\n\"" or not sep.isprintable() and sep != "\t"):
        raise ScenarioError(f"one character (or tab, space, comma, semicolon, pipe), not {delimiter!r}", "--delimiter")
    if header is not None and header not in HEADER_CHOICES:
        raise ScenarioError(f"one of {', '.join(HEADER_CHOICES)}, not {header!r}", "--header")
    fields: dict[str, int] = {}
    for part in (columns or "").split(","):
        if not part.strip() and columns is None:
            continue
        name, eq, number = part.partition("=")
        name = name.strip().lower()
        if name not in COLUMNS or not eq or not number.strip().isdigit() or int(number) < 1:
            raise ScenarioError(f"expected NAME=FIELD with NAME one of time, id, size and FIELD a number from 1 "
                                f"(got {part.strip()!r})", source)
        if name in fields:
            raise ScenarioError(f"{name} is given twice", source)
        fields[name] = int(number)
    if fields and "id" not in fields:
        raise ScenarioError("name the id field (id=N); time and size may be left out", source)
    if len(set(fields.values())) < len(fields):
        raise ScenarioError("two names share one field", source)
    if not fields and header == "no":
        raise ScenarioError(f"without a header, say where the fields are with {source} (e.g. id=2,size=3)", "--header")
    return CsvLayout(fields.get("id"), fields.get("time"), fields.get("size"), sep, header or "auto", source)
