"""The window's tabs, in order: one class per tab (see base.Tab), one line each below.
The timeline comes first: it is the default tab, and the views that follow its zoom link to it."""
from .bars import BarsTab
from .base import Tab, TabContext
from .claims import ClaimsTab
from .cluster import ClusterTab
from .compare import CompareTab
from .counters import CountersTab
from .occupancy import OccupancyTab
from .operating_point import OperatingPointTab
from .plan import PlanTab
from .replay import ReplayTab
from .rope_bound import RopeBoundTab
from .sweep import SweepTab
from .tiers import TiersTab
from .timeline import TimelineTab

TABS: list[type[Tab]] = [
    TimelineTab,
    OccupancyTab,
    CountersTab,
    BarsTab,
    TiersTab,
    RopeBoundTab,
    CompareTab,
    SweepTab,
    ReplayTab,
    ClaimsTab,
    OperatingPointTab,
    PlanTab,
    ClusterTab,
]


def view_names() -> list[str]:
    """Every `kvviz-gui --view` name: each tab's name and its aliases."""
    return [n for t in TABS for n in (t.name, *t.aliases)]


__all__ = ["TABS", "Tab", "TabContext", "view_names"]
