"""Codegen, kernel cache and launch for the `cpu` (numba.njit) and `cuda` (numba.cuda) backends."""
from __future__ import annotations

import functools
import os

# Numba's OpenMP workers spin about 300000 rounds after each parallel kernel before they sleep;
# on a small machine they then starve OpenBLAS's threads in the matmul that follows, and the
# reverse (min-distance 4000^2: 43 -> 33 ms median, far fewer 4 ms stalls). Read by libgomp
# when Numba first loads it; a value the user set is kept.
os.environ.setdefault("GOMP_SPINCOUNT", "10000")

from tracer.ir.node import Buffer  # noqa: E402
from . import backends  # noqa: E402
from .executor import Program, lower, run  # noqa: E402
from .compiler import Kernel  # noqa: E402
from .threads import snapshot  # noqa: E402


@functools.lru_cache(maxsize=None)
def _cuda_available() -> bool:
    try:
        from numba import cuda
        return bool(cuda.is_available())
    except Exception:  # noqa: BLE001 - no driver, no toolkit: no GPU
        return False


def default_backend(requested: str = "") -> str:
    if requested:
        if requested not in ("cpu", "cuda"):
            raise ValueError(f"TRACER_BACKEND must be cpu or cuda, not {requested!r}")
        return requested
    return "cuda" if _cuda_available() else "cpu"


def to_host(buf: Buffer):
    """The host (NumPy) value of a buffer, copied from the device once and kept."""
    if buf.host is None:
        buf.host = backends.get("cuda").to_host(buf.value)
    return buf.host


__all__ = ["Program", "lower", "run", "Kernel", "default_backend", "to_host", "snapshot"]
