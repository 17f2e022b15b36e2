"""The widgets the tabs (app/tabs/) wrap, and the Metrics dock: timeline, occupancy grid,
counters, hit-rate ladder, policy comparison, RoPE bound, compare, sweep, replay, metrics.

Each is a QWidget; those drawn from a run read a finished Result (`set_result(result)`) and none
simulates or reaches into a mechanism. Sweep and replay run their own jobs when asked.
"""
from .counters import CountersView
from .ladder import LadderView
from .occupancy import OccupancyView
from .policies import PoliciesView
from .rope_bound import RopeBoundView

__all__ = ["CountersView", "LadderView", "OccupancyView", "PoliciesView", "RopeBoundView"]
