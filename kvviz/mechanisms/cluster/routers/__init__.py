"""Routers, one file each, registered by name: which instance prefills an arriving request.
The interface and the registry: base.py; what a router may look at: the cluster's view
(../view.py). Adding one: a file here with `@register("name")`, and one import line below.
"""
from __future__ import annotations

from .base import ROUTERS, Decision, Router, RouterRefused, argmin, descriptions, make, names, register

__all__ = ["ROUTERS", "Decision", "Router", "RouterRefused", "argmin", "descriptions", "make", "names",
           "register"]

# Importing a router's file registers it (this order = the order in schemas and messages).
# isort: off
from . import random  # noqa: E402,F401
from . import round_robin  # noqa: E402,F401
from . import least_loaded  # noqa: E402,F401
from . import prefix_affinity  # noqa: E402,F401
from . import global_cache_aware  # noqa: E402,F401
from . import precise_prefix  # noqa: E402,F401
from . import approximate_prefix  # noqa: E402,F401
# isort: on
