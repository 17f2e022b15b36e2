"""The compiled engines' source hash (kvviz/serving/native/sources.py: written once for every
compiled module; setup.py runs that file)."""
from __future__ import annotations

from ....serving.native.sources import SUFFIXES, source_files, source_hash

__all__ = ["SUFFIXES", "source_files", "source_hash"]
