"""einsum (being written)."""
from __future__ import annotations

NAMES: tuple[str, ...] = ()
METHODS: dict = {}
