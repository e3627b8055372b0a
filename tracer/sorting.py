"""Sorting, searching, scans, set functions and order statistics (being written)."""
from __future__ import annotations

NAMES: tuple[str, ...] = ()
METHODS: dict = {}
