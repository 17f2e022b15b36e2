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
