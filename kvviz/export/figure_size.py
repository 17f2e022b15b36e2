"""A figure's physical size and resolution: one definition for `kvviz run --width/--height/--dpi`
and the app's File → Export → Figure Size and Resolution…

Lengths are CSS px at 96 per inch (the SVG's layout unit), given as a bare number of px (as
`--width 960` always was) or with a unit: `6.5in`, `165mm`, `16.5cm`, `468pt`. A PNG has
inches × dpi pixels; a PDF keeps the inches. The limits are the CLI's: a figure beyond them is
a typo, and its raster no image."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Self

PX_PER_IN = 96
UNITS = {"px": 1.0, "in": PX_PER_IN, "cm": PX_PER_IN / 2.54, "mm": PX_PER_IN / 25.4, "pt": PX_PER_IN / 72}
DEFAULT_WIDTH_PX = 960  # 10 in
DEFAULT_DPI = 300  # print resolution
MIN_WIDTH_PX, MIN_HEIGHT_PX = 200, 150
MAX_FIGURE_PX = 20_000  # about 5 m at 96 px per inch
MAX_RASTER_PX = 32_000  # a PNG's width in pixels (Qt's images stop near 32,767)
MIN_DPI, MAX_DPI = 1, 2400


def parse_length(text: str | float) -> float:
    """`text` as CSS px; ValueError naming what is wrong. The number is read as a scenario's
    (kvviz.numbers: 1_000 and 1e3 alike, as --dpi already was); the unit in any case."""
    from ..numbers import split_unit
    got = split_unit(str(text), UNITS)
    if got is None or (got[1] and got[1].lower() not in UNITS):  # split_unit lets % through
        raise ValueError(f"expected a length such as 960 (px), 6.5in, 165mm, 16.5cm or 468pt (got {text!r})")
    try:
        px = float(got[0]) * UNITS[got[1].lower() or "px"]
    except OverflowError:  # an integer of hundreds of digits
        px = math.inf
    if not math.isfinite(px):
        raise ValueError(f"expected a finite length (got {text!r})")
    return px


def describe_px(px: float) -> str:
    """A length for people: inches, with the px it stands for."""
    return f"{px / PX_PER_IN:.4g} in ({px:,.0f} px)"


def _dpi(text: str | int) -> int:
    """A whole number, read as a scenario's integer field is (a TOML integer: 300, 0x12C)."""
    from ..numbers import toml_number
    value = text if isinstance(text, int) else toml_number(str(text).strip())
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(text)
    return value


@dataclass(frozen=True)
class FigureSize:
    """Width and height in CSS px (height None: the figure's own, fitted to its content), and
    the dots per inch of a raster."""
    width_px: float = DEFAULT_WIDTH_PX
    height_px: float | None = None
    dpi: int = DEFAULT_DPI

    @classmethod
    def parse(cls, width: str | None = None, height: str | None = None, dpi: str | int | None = None) -> Self:
        """From text as typed at the CLI or in the app (blank: the default): ValueError(field,
        message) at the first wrong one, in the order width, height, dpi."""
        size = cls()
        for field, text in (("width", width), ("height", height), ("dpi", dpi)):
            if text is None or not str(text).strip():
                continue
            try:
                if field == "dpi":
                    size = replace(size, dpi=_dpi(text))
                elif field == "width":
                    size = replace(size, width_px=parse_length(text))
                else:
                    size = replace(size, height_px=parse_length(text))
            except ValueError as e:
                message = f"expected a whole number of dots per inch (got {text!r})" if field == "dpi" else str(e)
                raise ValueError(field, message) from None
            if (problem := size.problem(raster=False)) and problem[0] == field:
                raise ValueError(*problem)
        return size

    @property
    def width_in(self) -> float:
        return self.width_px / PX_PER_IN

    def raster_px(self, width_px: float | None = None, height_px: float | None = None) -> tuple[int, int]:
        """The pixels of a PNG of a figure this wide and high (CSS px): inches × dpi."""
        w = self.width_px if width_px is None else width_px
        h = (self.height_px or w) if height_px is None else height_px
        return round(w / PX_PER_IN * self.dpi), round(h / PX_PER_IN * self.dpi)

    def problem(self, raster: bool) -> tuple[str, str] | None:
        """(field, message) of the first value out of range, or None; `raster`: a PNG will be
        drawn, so its pixels are checked too."""
        if not MIN_WIDTH_PX <= self.width_px <= MAX_FIGURE_PX:
            return "width", (f"a figure's width must be {describe_px(MIN_WIDTH_PX)} to {describe_px(MAX_FIGURE_PX)} "
                             f"(got {describe_px(self.width_px)})")
        if self.height_px is not None and not MIN_HEIGHT_PX <= self.height_px <= MAX_FIGURE_PX:
            return "height", (f"a figure's height must be {describe_px(MIN_HEIGHT_PX)} to "
                              f"{describe_px(MAX_FIGURE_PX)} (got {describe_px(self.height_px)})")
        if not MIN_DPI <= self.dpi <= MAX_DPI:
            return "dpi", f"dpi must be {MIN_DPI}..{MAX_DPI} (got {self.dpi})"
        if raster and (px := self.raster_px()[0]) > MAX_RASTER_PX:
            return "dpi", (f"a PNG {self.width_in:.4g} in wide at {self.dpi} dpi would be {px:,} pixels wide "
                           f"(at most {MAX_RASTER_PX:,}); lower the width or the dpi")
        return None
