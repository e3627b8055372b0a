"""Codegen, kernel cache and launch for the `cpu` (numba.njit) and `cuda` (numba.cuda) backends."""
from __future__ import annotations

import functools

from ir import Buffer
from .executor import Program, lower, run
from .compiler import Kernel
from .threads import snapshot


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
        from . import backends
        buf.host = backends.get("cuda").to_host(buf.value)
    return buf.host


__all__ = ["Program", "lower", "run", "Kernel", "default_backend", "to_host", "snapshot"]
