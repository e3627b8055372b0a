"""The backend registry: `get(name)` gives the one instance of a backend, made at first use."""
from __future__ import annotations

from .base import Backend
from .cpu.backend import CpuBackend
from .cuda.backend import CudaBackend

_CLASSES: dict[str, type[Backend]] = {"cpu": CpuBackend, "cuda": CudaBackend}
_BACKENDS: dict[str, Backend] = {}


def get(name: str) -> Backend:
    if name not in _BACKENDS:
        _BACKENDS[name] = _CLASSES[name]()  # (the cuda backend loads numba.cuda here)
    return _BACKENDS[name]
