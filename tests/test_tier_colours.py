"""One colour per tier, everywhere (issue 33, item 5): the Timeline's lanes of a tier, the Tiers
bars, the Counters' tier occupancy lines, the Policies keys, the Occupancy's Tier field and the
exported SVG timeline all give a tier the colour of kvviz.palette (resources/palette.toml [tiers])."""
from __future__ import annotations

import re

import pytest

from kvviz.palette import TIER_KEYS, tier_color, tier_key

from .test_tiers_tab import small  # noqa: F401  (the fixture: a small three-tier prefix_cache run)


def test_every_name_of_a_tier_gets_its_one_colour():
    assert {t: tier_key(t) for t in ("HBM", "host DRAM", "DRAM", "CXL", "RDMA", "SSD", "flash",
                                     "Flash (tier 3)", "dram occupancy")} == {
        "HBM": "hbm", "host DRAM": "dram", "DRAM": "dram", "CXL": "cxl", "RDMA": "remote", "SSD": "ssd",
        "flash": "ssd", "Flash (tier 3)": "ssd", "dram occupancy": "dram"}
    assert all(tier_key(n) is None for n in ("GPU", "PCIe", "links", "requests", "CPU"))
    # a cluster's per-instance counters and lanes name the instance first
    assert [tier_key(n) for n in ("instance 3 HBM cache", "instance 12 DRAM cache", "instance 0 GPU · prefill",
                                  "instance 1 queue", "instance")] == ["hbm", "dram", None, None, None]
    colours = [tier_color(t) for t in TIER_KEYS]
    assert len(set(colours)) == len(TIER_KEYS) and "#888888" not in colours  # all defined, all distinct


def _hex(colour) -> str:
    return colour.name().lower()


@pytest.mark.gui
def test_a_tier_has_one_colour_in_every_view_and_the_svg(qtbot, small):  # noqa: F811
    import pyqtgraph as pg

    from app.views import policies
    from app.views.counters import CountersView
    from app.views.tier_bars import TierBarsView
    from app.views.timeline import TimelineView
    from kvviz.export.svg import timeline_svg
    _, result = small
    tr = result.trace
    tiers = ["hbm", "dram", "ssd"]
    want = {t: tier_color(t).lower() for t in tiers}
    seen: dict[str, dict[str, str]] = {}

    bars = TierBarsView()
    qtbot.addWidget(bars)
    bars.set_result(result)
    items = [it for it in bars.pi.items if isinstance(it, pg.BarGraphItem)]
    seen["tiers"] = {t: _hex(pg.mkBrush(it.opts["brush"]).color()) for t, it in zip(bars.tiers, items)}

    tl = TimelineView()
    qtbot.addWidget(tl)
    tl.set_result(result)
    groups = tr.lanes["group"].tolist()
    regions = [it for it in tl.plot.getPlotItem().items if isinstance(it, pg.LinearRegionItem) and it.orientation == "horizontal"]
    seen["timeline"] = {groups[round(sum(r.getRegion()) / 2)]: _hex(r.brush.color()) for r in regions}
    assert {tier_key(groups[tr.lane_index(n)]): c.lower() for n, c in tl.lane_tier_colours.items()} == want

    counters = CountersView()
    qtbot.addWidget(counters)
    counters.set_result(result)
    seen["counters"] = {t: _hex(counters.curves[f"{t} occupancy"].opts["pen"].color()) for t in tiers}
    assert {t: counters.colours[f"{t} occupancy"].lower() for t in tiers} == want

    svg = timeline_svg(result)
    seen["svg"] = {m[0]: m[1].lower() for m in re.findall(r'data-tier="(\w+)"[^>]*? fill="(#[0-9A-Fa-f]{6})"', svg)}
    seen["policies"] = {"hbm": policies.HBM_COLOUR.lower(), "dram": policies.DRAM_COLOUR.lower(),
                        "ssd": policies.SSD_COLOUR.lower()}

    from app.views.occupancy import OccupancyView
    occ = OccupancyView()  # its Tier field: each tier's swatch
    qtbot.addWidget(occ)
    occ.set_result(result)
    box = occ.tier_box
    seen["occupancy"] = {box.itemData(i): box.itemIcon(i).pixmap(12, 12).toImage().pixelColor(6, 6).name()
                         for i in range(box.count())}

    for view, colours in seen.items():
        assert colours == want, view


def test_perfetto_names_a_tier_as_the_palette_does():
    from kvviz.palette import tier_label
    assert [tier_label(n) for n in ("HBM", "host DRAM", "DRAM", "flash", "RDMA", "GPU")] == [
        "HBM", "DRAM (host DRAM)", "DRAM", "SSD (flash)", "remote (RDMA)", "GPU"]


@pytest.mark.gui
def test_the_ladder_draws_each_tier_in_its_palette_colour(qtbot, bundled):
    import pyqtgraph as pg

    from app.views.ladder import LadderView
    view = LadderView()
    qtbot.addWidget(view)
    view.set_result(bundled["ladder_simulated"])
    bars = {t: _hex(pg.mkBrush(view.lat_bars[t].opts["brush"]).color()) for t in ("hbm", "cxl", "flash")}
    assert bars == {t: tier_color(t).lower() for t in ("hbm", "cxl", "flash")}
    assert tier_color("flash") == tier_color("ssd")  # the ladder's flash is the SSD tier
    assert tier_color("hbm") in view.legend.text() and tier_color("flash") in view.legend.text()


# --- colour-blind safety of the tier colours ------------------------------------------------
# Machado, Oliveira & Fernandes (2009), "A physiologically-based model for simulation of color
# vision deficiency", table of severity-1.0 matrices, applied to linear sRGB.
_CVD = {
    "normal": ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)),
    "deuteranopia": ((0.367322, 0.860646, -0.227968), (0.280085, 0.672501, 0.047413),
                     (-0.011820, 0.042940, 0.968881)),
    "protanopia": ((0.152286, 1.052583, -0.204868), (0.114503, 0.786281, 0.099216),
                   (-0.003882, -0.048116, 1.051998)),
}
_SRGB_TO_XYZ = ((0.4124, 0.3576, 0.1805), (0.2126, 0.7152, 0.0722), (0.0193, 0.1192, 0.9505))

# A tier wears a kind's colour on purpose only here (palette.toml: the Policies view colours
# HBM, DRAM and SSD hits as compute, load and fetch; the marks issue, hit and land share those).
SHARED_ON_PURPOSE = {"hbm": {"compute", "issue"}, "dram": {"load", "hit"}, "ssd": {"fetch", "land"}}
# CIE76 ΔE floors. 2.3 is a just-noticeable difference between large patches side by side; a
# legend swatch or a pale lane band is small and seen apart from the key, where differences
# several times larger are needed (Szafir 2017, "Modeling color difference for visualization
# design"). Two tiers must stay apart by TIER_FLOOR for normal, deuteranope and protanope
# vision alike (the old CXL/remote pair gave 17.9: dram vs remote under deuteranopia); a tier
# and a kind drawn with it by KIND_FLOOR for normal vision and KIND_FLOOR_CVD under either
# simulation (several kinds are one hue family apart, so the simulated floor is lower).
TIER_FLOOR, KIND_FLOOR, KIND_FLOOR_CVD = 25.0, 20.0, 10.0


def _lab(colour: str, vision: str) -> tuple[float, float, float]:
    srgb = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in srgb]
    seen = [min(max(sum(m * c for m, c in zip(row, lin)), 0.0), 1.0) for row in _CVD[vision]]
    xyz = [sum(m * c for m, c in zip(row, seen)) / sum(row) for row in _SRGB_TO_XYZ]  # D65 white = 1
    f = [t ** (1 / 3) if t > (6 / 29) ** 3 else t / (3 * (6 / 29) ** 2) + 4 / 29 for t in xyz]
    return (116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2]))


def _delta_e(a: str, b: str, vision: str) -> float:
    return sum((x - y) ** 2 for x, y in zip(_lab(a, vision), _lab(b, vision))) ** 0.5


def test_the_simulation_matches_known_values():
    # white stays white; an orange and an olive green, far apart for normal vision, nearly
    # meet for a deuteranope or protanope (the case the simulation exists for), while
    # Okabe-Ito's vermillion and bluish green, chosen to survive it, stay apart
    assert _lab("#FFFFFF", "deuteranopia") == pytest.approx((100.0, 0.0, 0.0), abs=0.5)
    assert _lab("#808080", "normal")[0] == pytest.approx(53.6, abs=0.2)  # sRGB grey 128: L* 53.6
    for vision in ("deuteranopia", "protanopia"):
        assert _delta_e("#CC6600", "#669900", "normal") > 4 * _delta_e("#CC6600", "#669900", vision)
        assert _delta_e("#D55E00", "#009E73", vision) > 30


def test_a_tier_wears_a_kind_colour_only_where_the_palette_means_it():
    from kvviz.palette import all_instant_colors, all_span_colors
    kinds = {**all_span_colors(), **all_instant_colors()}
    shared = {(t, k) for t in TIER_KEYS for k, c in kinds.items() if c.lower() == tier_color(t).lower()}
    assert shared == {(t, k) for t, ks in SHARED_ON_PURPOSE.items() for k in ks}


@pytest.mark.parametrize("vision", sorted(_CVD))
def test_every_two_tiers_stay_apart_under_colour_blindness(vision):
    for i, a in enumerate(TIER_KEYS):
        for b in TIER_KEYS[i + 1:]:
            assert _delta_e(tier_color(a), tier_color(b), vision) >= TIER_FLOOR, (a, b, vision)


def test_cxl_and_remote_stay_apart_from_every_kind():
    # the two tiers that wear no kind's colour; the three that do are their kind by design
    from kvviz.palette import all_instant_colors, all_span_colors
    kinds = {**all_span_colors(), **all_instant_colors()}
    for t in ("cxl", "remote"):
        for k, c in kinds.items():
            assert _delta_e(tier_color(t), c, "normal") >= KIND_FLOOR, (t, k)
            for vision in ("deuteranopia", "protanopia"):
                assert _delta_e(tier_color(t), c, vision) >= KIND_FLOOR_CVD, (t, k, vision)


def test_tier_colours_print_light_enough_and_read_on_white():
    # a tier is a pale band and a bar fill (too dark prints as a black block) and a bold
    # group name on white (too light cannot be read): L* within 40..75 (HBM 46, SSD 71)
    for t in TIER_KEYS:
        assert 40.0 <= _lab(tier_color(t), "normal")[0] <= 75.0, t


@pytest.mark.gui
def test_a_counter_of_no_tier_never_wears_a_tier_colour(qtbot, bundled):
    # Engram's "staging rows" (third counter) took DRAM's green beside two CXL lines
    from app.views.counters import CountersView
    view = CountersView()
    qtbot.addWidget(view)
    view.set_result(bundled["engram_qwen3_32b_cxl"])
    tiers = {tier_color(t).lower() for t in TIER_KEYS}
    others = {n: c.lower() for n, c in view.colours.items() if tier_key(n) is None}
    assert "staging rows" in others and not set(others.values()) & tiers
    assert {c.lower() for n, c in view.colours.items() if tier_key(n)} == {tier_color("cxl").lower()}


def test_line_colours_stay_apart_from_every_tier():
    from app.views._common import LINE_COLOURS  # the Counters' colours for lines of no tier
    for line in LINE_COLOURS:
        for t in TIER_KEYS:
            assert _delta_e(line, tier_color(t), "normal") >= KIND_FLOOR, (line, t)
            for vision in ("deuteranopia", "protanopia"):
                assert _delta_e(line, tier_color(t), vision) >= KIND_FLOOR_CVD, (line, t, vision)
