"""Views that read a finished Result: occupancy grid, counters, hit-rate ladder, policy
comparison, RoPE bound.

Each is a QWidget with `set_result(result)`; none simulates or reaches into a mechanism.
"""
from .counters import CountersView
from .ladder import LadderView
from .occupancy import OccupancyView
from .policies import PoliciesView
from .rope_bound import RopeBoundView

__all__ = ["CountersView", "LadderView", "OccupancyView", "PoliciesView", "RopeBoundView"]
