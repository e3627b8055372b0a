"""Library ops: recorded lazily, run between kernels as one call to NumPy's routine (being
written)."""
from __future__ import annotations

NAMES: tuple[str, ...] = ()
