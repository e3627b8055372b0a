"""block, put, put_along_axis, choose, piecewise (being written)."""
from __future__ import annotations

NAMES: tuple[str, ...] = ()
METHODS: dict = {}
