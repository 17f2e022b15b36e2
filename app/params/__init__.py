"""The parameter panel: a form generated from a scenario model's fields (see panel.py)."""
from .panel import ParameterPanel
from .values import DEBOUNCE_MS, fmt_number, parse_path, path_str

__all__ = ["ParameterPanel", "DEBOUNCE_MS", "fmt_number", "parse_path", "path_str"]
